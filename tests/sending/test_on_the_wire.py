"""What the engine writes on the wire, read from a real SMTP conversation (aiosmtpd on
127.0.0.1): addresses in their IDNA form in the envelope and the headers, a non-ASCII local
part only with SMTPUTF8 (else that recipient fails with the reason on its row, the others go),
the EHLO name, the recipient's name in To, Feedback-ID on campaign and automation mail, no
List-Unsubscribe on mail someone asked for, header lines folded, DKIM intact."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from email import policy
from email.parser import BytesParser
from typing import Any

import dkim as dkimpy
import pytest
from sqlalchemy import select

from mailroom.models import SendLog
from tests.automations.helpers import activate, create_contact, make_automation, run_due
from tests.sending.conftest import verified_domain
from tests.sending.helpers import (
    make_campaign,
    make_contacts,
    make_list,
    ok,
    recipients,
    send_campaign,
)
from tests.sending.sink import Sink
from tests.sending.test_engine import dns_for

ANN = "ann@münchen.de"
ANN_WIRE = "ann@xn--mnchen-3ya.de"
JORG = "jörg@münchen.de"
JORG_WIRE = "jörg@xn--mnchen-3ya.de"
NO_SMTPUTF8 = (
    "not sent: {} has a non-ASCII local part, which only a relay offering SMTPUTF8 can take, "
    "and the relay does not offer it"
)


def fields(data: bytes) -> dict[str, str]:
    """Each header field's raw value (folds kept as CRLF), by name; the first of a name."""
    head = data.split(b"\r\n\r\n", 1)[0].decode()
    found: dict[str, str] = {}
    name = ""
    for line in head.split("\r\n"):
        if line[:1] in (" ", "\t"):
            found[name] += "\r\n" + line
            continue
        name, value = line.split(":", 1)
        found.setdefault(name, value.removeprefix(" "))
        if found[name] != value.removeprefix(" "):
            name = f"{name}#2"
            found[name] = value.removeprefix(" ")
    return found


def header_lines(data: bytes) -> list[str]:
    return data.split(b"\r\n\r\n", 1)[0].decode().split("\r\n")


def parsed(data: bytes) -> Any:
    return BytesParser(policy=policy.default).parsebytes(data)


def encoded(text: str) -> str:
    return f"=?utf-8?b?{base64.b64encode(text.encode()).decode()}?="


async def rows(db: Any) -> dict[str, SendLog]:
    async with db.session() as session:
        return {r.email: r for r in (await session.scalars(select(SendLog))).all()}


@pytest.fixture
async def utf8_sink(settings: Any) -> AsyncIterator[Sink]:
    """A relay that offers SMTPUTF8."""
    async with Sink(smtputf8=True) as server:
        settings.smtp_url = server.url
        settings.send_processes = 0
        yield server


async def _campaign_to(client, db, ws, people: list[tuple[str, dict[str, str]]], **overrides):
    domain = await verified_domain(client, db, ws)
    news = await make_list(client, ws)
    for email, names in people:
        await make_contacts(client, ws, [email], news, **names)
    campaign = await make_campaign(client, ws, news, **overrides)
    await send_campaign(client, ws, campaign["id"])
    return domain, campaign


async def test_a_non_ascii_domain_goes_as_idna_in_envelope_and_headers(
    client, db, ws, sink, driver
):
    domain, campaign = await _campaign_to(
        client,
        db,
        ws,
        [(ANN, {"first_name": "Ann", "last_name": "Müller"}), ("bob@mail.example", {})],
    )
    await driver.drain()
    got = {r.recipients[0]: r for r in sink.received}
    assert sorted(got) == [ANN_WIRE, "bob@mail.example"]
    ann = got[ANN_WIRE]
    assert ann.mail_options == []  # no SMTPUTF8 needed: everything is ASCII
    assert ann.data.split(b"\r\n\r\n", 1)[0].isascii()
    assert fields(ann.data)["To"] == f"{encoded('Ann Müller')} <{ANN_WIRE}>"
    assert parsed(ann.data)["To"] == f"Ann Müller <{ANN_WIRE}>"
    assert fields(got["bob@mail.example"].data)["To"] == "bob@mail.example"  # no name known
    assert dkimpy.verify(ann.data, dnsfunc=dns_for(domain))
    # The send log keeps the address as the contact has it.
    shown = {r["email"]: r["status"] for r in await recipients(client, ws, campaign["id"])}
    assert shown == {ANN: "sent", "bob@mail.example": "sent"}


async def test_a_non_ascii_local_part_fails_alone_at_a_relay_without_smtputf8(
    client, db, ws, sink, driver
):
    _domain, campaign = await _campaign_to(
        client, db, ws, [(JORG, {"first_name": "Jörg"}), ("bob@mail.example", {})]
    )
    await driver.drain()
    assert [r.recipients for r in sink.received] == [["bob@mail.example"]]
    stored = await rows(db)
    assert (stored[JORG].status, stored[JORG].error) == ("failed", NO_SMTPUTF8.format(JORG_WIRE))
    assert stored[JORG].sent_at is None
    assert (stored["bob@mail.example"].status, stored["bob@mail.example"].error) == ("sent", None)
    shown = {r["email"]: r["status"] for r in await recipients(client, ws, campaign["id"])}
    assert shown == {JORG: "failed", "bob@mail.example": "sent"}


async def test_a_non_ascii_local_part_goes_with_smtputf8_when_offered(
    client, db, ws, utf8_sink, driver
):
    domain, _campaign = await _campaign_to(
        client, db, ws, [(JORG, {"first_name": "Jörg"}), ("bob@mail.example", {})]
    )
    await driver.drain()
    got = {r.recipients[0]: r for r in utf8_sink.received}
    assert sorted(got) == ["bob@mail.example", JORG_WIRE]
    jorg = got[JORG_WIRE]
    assert "SMTPUTF8" in jorg.mail_options
    assert got["bob@mail.example"].mail_options == []  # only the message that needs it
    # The header is 8-bit UTF-8 (RFC 6532): the local part has no ASCII form.
    assert fields(jorg.data)["To"] == f"{encoded('Jörg')} <{JORG_WIRE}>"
    assert dkimpy.verify(jorg.data, dnsfunc=dns_for(domain))
    stored = await rows(db)
    assert (stored[JORG].status, stored[JORG].error) == ("sent", None)


async def test_the_outbox_writes_what_it_would_send(client, db, ws, settings, driver):
    settings.smtp_url = ""
    _domain, _campaign = await _campaign_to(
        client, db, ws, [(ANN, {"first_name": "Ann"}), (JORG, {})]
    )
    await driver.drain()
    outbox = settings.data_dir / "outbox"
    stored = await rows(db)
    ann = (outbox / f"{stored[ANN].id}.eml").read_bytes()
    jorg = (outbox / f"{stored[JORG].id}.eml").read_bytes()
    assert ann.startswith(b"Return-Path: <bounces+")
    assert fields(ann)["To"] == f'"Ann" <{ANN_WIRE}>'
    assert fields(ann)["Return-Path"].endswith("@shop.example>")
    assert fields(jorg)["To"] == JORG_WIRE  # as an SMTPUTF8 relay would be given it
    assert stored[ANN].status == stored[JORG].status == "sent"


async def test_ehlo_names_the_public_host_or_the_setting(client, db, ws, settings, sink, driver):
    settings.public_url = "https://mail.shop.example/"
    await _campaign_to(client, db, ws, [("ann@mail.example", {})])
    await driver.drain()
    assert [r.helo for r in sink.received] == ["mail.shop.example"]

    await driver.close()  # connections greet once: a new engine for the new name
    settings.smtp_helo = "mx1.shop.example"
    driver.engine = type(driver.engine)(settings)
    news = await make_list(client, ws, "Second")
    await make_contacts(client, ws, ["bob@mail.example"], news)
    campaign = await make_campaign(client, ws, news, name="Second")
    await send_campaign(client, ws, campaign["id"])
    await driver.drain()
    assert [r.helo for r in sink.received] == ["mail.shop.example", "mx1.shop.example"]


async def test_campaign_headers_exactly_folded_and_signed(client, db, ws, sink, driver):
    subject = "Our spring sale starts now: twenty percent off everything in the garden range"
    domain, campaign = await _campaign_to(
        client,
        db,
        ws,
        [("jane@mail.example", {"first_name": "Jane", "last_name": "O'Neil, Jr."})],
        subject=subject,
        reply_to="help@shop.example",
    )
    await driver.drain()
    [mail] = sink.received
    [row] = (await rows(db)).values()
    head = fields(mail.data)
    assert head["From"] == '"Shop" <news@shop.example>'
    assert head["To"] == '"Jane O\'Neil, Jr." <jane@mail.example>'
    assert head["Subject"] == (
        "Our spring sale starts now: twenty percent off everything in the\r\n garden range"
    )
    assert head["Message-ID"] == f"<{row.id}@shop.example>"
    assert head["MIME-Version"] == "1.0"
    assert head["Reply-To"] == "help@shop.example"
    https, mailto = head["List-Unsubscribe"].split(",\r\n ")
    assert https.startswith("<http://testserver/u/") and https.endswith(">")
    assert mailto.startswith("<mailto:unsubscribe+") and mailto.endswith("@shop.example>")
    assert head["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert head["Feedback-ID"] == f"{campaign['id']}:campaign:{ws.workspace_id}:mailroom"
    assert head["Content-Type"] == f'multipart/alternative;\r\n boundary="=_{row.id}"'
    message = parsed(mail.data)
    assert message["Subject"] == subject
    assert message["To"].addresses[0].display_name == "Jane O'Neil, Jr."
    # Every header line fits 78 characters, but a run with no space to fold at; none 998.
    for line in header_lines(mail.data):
        assert len(line) <= 998
        assert len(line) <= 78 or " " not in line.lstrip(" \t").split(": ", 1)[-1], line
    assert dkimpy.verify(mail.data, dnsfunc=dns_for(domain))
    signature = "".join(message["DKIM-Signature"].split()).lower()
    assert "feedback-id:feedback-id" in signature
    assert "mime-version:mime-version:content-type:content-type" in signature
    # A second Content-Type or MIME-Version, added anywhere, breaks the signature.
    head_bytes, body = mail.data.split(b"\r\n\r\n", 1)
    extra = b"Content-Type: text/plain; charset=utf-8"
    for altered in (
        extra + b"\r\n" + mail.data,
        head_bytes + b"\r\n" + extra + b"\r\n\r\n" + body,
        b"MIME-Version: 1.0\r\n" + mail.data,
    ):
        assert not dkimpy.verify(altered, dnsfunc=dns_for(domain))


async def test_transactional_and_system_mail_carry_no_list_unsubscribe(
    client, db, ws, sink, driver
):
    domain = await verified_domain(client, db, ws)
    await ok(
        await client.patch(
            "/api/v1/sending",
            json={"from_email": "hello@shop.example", "from_name": "Shop"},
            headers=ws.headers,
        )
    )
    weekly = (
        await ok(
            await client.post(
                "/api/v1/lists", json={"name": "Weekly", "double_opt_in": True}, headers=ws.headers
            ),
            201,
        )
    )["list"]["id"]
    [jane, _tom] = await make_contacts(
        client, ws, ["jane@mail.example", "tom@mail.example"], first_name="Jane"
    )
    await ok(
        await client.post(
            "/api/v1/send",
            json={"to": "jane@mail.example", "subject": "Your receipt", "text_content": "Thanks"},
            headers=ws.headers,
        ),
        202,
    )
    await ok(
        await client.post(
            f"/api/v1/lists/{weekly}/contacts",
            json={"contact_ids": [_tom], "status": "unconfirmed"},
            headers=ws.headers,
        )
    )
    asked = await client.post(
        f"/api/v1/lists/{weekly}/contacts/{_tom}/confirmation", headers=ws.headers
    )
    assert asked.status_code == 202
    await driver.drain()
    got = {r.recipients[0]: r for r in sink.received}
    receipt, confirmation = got["jane@mail.example"], got["tom@mail.example"]
    for mail in (receipt, confirmation):
        head = fields(mail.data)
        assert "List-Unsubscribe" not in head and "List-Unsubscribe-Post" not in head
        assert "Feedback-ID" not in head
        assert dkimpy.verify(mail.data, dnsfunc=dns_for(domain))
    assert fields(receipt.data)["To"] == '"Jane" <jane@mail.example>'
    assert jane  # the receipt went to the contact named by `to`


async def test_automation_mail_carries_its_feedback_id(client, db, ws, settings, sink, driver):
    domain = await verified_domain(client, db, ws)
    await ok(
        await client.patch(
            "/api/v1/sending",
            json={"from_email": "news@shop.example", "from_name": "Shop"},
            headers=ws.headers,
        )
    )
    template = await ok(
        await client.post(
            "/api/v1/templates",
            json={"name": "Hello", "subject": "Welcome", "html_content": "<p>Hi</p>"},
            headers=ws.headers,
        ),
        201,
    )
    automation = await make_automation(
        client,
        ws,
        trigger={"type": "contact_created"},
        steps=[{"type": "send_email", "template_id": template["template"]["id"]}],
    )
    await activate(client, ws, automation["id"])
    await create_contact(client, ws, "jane@mail.example")
    await run_due(db, settings)
    await driver.drain()
    [mail] = sink.received
    head = fields(mail.data)
    assert head["Feedback-ID"] == f"{automation['id']}:automation:{ws.workspace_id}:mailroom"
    assert head["List-Unsubscribe"].startswith("<http://testserver/u/")
    assert dkimpy.verify(mail.data, dnsfunc=dns_for(domain))


async def test_a_campaign_test_send_goes_idna_and_named(client, db, ws, sink):
    await verified_domain(client, db, ws)
    news = await make_list(client, ws)
    await make_contacts(client, ws, [ANN], news, first_name="Ann")
    campaign = await make_campaign(client, ws, news)
    sent = await client.post(
        f"/api/v1/campaigns/{campaign['id']}/test",
        json={"emails": [ANN, JORG]},
        headers=ws.headers,
    )
    assert (await ok(sent)) == {"sent": 1}
    [mail] = sink.received
    assert mail.recipients == [ANN_WIRE]
    assert fields(mail.data)["To"] == f'"Ann" <{ANN_WIRE}>'
    stored = await rows(db)
    assert (stored[JORG].status, stored[JORG].error) == ("failed", NO_SMTPUTF8.format(JORG_WIRE))
