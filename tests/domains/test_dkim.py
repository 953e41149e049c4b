"""DKIM signatures made with a domain's stored key verify with dkimpy against the record the
API tells the owner to publish, for the messages the sending engine builds and for awkward
ones (long folded headers, RFC 2047 subjects, bare LF or CR line ends, trailing blank lines,
whitespace runs, an empty body); altering a signed part, or prepending a second From, breaks
them. The loaded key is kept per domain and replaced when the domain's key changes."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime

import dkim as dkimpy
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from sqlalchemy import select

from mailroom.domains import dkim, keys
from mailroom.models import SendingDomain
from mailroom.sending.mime import Message, build, encode_header
from tests.domains.conftest import add_domain, record


@pytest.fixture
async def signed_domain(client, ws, db, settings):
    """(the domain as the API shows it, its signer loaded from the stored row)."""
    domain = await add_domain(client, ws, "news.shop.example")
    async with db.session() as session:
        row = await session.scalar(select(SendingDomain).where(SendingDomain.id == domain["id"]))
    return domain, dkim.signer_for(row, settings.secret_key), row


def dns_answer(domain):
    """dkimpy's DNS function: the TXT value the API lists, asked for at the host it lists."""
    published = record(domain, "dkim")

    def lookup(name, timeout=5):
        assert name.decode().rstrip(".") == published["host"]
        return published["value"].encode()

    return lookup


def verifies(message: bytes, domain) -> bool:
    return bool(dkimpy.verify(message, dnsfunc=dns_answer(domain)))


def tags_of(signed: bytes) -> dict[str, str]:
    field = signed.split(b"\r\n\r\n", 1)[0].decode()
    value = field.split("DKIM-Signature:", 1)[1].split("\r\n", 1)[0]
    rest = field.split("DKIM-Signature:", 1)[1]
    lines = [value] + [ln for ln in rest.split("\r\n")[1:] if ln[:1] in (" ", "\t")]
    joined = "".join(line.strip() for line in lines)
    return dict(p.strip().split("=", 1) for p in joined.split(";") if p.strip())


def engine_message(**overrides) -> bytes:
    fields = dict(
        from_email="hello@news.shop.example",
        from_name="Shop Crew",
        to="jane@example.org",
        subject="Spring sale: 20% off",
        html="<html><body><p>Hello Jane,</p>\n<p>Our  spring\tsale starts now.</p></body></html>",
        text="Hello Jane,\n\nOur spring sale starts now.\n",
        message_id="01a2-b3c4@news.shop.example",
        date=datetime(2026, 11, 23, 9, 30, tzinfo=UTC),
        list_unsubscribe=("https://mail.shop.example/u/abc", "mailto:u+abc@news.shop.example"),
    )
    fields.update(overrides)
    return build(Message(**fields))


async def test_an_engine_message_verifies_against_the_published_record(signed_domain):
    domain, signer, _row = signed_domain
    signed = signer.sign(engine_message(), timestamp=1795000000)
    assert signed.startswith(b"DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed;")
    assert verifies(signed, domain)
    tags = tags_of(signed)
    assert tags["d"] == "news.shop.example"
    assert tags["s"] == domain["dkim_selector"]
    assert tags["t"] == "1795000000"
    assert tags["h"].split(":") == [
        "from", "from", "subject", "subject", "date", "date",
        "message-id", "message-id", "to", "to", "mime-version", "mime-version",
        "content-type", "content-type", "list-unsubscribe", "list-unsubscribe", "list-unsubscribe-post", "list-unsubscribe-post",
    ]  # fmt: skip
    body = signed.split(b"\r\n\r\n", 1)[1]
    canonical = dkim.canonical_body(body)
    assert tags["bh"] == base64.b64encode(hashlib.sha256(canonical).digest()).decode()


AWKWARD = {
    "long-folded-headers": (
        b"From: Shop <hello@news.shop.example>\r\n"
        b"To: a@example.org,\r\n  b@example.org,\r\n\tc@example.org\r\n"
        b"Subject: " + b"word " * 60 + b"\r\n    and a continuation line\r\n"
        b"Date: Mon, 23 Nov 2026 09:30:00 +0000\r\n"
        b"Message-ID: <x@news.shop.example>\r\n"
        b"\r\nBody\r\n"
    ),
    "rfc2047-subject": (
        b"From: hello@news.shop.example\r\n"
        b"Subject: " + encode_header("Grüße aus Köln — 春のセール 🎉 " * 4).encode() + b"\r\n"
        b"\r\nHallo\r\n"
    ),
    "bare-lf": b"From: hello@news.shop.example\nSubject: lf\n\nline one\nline two\n",
    "bare-cr": b"From: hello@news.shop.example\rSubject: cr\r\rline\r",
    "trailing-blank-lines": b"From: hello@news.shop.example\r\n\r\nbody\r\n\r\n\r\n \r\n\t\r\n",
    "whitespace-runs": b"From:   hello@news.shop.example  \r\nSUBJECT:\t x  y \r\n\r\na \t b  \r\n  c\r\n",
    "no-final-crlf": b"From: hello@news.shop.example\r\n\r\nlast line  ",
    "empty-body": b"From: hello@news.shop.example\r\nSubject: empty\r\n\r\n",
    "headers-only": b"From: hello@news.shop.example\r\nSubject: nothing more\r\n",
    "duplicate-to": b"From: hello@news.shop.example\r\nTo: a@x.org\r\nTo: b@x.org\r\n\r\nx\r\n",
    "raw-utf8-header": "From: hello@news.shop.example\r\nSubject: Grüße\r\n\r\nß\r\n".encode(),
}


@pytest.mark.parametrize("name", sorted(AWKWARD))
async def test_awkward_messages_verify(signed_domain, name):
    domain, signer, _row = signed_domain
    signed = signer.sign(AWKWARD[name])
    assert verifies(signed, domain), signed[:600]


async def test_relaxed_changes_keep_and_real_changes_break_the_signature(signed_domain):
    domain, signer, _row = signed_domain
    signed = signer.sign(engine_message())
    head, body = signed.split(b"\r\n\r\n", 1)
    assert verifies(signed, domain)
    # What relaxed canonicalisation ignores, and a header added below that is not signed.
    assert verifies(head + b"\r\nX-Relay: added later\r\n\r\n" + body + b"\r\n\r\n", domain)
    assert verifies(signed.replace(b"Subject: Spring", b"Subject:   Spring"), domain)
    # What it does not.
    assert not verifies(signed.replace(b"Hello Jane", b"Hello Joan"), domain)
    assert not verifies(signed.replace(b"Spring sale: 20%", b"Spring sale: 90%"), domain)
    # A second From, prepended or appended, is caught by the over-signed From.
    assert not verifies(b"From: ceo@evil.example\r\n" + signed, domain)
    assert not verifies(head + b"\r\nFrom: ceo@evil.example\r\n\r\n" + body, domain)
    # So are a second MIME-Version or Content-Type, above or below ours: a reader could
    # otherwise be shown another body than the signed one.
    other_type = b'Content-Type: text/html; charset="utf-8"\r\n'
    assert not verifies(other_type + signed, domain)
    assert not verifies(head + b"\r\n" + other_type + b"\r\n" + body, domain)
    assert not verifies(b"MIME-Version: 1.0\r\n" + signed, domain)
    assert not verifies(head + b"\r\nMIME-Version: 1.0\r\n\r\n" + body, domain)
    # Another domain's key does not verify it.
    other_pair = keys.generate()
    other_answer = f"v=DKIM1; k=rsa; p={other_pair.public_b64}".encode()
    assert not dkimpy.verify(signed, dnsfunc=lambda name, timeout=5: other_answer)


async def test_a_message_without_from_is_refused(signed_domain):
    _domain, signer, _row = signed_domain
    with pytest.raises(ValueError, match="needs a From header"):
        signer.sign(b"Subject: who?\r\n\r\nbody\r\n")


async def test_the_loaded_key_is_kept_per_domain_and_replaced_with_the_key(signed_domain, settings):
    _domain, signer, row = signed_domain
    assert dkim.signer_for(row, settings.secret_key) is signer
    # A new key (a new selector and sealed key on the row) gives a new signer at once.
    pair = keys.generate()

    class Rekeyed:
        id = row.id
        domain = row.domain
        dkim_selector = "mr202612beef"
        dkim_private_key = keys.seal(settings.secret_key, row.id, pair.private_der)

    fresh = dkim.signer_for(Rekeyed, settings.secret_key)
    assert fresh is not signer and fresh.selector == "mr202612beef"
    answer = f"v=DKIM1; k=rsa; p={pair.public_b64}".encode()
    assert dkimpy.verify(fresh.sign(engine_message()), dnsfunc=lambda n, timeout=5: answer)
    dkim.forget(row.id)
    assert dkim.signer_for(row, settings.secret_key) is not fresh


async def test_deleting_a_domain_forgets_its_loaded_key(client, ws, signed_domain, settings):
    domain, signer, row = signed_domain
    response = await client.delete(f"/api/v1/domains/{domain['id']}", headers=ws.headers)
    assert response.status_code == 200
    assert dkim.signer_for(row, settings.secret_key) is not signer


async def test_a_key_sealed_under_another_secret_is_unavailable(signed_domain):
    _domain, _signer, row = signed_domain
    dkim.forget(row.id)
    with pytest.raises(keys.KeyUnavailable):
        dkim.signer_for(row, "not-the-installation-secret")


# Header text without control characters but tab: RFC 6376 counts only space and tab as
# whitespace, dkimpy (and OpenDKIM) also \v and \f, so a header carrying those verifies
# differently by verifier; the message builder must not emit them (they have no business in a
# header).
_header_text = st.text(
    st.characters(
        codec="utf-8",
        exclude_categories=("Cc", "Cs"),
        include_characters="\t",
    ),
    min_size=0,
    max_size=120,
)
_body_line = st.text(
    st.characters(codec="utf-8", exclude_characters="\r\n\x00"), min_size=0, max_size=200
)


@hypothesis_settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    subject=_header_text,
    lines=st.lists(_body_line, max_size=30),
    ending=st.sampled_from(["\r\n", "\n", "\r"]),
    trailing=st.sampled_from(["", "\r\n", "\r\n\r\n", " \t\r\n"]),
)
def test_any_message_verifies(signed_domain_sync, subject, lines, ending, trailing):
    domain, signer = signed_domain_sync
    message = (
        f"From: hello@news.shop.example{ending}Subject: {subject}{ending}{ending}"
        + ending.join(lines)
        + trailing
    ).encode()
    assert verifies(signer.sign(message), domain)


@pytest.fixture
def signed_domain_sync():
    """A signer on a key made here (hypothesis runs its examples outside the event loop)."""
    pair = keys.generate()
    signer = dkim.Signer("news.shop.example", "mrprop", keys.load_private(pair.private_der))
    domain = {
        "records": [
            {
                "purpose": "dkim",
                "host": "mrprop._domainkey.news.shop.example",
                "value": f"v=DKIM1; k=rsa; p={pair.public_b64}",
            }
        ]
    }
    return domain, signer
