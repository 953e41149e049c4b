"""Sending domains: adding (a registrable hostname, a fresh DKIM key kept encrypted), the
records to publish, reading, listing, deleting, permissions and workspace isolation."""

from __future__ import annotations

import asyncio
import base64
import json
import re

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from sqlalchemy import select

from mailroom.core.errors import ApiError
from mailroom.domains import keys, service
from mailroom.domains.schemas import DOMAIN_PATTERN, MAX_DOMAIN
from mailroom.models import SendingDomain
from tests.domains.conftest import BOUNCE_HOST, SPF_INCLUDE, add_domain, read_domain, record

DOMAIN_KEYS = {
    "id",
    "domain",
    "status",
    "dkim_selector",
    "records",
    "failure_reason",
    "warmup",
    "verified_at",
    "last_checked_at",
    "created_at",
    "checks",
    "link_host",
}
RECORD_KEYS = {"type", "host", "value", "purpose", "status", "reason"}
UNKNOWN_ID = "00000000-0000-0000-0000-000000000000"


async def stored(db, domain_id):
    async with db.session() as session:
        return await session.scalar(select(SendingDomain).where(SendingDomain.id == domain_id))


def public_key_of(dkim_value: str) -> rsa.RSAPublicKey:
    tags = dict(part.strip().split("=", 1) for part in dkim_value.split(";"))
    key = serialization.load_der_public_key(base64.b64decode(tags["p"]))
    assert isinstance(key, rsa.RSAPublicKey)
    return key


# ---------------------------------------------------------------- adding


async def test_add_answers_the_domain_with_its_records_and_get_reads_it_back(
    client, ws, domain_settings
):
    response = await client.post(
        "/api/v1/domains", json={"domain": "news.acme-mail.com"}, headers=ws.headers
    )
    assert response.status_code == 201, response.text
    domain = response.json()["domain"]
    assert set(domain) == DOMAIN_KEYS
    assert domain["domain"] == "news.acme-mail.com"
    assert domain["status"] == "pending"
    assert domain["verified_at"] is None and domain["last_checked_at"] is None
    assert domain["failure_reason"] is None
    selector = domain["dkim_selector"]
    assert selector.startswith("mr") and len(selector) == len("mr") + 10

    assert [r["purpose"] for r in domain["records"]] == ["dkim", "spf", "dmarc", "return_path"]
    for item in domain["records"]:
        assert set(item) == RECORD_KEYS
        assert item["status"] == "pending" and item["reason"] is None
    dkim = record(domain, "dkim")
    assert dkim["type"] == "TXT"
    assert dkim["host"] == f"{selector}._domainkey.news.acme-mail.com"
    assert dkim["value"].startswith("v=DKIM1; k=rsa; p=")
    assert public_key_of(dkim["value"]).key_size == 2048
    assert record(domain, "spf") == {
        "type": "TXT",
        "host": "news.acme-mail.com",
        "value": f"v=spf1 include:{SPF_INCLUDE} ~all",
        "purpose": "spf",
        "status": "pending",
        "reason": None,
    }
    assert record(domain, "dmarc")["host"] == "_dmarc.news.acme-mail.com"
    # Aggregate reports are asked for at the installation's return-path domain.
    assert record(domain, "dmarc")["value"] == (
        f"v=DMARC1; p=quarantine; rua=mailto:dmarc@{BOUNCE_HOST}"
    )
    assert record(domain, "return_path") == {
        "type": "CNAME",
        "host": "rp.news.acme-mail.com",
        "value": BOUNCE_HOST,
        "purpose": "return_path",
        "status": "pending",
        "reason": None,
    }

    assert await read_domain(client, ws, domain["id"]) == domain


async def test_advised_records_follow_the_operator_settings(client, ws, settings):
    # Nothing set: no SPF include or bounce host to advise; DMARC with the default policy.
    domain = await add_domain(client, ws, "plain.example.org")
    assert [r["purpose"] for r in domain["records"]] == ["dkim", "dmarc"]
    assert record(domain, "dmarc")["value"] == "v=DMARC1; p=none"

    settings.spf_include = "spf.relay.example.net"
    again = await read_domain(client, ws, domain["id"])
    assert record(again, "spf")["value"] == "v=spf1 include:spf.relay.example.net ~all"


async def test_each_domain_gets_its_own_key_and_selector(client, ws):
    first = await add_domain(client, ws, "one.example.com")
    second = await add_domain(client, ws, "two.example.com")
    assert first["dkim_selector"] != second["dkim_selector"]
    assert record(first, "dkim")["value"] != record(second, "dkim")["value"]


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        (" Mail.Example.COM. ", "mail.example.com"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("a-b.c-d.io", "a-b.c-d.io"),
    ],
)
async def test_names_are_lowercased_and_stored_in_idna_form(client, ws, sent, kept):
    domain = await add_domain(client, ws, sent)
    assert domain["domain"] == kept
    assert (await read_domain(client, ws, domain["id"]))["domain"] == kept


LONG = ".".join(["a" * 63] * 4)  # 255 characters


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "domain is required"),
        ({"domain": None}, "domain is required"),
        ({"domain": "   "}, "domain is required"),
        ({"domain": 42}, "domain must be a string"),
        ({"domain": ["example.com"]}, "domain must be a string"),
        ({"domain": "192.0.2.10"}, "domain must be a hostname, not an IP address"),
        ({"domain": "2001:db8::1"}, "domain must be a hostname, not an IP address"),
        ({"domain": "[::1]"}, "domain must be a hostname, not an IP address"),
        ({"domain": "localhost"}, "domain must not be localhost"),
        ({"domain": "LocalHost."}, "domain must not be localhost"),
        ({"domain": "mail.localhost"}, "domain must not be localhost"),
        ({"domain": "example"}, "domain must have at least one dot, like example.com"),
        ({"domain": LONG}, "domain must be 253 characters or fewer"),
    ],
)
async def test_a_domain_that_is_not_a_registrable_hostname_is_400(client, ws, body, message):
    response = await client.post("/api/v1/domains", json=body, headers=ws.headers)
    assert response.status_code == 400, response.text
    assert response.json() == {"error": message}
    listed = await client.get("/api/v1/domains", headers=ws.headers)
    assert listed.json()["domains"] == []


@pytest.mark.parametrize(
    "name",
    [
        "exa_mple.com",
        "-bad.example.com",
        "bad-.example.com",
        "a..example.com",
        "example.123",
        "example.c",
        "mail.example.-com",
        "http://example.com",
        "ex ample.com",
        "a" * 64 + ".com",
        "mail@example.com",
    ],
)
async def test_a_malformed_hostname_is_400(client, ws, name):
    response = await client.post("/api/v1/domains", json={"domain": name}, headers=ws.headers)
    assert response.status_code == 400, response.text
    assert response.json() == {
        "error": "domain must be a hostname like mail.example.com: labels of letters, digits "
        "and hyphens, the last one starting with a letter"
    }


async def test_the_same_domain_twice_is_409_naming_the_first(client, ws, factory):
    first = await add_domain(client, ws, "acme.example.com")
    response = await client.post(
        "/api/v1/domains", json={"domain": "ACME.example.com."}, headers=ws.headers
    )
    assert response.status_code == 409
    assert response.json() == {
        "error": "This domain is already added to the workspace",
        "id": first["id"],
    }
    listed = await client.get("/api/v1/domains", headers=ws.headers)
    assert [d["id"] for d in listed.json()["domains"]] == [first["id"]]

    # Another workspace may send from the same domain (with its own key).
    other = await factory.workspace("pro")
    theirs = await add_domain(client, other, "acme.example.com")
    assert record(theirs, "dkim")["value"] != record(first, "dkim")["value"]


async def test_concurrent_adds_of_one_domain_make_one(client, ws):
    answers = await asyncio.gather(
        *(
            client.post("/api/v1/domains", json={"domain": "race.example.com"}, headers=ws.headers)
            for _ in range(3)
        )
    )
    assert sorted(a.status_code for a in answers) == [201, 409, 409]
    for answer in answers:
        if answer.status_code == 409:
            assert answer.json()["error"] == "This domain is already added to the workspace"
    listed = await client.get("/api/v1/domains", headers=ws.headers)
    assert [d["domain"] for d in listed.json()["domains"]] == ["race.example.com"]


async def test_an_add_that_lost_the_race_to_the_constraint_is_409(client, ws, monkeypatch):
    """As when two requests both find the name free: the unique constraint answers."""
    await add_domain(client, ws, "late.example.com")

    async def saw_nothing(ctx, name):
        return None

    monkeypatch.setattr(service, "_refuse_taken", saw_nothing)
    response = await client.post(
        "/api/v1/domains", json={"domain": "late.example.com"}, headers=ws.headers
    )
    assert response.status_code == 409
    assert response.json() == {"error": "This domain is already added to the workspace"}
    listed = await client.get("/api/v1/domains", headers=ws.headers)
    assert listed.json()["pagination"]["total"] == 1


# ---------------------------------------------------------------- the private key


async def test_the_private_key_is_encrypted_at_rest_and_never_answered(
    client, ws, db, settings, zone
):
    domain = await add_domain(client, ws, "keys.example.com")
    row = await stored(db, domain["id"])
    assert row.dkim_private_key.startswith("v1.")
    assert row.dkim_public_key in record(domain, "dkim")["value"]

    der = keys.unseal(settings.secret_key, row.id, row.dkim_private_key)
    assert der not in base64.urlsafe_b64decode(row.dkim_private_key[3:])
    private = keys.load_private(der)
    published = public_key_of(record(domain, "dkim")["value"])
    assert private.public_key().public_numbers() == published.public_numbers()

    with pytest.raises(keys.KeyUnavailable):
        keys.unseal("another-secret", row.id, row.dkim_private_key)
    with pytest.raises(keys.KeyUnavailable):
        keys.unseal(settings.secret_key, UNKNOWN_ID, row.dkim_private_key)  # another row

    answers = [
        await client.get(f"/api/v1/domains/{domain['id']}", headers=ws.headers),
        await client.get("/api/v1/domains", headers=ws.headers),
        await client.post(f"/api/v1/domains/{domain['id']}/verify", headers=ws.headers),
    ]
    sealed = row.dkim_private_key[3:40]
    der_b64 = base64.b64encode(der).decode()[:40]
    for answer in answers:
        assert answer.status_code == 200, answer.text
        text = json.dumps(answer.json())
        assert sealed not in text and der_b64 not in text and "PRIVATE" not in text


# ---------------------------------------------------------------- reading and listing


async def test_list_is_newest_first_and_paged(client, ws):
    names = [f"d{n}.example.com" for n in range(3)]
    for name in names:
        await add_domain(client, ws, name)
    response = await client.get("/api/v1/domains", params={"limit": 2}, headers=ws.headers)
    assert response.status_code == 200
    body = response.json()
    assert [d["domain"] for d in body["domains"]] == ["d2.example.com", "d1.example.com"]
    assert body["pagination"] == {"page": 1, "limit": 2, "total": 3, "total_pages": 2}
    for item in body["domains"]:
        assert set(item) == DOMAIN_KEYS
    second = await client.get("/api/v1/domains", params={"limit": 2, "page": 2}, headers=ws.headers)
    assert [d["domain"] for d in second.json()["domains"]] == ["d0.example.com"]


async def test_unknown_and_other_workspaces_domains_are_404(client, ws, factory):
    other = await factory.workspace("pro")
    theirs = await add_domain(client, other, "theirs.example.com")
    for domain_id in (UNKNOWN_ID, theirs["id"], "not-a-uuid"):
        for method, path in (
            ("GET", f"/api/v1/domains/{domain_id}"),
            ("POST", f"/api/v1/domains/{domain_id}/verify"),
            ("DELETE", f"/api/v1/domains/{domain_id}"),
        ):
            response = await client.request(method, path, headers=ws.headers)
            assert response.status_code == 404, (method, path, response.text)
            assert response.json() == {"error": "Domain not found"}
    assert (await client.get("/api/v1/domains", headers=ws.headers)).json()["domains"] == []
    still = await read_domain(client, other, theirs["id"])
    assert still["status"] == "pending" and still["last_checked_at"] is None


# ---------------------------------------------------------------- deleting


async def test_delete_answers_success_and_the_domain_is_gone(client, ws):
    domain = await add_domain(client, ws, "gone.example.com")
    kept = await add_domain(client, ws, "kept.example.com")
    response = await client.delete(f"/api/v1/domains/{domain['id']}", headers=ws.headers)
    assert response.status_code == 200
    assert response.json() == {"success": True, "id": domain["id"]}
    missing = await client.get(f"/api/v1/domains/{domain['id']}", headers=ws.headers)
    assert missing.status_code == 404
    listed = await client.get("/api/v1/domains", headers=ws.headers)
    assert [d["id"] for d in listed.json()["domains"]] == [kept["id"]]
    again = await client.delete(f"/api/v1/domains/{domain['id']}", headers=ws.headers)
    assert again.status_code == 404 and again.json() == {"error": "Domain not found"}
    # The name is free again, with a new key.
    readded = await add_domain(client, ws, "gone.example.com")
    assert record(readded, "dkim")["value"] != record(domain, "dkim")["value"]


# ---------------------------------------------------------------- permissions


async def test_reading_needs_campaigns_read_and_changing_campaigns_write(client, ws, factory):
    domain = await add_domain(client, ws, "perm.example.com")
    reader = await factory.key(ws, ["campaigns:read"])
    nobody = await factory.key(ws, ["contacts:read"])

    for path in ("/api/v1/domains", f"/api/v1/domains/{domain['id']}"):
        assert (await client.get(path, headers=reader)).status_code == 200
        refused = await client.get(path, headers=nobody)
        assert refused.status_code == 403
        assert refused.json() == {"error": "Forbidden: campaigns:read permission required"}

    writes = [
        ("POST", "/api/v1/domains", {"domain": "new.example.com"}),
        ("POST", f"/api/v1/domains/{domain['id']}/verify", None),
        ("DELETE", f"/api/v1/domains/{domain['id']}", None),
    ]
    for method, path, body in writes:
        response = await client.request(method, path, json=body, headers=reader)
        assert response.status_code == 403, (method, path)
        assert response.json() == {"error": "Forbidden: campaigns:write permission required"}
    after = await read_domain(client, ws, domain["id"])
    assert after["status"] == "pending" and after["last_checked_at"] is None
    listed = await client.get("/api/v1/domains", headers=ws.headers)
    assert [d["domain"] for d in listed.json()["domains"]] == ["perm.example.com"]


# ---------------------------------------------------------------- the published pattern


@hypothesis_settings(max_examples=300, deadline=None)
@given(st.from_regex(DOMAIN_PATTERN).filter(lambda s: len(s) <= MAX_DOMAIN))
def test_every_name_the_published_pattern_admits_is_accepted(name):
    cleaned = service.clean_domain(name)
    assert cleaned == name.strip().lower().removesuffix(".")


@pytest.mark.parametrize(
    "name", ["192.0.2.1", "localhost", "a.localhost", "example", "a_b.com", "x.1", "é.com"]
)
def test_names_the_pattern_refuses_are_refused_or_converted(name):
    assert re.search(DOMAIN_PATTERN, name) is None
    if name == "é.com":  # Unicode is converted to IDNA instead (accepting more is allowed)
        assert service.clean_domain(name) == "xn--9ca.com"
        return
    with pytest.raises(ApiError) as refused:
        service.clean_domain(name)
    assert refused.value.status == 400
