"""Spec, Suppressions: POST /api/v1/suppressions/lift, and workspace isolation."""

from __future__ import annotations

import pytest

from tests.suppressions.helpers import (
    API,
    add_ok,
    create_contact,
    lift,
    lookup,
    only_row,
    rows,
    summary,
)


async def delete_contact(client, ws, email, mode=None):
    contact = await create_contact(client, ws.headers, email)
    params = {"mode": mode} if mode else {}
    response = await client.delete(
        f"/api/v1/contacts/{contact['id']}", params=params, headers=ws.headers
    )
    assert response.status_code == 200, response.text
    return contact


async def test_lift_plain_delete_by_email(client, ws):
    await delete_contact(client, ws, "back@shop.io")
    response = await lift(client, ws.headers, email="back@shop.io")
    assert response.status_code == 200
    assert response.json() == {"lifted": True, "reason": "deleted"}
    assert await rows(client, ws.headers) == []
    assert (await lookup(client, ws.headers, "back@shop.io"))["suppressed"] is False
    assert (await summary(client, ws.headers))["count"] == 0
    # the address can now be added again
    response = await client.post(
        "/api/v1/contacts", json={"email": "back@shop.io"}, headers=ws.headers
    )
    assert response.status_code == 201


async def test_lift_normalises_the_address(client, ws):
    await delete_contact(client, ws, "case@shop.io")
    response = await lift(client, ws.headers, email="  CASE@Shop.io ")
    assert response.status_code == 200
    assert response.json() == {"lifted": True, "reason": "deleted"}
    assert await rows(client, ws.headers) == []


async def test_lift_by_email_hash(client, ws):
    await delete_contact(client, ws, "hashed@shop.io")
    await add_ok(client, ws.headers, ["stays@shop.io"])
    [row] = await rows(client, ws.headers, reason="deleted")
    response = await lift(client, ws.headers, email_hash=row["email_hash"])
    assert response.status_code == 200
    assert response.json() == {"lifted": True, "reason": "deleted"}
    remaining = await rows(client, ws.headers)
    assert [r["reason"] for r in remaining] == ["unsubscribed"]
    assert (await lookup(client, ws.headers, "hashed@shop.io"))["suppressed"] is False


async def test_lift_twice_is_404(client, ws):
    await delete_contact(client, ws, "once@shop.io")
    assert (await lift(client, ws.headers, email="once@shop.io")).status_code == 200
    response = await lift(client, ws.headers, email="once@shop.io")
    assert response.status_code == 404
    assert response.json() == {"error": "Address not found on the suppression list"}


@pytest.mark.parametrize("reason", ["bounced", "complained", "unsubscribed"])
async def test_lift_refuses_imported_reasons(client, ws, reason):
    await add_ok(client, ws.headers, ["stuck@shop.io"], reason=reason)
    response = await lift(client, ws.headers, email="stuck@shop.io")
    assert response.status_code == 409
    body = response.json()
    assert body["reason"] == reason
    assert isinstance(body["error"], str) and body["error"]
    assert (await lookup(client, ws.headers, "stuck@shop.io"))["reason"] == reason
    [row] = await rows(client, ws.headers)
    assert row["liftable"] is False
    by_hash = await lift(client, ws.headers, email_hash=row["email_hash"])
    assert by_hash.status_code == 409
    assert by_hash.json()["reason"] == reason


async def test_lift_refuses_an_unsubscribe_made_through_patch(client, ws):
    contact = await create_contact(client, ws.headers, "patched@shop.io")
    response = await client.patch(
        f"/api/v1/contacts/{contact['id']}",
        json={"status": "unsubscribed", "suppress": True},
        headers=ws.headers,
    )
    assert response.status_code == 200
    response = await lift(client, ws.headers, email="patched@shop.io")
    assert response.status_code == 409
    assert response.json()["reason"] == "unsubscribed"
    assert "resubscribe" in response.json()["error"]


async def test_lift_refuses_an_erasure(client, ws):
    await delete_contact(client, ws, "erased@shop.io", mode="erase")
    response = await lift(client, ws.headers, email="erased@shop.io")
    assert response.status_code == 409
    body = response.json()
    assert set(body) == {"error", "reason"}
    assert body["reason"] == "deleted"
    row = await only_row(client, ws.headers)
    assert row["liftable"] is False
    by_hash = await lift(client, ws.headers, email_hash=row["email_hash"])
    assert by_hash.status_code == 409
    assert (await summary(client, ws.headers))["by_reason"]["deleted"] == 1


async def test_lift_absent_address_is_404(client, ws):
    await add_ok(client, ws.headers, ["other@shop.io"])
    response = await lift(client, ws.headers, email="absent@shop.io")
    assert response.status_code == 404
    assert response.json() == {"error": "Address not found on the suppression list"}
    response = await lift(client, ws.headers, email_hash="0" * 64)
    assert response.status_code == 404


@pytest.mark.parametrize("body", [{}, {"email": ""}, {"email_hash": ""}, {"email": None}])
async def test_lift_without_identifier_is_400(client, ws, body):
    response = await client.post(f"{API}/lift", json=body, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": "email or email_hash is required"}


async def test_lift_malformed_email_is_400(client, ws):
    response = await lift(client, ws.headers, email="not-an-address")
    assert response.status_code == 400
    assert response.json() == {"error": "email must be a valid email address"}


@pytest.mark.parametrize("bad", ["xyz", "g" * 64, "a" * 63])
async def test_lift_malformed_hash_is_400(client, ws, bad):
    response = await lift(client, ws.headers, email_hash=bad)
    assert response.status_code == 400
    assert isinstance(response.json()["error"], str)


async def test_lift_needs_contacts_write(client, ws, factory):
    await delete_contact(client, ws, "perm@shop.io")
    reader = await factory.key(ws, "contacts:read")
    response = await lift(client, reader, email="perm@shop.io")
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: contacts:write permission required"}
    assert (await lookup(client, ws.headers, "perm@shop.io"))["suppressed"] is True


async def test_other_workspace_sees_nothing_and_cannot_lift(client, ws, factory):
    await delete_contact(client, ws, "mine@shop.io")
    await add_ok(client, ws.headers, ["b@shop.io"], reason="bounced")
    [row] = await rows(client, ws.headers, reason="deleted")
    other = await factory.workspace("pro")
    assert await summary(client, other.headers) == {
        "count": 0,
        "by_reason": {"unsubscribed": 0, "bounced": 0, "complained": 0, "deleted": 0},
    }
    assert (await lookup(client, other.headers, "mine@shop.io"))["suppressed"] is False
    assert await rows(client, other.headers) == []
    response = await lift(client, other.headers, email="mine@shop.io")
    assert response.status_code == 404
    response = await lift(client, other.headers, email_hash=row["email_hash"])
    assert response.status_code == 404
    # still there for its own workspace
    check = await lookup(client, ws.headers, "mine@shop.io")
    assert check["suppressed"] is True
    assert check["reason"] == "deleted"
    assert (await summary(client, ws.headers))["count"] == 2


async def test_same_address_in_two_workspaces_is_independent(client, ws, factory):
    other = await factory.workspace("pro")
    await add_ok(client, ws.headers, ["shared@shop.io"], reason="bounced")
    # bounced in one workspace does not block the address in another
    contact = await create_contact(client, other.headers, "shared@shop.io")
    result = await add_ok(client, other.headers, ["shared@shop.io"])
    assert result["added"] == 1
    assert result["contacts_updated"] == 1
    assert (await lookup(client, ws.headers, "shared@shop.io"))["reason"] == "bounced"
    assert (await lookup(client, other.headers, "shared@shop.io"))["reason"] == "unsubscribed"
    [row] = await rows(client, other.headers)
    assert row["contact"]["id"] == contact["id"]
    [mine] = await rows(client, ws.headers)
    assert mine["contact"] is None
