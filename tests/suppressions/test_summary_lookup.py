"""Spec, Suppressions: GET /api/v1/suppressions (summary, and the `?email=` lookup)."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.suppressions.helpers import API, add_ok, create_contact, lookup, summary

ZERO = {"unsubscribed": 0, "bounced": 0, "complained": 0, "deleted": 0}


async def test_empty_summary(client, ws):
    assert await summary(client, ws.headers) == {"count": 0, "by_reason": ZERO}


async def test_summary_counts_every_reason(client, ws):
    await add_ok(client, ws.headers, ["u1@shop.io", "u2@shop.io"])
    await add_ok(client, ws.headers, ["b1@shop.io"], reason="bounced")
    await add_ok(client, ws.headers, ["c1@shop.io", "c2@shop.io", "c3@shop.io"], reason="spam")
    for email in ("d1@shop.io", "d2@shop.io"):
        contact = await create_contact(client, ws.headers, email)
        response = await client.delete(f"/api/v1/contacts/{contact['id']}", headers=ws.headers)
        assert response.status_code == 200
    erased = await create_contact(client, ws.headers, "e1@shop.io")
    response = await client.delete(
        f"/api/v1/contacts/{erased['id']}", params={"mode": "erase"}, headers=ws.headers
    )
    assert response.status_code == 200
    assert await summary(client, ws.headers) == {
        "count": 9,
        "by_reason": {"unsubscribed": 2, "bounced": 1, "complained": 3, "deleted": 3},
    }


async def test_summary_needs_contacts_read(client, ws, factory):
    reader = await factory.key(ws, "contacts:read")
    assert (await client.get(API, headers=reader)).status_code == 200
    other = await factory.key(ws, "tags:read")
    response = await client.get(API, headers=other)
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: contacts:read permission required"}
    response = await client.get(API, params={"email": "a@shop.io"}, headers=other)
    assert response.status_code == 403


async def test_summary_without_key_is_401(client):
    response = await client.get(API)
    assert response.status_code == 401
    assert response.json() == {"error": "Unauthorized"}


async def test_lookup_suppressed_address(client, ws):
    await add_ok(client, ws.headers, ["found@shop.io"], reason="bounced")
    check = await lookup(client, ws.headers, "found@shop.io")
    assert check["suppressed"] is True
    assert check["reason"] == "bounced"
    assert check["email"] == "found@shop.io"
    added = datetime.fromisoformat(check["added_at"].replace("Z", "+00:00"))
    assert added.year >= 2024
    assert check["liftable"] is False


@pytest.mark.parametrize(
    "query", ["  Found@Shop.IO  ", "FOUND@SHOP.IO", "\tfound@shop.io\n", "found@shop.io "]
)
async def test_lookup_is_case_insensitive_and_trimmed(client, ws, query):
    await add_ok(client, ws.headers, ["found@shop.io"], reason="complained")
    check = await lookup(client, ws.headers, query)
    assert check["suppressed"] is True
    assert check["reason"] == "complained"
    assert check["email"] == "found@shop.io"


async def test_lookup_of_stored_mixed_case_address(client, ws):
    await add_ok(client, ws.headers, ["Upper.Case@Shop.IO"])
    check = await lookup(client, ws.headers, "upper.case@shop.io")
    assert check["suppressed"] is True
    assert check["reason"] == "unsubscribed"


async def test_lookup_address_not_on_list(client, ws):
    await add_ok(client, ws.headers, ["someone@shop.io"])
    check = await lookup(client, ws.headers, "nobody@shop.io")
    assert check["suppressed"] is False
    assert check["reason"] is None
    assert check["added_at"] is None


async def test_lookup_deleted_row_is_liftable(client, ws):
    contact = await create_contact(client, ws.headers, "del@shop.io")
    await client.delete(f"/api/v1/contacts/{contact['id']}", headers=ws.headers)
    check = await lookup(client, ws.headers, "DEL@shop.io")
    assert check["suppressed"] is True
    assert check["reason"] == "deleted"
    assert check["liftable"] is True


@pytest.mark.parametrize(
    "bad", ["not-an-email", "missing@", "@shop.io", "a b@shop.io", "x" * 250 + "@shop.io"]
)
async def test_lookup_invalid_address_is_400(client, ws, bad):
    response = await client.get(API, params={"email": bad}, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": "email must be a valid email address"}
