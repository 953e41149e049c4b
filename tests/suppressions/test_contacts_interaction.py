"""Spec, Contact status and Suppression reasons: how contacts write and respect the list."""

from __future__ import annotations

import pytest

from tests.suppressions.helpers import (
    CONTACTS,
    add_ok,
    create_contact,
    get_contact,
    lift,
    lookup,
    only_row,
    rows,
    summary,
)


async def delete(client, ws, contact_id, mode=None):
    params = {"mode": mode} if mode else {}
    response = await client.delete(f"{CONTACTS}/{contact_id}", params=params, headers=ws.headers)
    assert response.status_code == 200, response.text
    return response


async def test_delete_writes_a_liftable_deleted_row_with_masked_form(client, ws):
    contact = await create_contact(client, ws.headers, "jane.doe@shop.io")
    await delete(client, ws, contact["id"])
    row = await only_row(client, ws.headers)
    assert row["reason"] == "deleted"
    assert row["liftable"] is True
    assert row["contact"] is None
    assert row["email_domain"] == "shop.io"
    assert isinstance(row["email_masked"], str) and row["email_masked"]
    assert "jane.doe" not in row["email_masked"]
    assert (await summary(client, ws.headers))["by_reason"]["deleted"] == 1
    check = await lookup(client, ws.headers, "jane.doe@shop.io")
    assert check["suppressed"] is True
    assert check["reason"] == "deleted"


async def test_erase_writes_a_hash_only_row_never_liftable(client, ws):
    contact = await create_contact(client, ws.headers, "erase.me@shop.io")
    await delete(client, ws, contact["id"], mode="erase")
    row = await only_row(client, ws.headers)
    assert row["reason"] == "deleted"
    assert row["email_masked"] is None
    assert row["email_domain"] is None
    assert row["contact"] is None
    assert row["liftable"] is False
    assert (await lookup(client, ws.headers, "erase.me@shop.io"))["suppressed"] is True
    response = await lift(client, ws.headers, email="erase.me@shop.io")
    assert response.status_code == 409
    # and the erased address cannot be created again
    response = await client.post(
        CONTACTS, json={"email": "erase.me@shop.io", "resubscribe": True}, headers=ws.headers
    )
    assert response.status_code == 409


async def test_deleted_row_is_hidden_from_domain_filter_after_erase(client, ws):
    contact = await create_contact(client, ws.headers, "hidden@secret.io")
    await delete(client, ws, contact["id"], mode="erase")
    assert await rows(client, ws.headers, domain="secret") == []


async def test_patch_unsubscribe_with_suppress(client, ws):
    contact = await create_contact(client, ws.headers, "optout@shop.io")
    response = await client.patch(
        f"{CONTACTS}/{contact['id']}",
        json={"status": "unsubscribed", "suppress": True},
        headers=ws.headers,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["suppressed"] is True
    assert body["contact"]["status"] == "unsubscribed"
    assert body["contact"]["unsubscribed_at"] is not None
    row = await only_row(client, ws.headers)
    assert row["reason"] == "unsubscribed"
    assert row["liftable"] is False
    assert row["contact"] == {
        "id": contact["id"],
        "email": "optout@shop.io",
        "status": "unsubscribed",
    }
    assert (await summary(client, ws.headers))["by_reason"]["unsubscribed"] == 1


async def test_patch_unsubscribe_without_suppress_does_not_block(client, ws):
    contact = await create_contact(client, ws.headers, "soft@shop.io")
    response = await client.patch(
        f"{CONTACTS}/{contact['id']}", json={"status": "unsubscribed"}, headers=ws.headers
    )
    assert response.status_code == 200
    assert (await lookup(client, ws.headers, "soft@shop.io"))["suppressed"] is False
    assert (await summary(client, ws.headers))["count"] == 0


async def test_patch_suppress_never_downgrades_a_bounce(client, ws):
    contact = await create_contact(client, ws.headers, "hard@shop.io")
    await add_ok(client, ws.headers, ["hard@shop.io"], reason="bounced")
    # contact is bounced now; a later unsubscribe+suppress must not weaken the row
    response = await client.patch(
        f"{CONTACTS}/{contact['id']}",
        json={"status": "unsubscribed", "suppress": True},
        headers=ws.headers,
    )
    assert response.status_code == 200
    assert response.json()["suppressed"] is False
    assert (await lookup(client, ws.headers, "hard@shop.io"))["reason"] == "bounced"


@pytest.mark.parametrize("reason", ["bounced", "complained"])
async def test_strong_reason_not_downgraded_by_delete(client, ws, reason):
    contact = await create_contact(client, ws.headers, "strong@shop.io")
    await add_ok(client, ws.headers, ["strong@shop.io"], reason=reason)
    await delete(client, ws, contact["id"])
    row = await only_row(client, ws.headers)
    assert row["reason"] == reason
    assert row["liftable"] is False
    response = await lift(client, ws.headers, email="strong@shop.io")
    assert response.status_code == 409
    assert response.json()["reason"] == reason
    summary_now = await summary(client, ws.headers)
    assert summary_now["count"] == 1
    assert summary_now["by_reason"][reason] == 1
    assert summary_now["by_reason"]["deleted"] == 0


async def test_unsubscribe_not_downgraded_by_delete(client, ws):
    contact = await create_contact(client, ws.headers, "u@shop.io")
    await client.patch(
        f"{CONTACTS}/{contact['id']}",
        json={"status": "unsubscribed", "suppress": True},
        headers=ws.headers,
    )
    await delete(client, ws, contact["id"])
    row = await only_row(client, ws.headers)
    assert row["reason"] == "unsubscribed"
    assert row["liftable"] is False


async def test_erase_of_a_bounced_address_keeps_the_bounce_hash_only(client, ws):
    contact = await create_contact(client, ws.headers, "be@shop.io")
    await add_ok(client, ws.headers, ["be@shop.io"], reason="bounced")
    await delete(client, ws, contact["id"], mode="erase")
    row = await only_row(client, ws.headers)
    assert row["reason"] == "bounced"
    assert row["email_masked"] is None
    assert row["email_domain"] is None
    assert row["liftable"] is False


@pytest.mark.parametrize("reason", ["bounced", "complained"])
@pytest.mark.parametrize("resubscribe", [False, True])
async def test_create_refused_for_bounced_or_complained(client, ws, reason, resubscribe):
    await add_ok(client, ws.headers, ["blocked@shop.io"], reason=reason)
    response = await client.post(
        CONTACTS,
        json={"email": "Blocked@Shop.io", "resubscribe": resubscribe},
        headers=ws.headers,
    )
    assert response.status_code == 409
    word = "bounced" if reason == "bounced" else "spam"
    assert word in response.json()["error"]
    assert (await lookup(client, ws.headers, "blocked@shop.io"))["reason"] == reason


@pytest.mark.parametrize("resubscribe", [False, True])
async def test_create_refused_for_deleted(client, ws, resubscribe):
    contact = await create_contact(client, ws.headers, "was@shop.io")
    await delete(client, ws, contact["id"])
    response = await client.post(
        CONTACTS, json={"email": "was@shop.io", "resubscribe": resubscribe}, headers=ws.headers
    )
    assert response.status_code == 409
    assert "signup form" in response.json()["error"]
    assert (await lookup(client, ws.headers, "was@shop.io"))["reason"] == "deleted"


async def test_create_unsubscribed_needs_resubscribe(client, ws):
    await add_ok(client, ws.headers, ["again@shop.io"])
    response = await client.post(CONTACTS, json={"email": "again@shop.io"}, headers=ws.headers)
    assert response.status_code == 409
    error = response.json()["error"]
    assert "resubscribe" in error
    assert (await lookup(client, ws.headers, "again@shop.io"))["suppressed"] is True
    response = await client.post(
        CONTACTS, json={"email": "again@shop.io", "resubscribe": True}, headers=ws.headers
    )
    assert response.status_code == 201, response.text
    contact = response.json()["contact"]
    assert contact["status"] == "subscribed"
    # the suppression entry was removed
    assert (await lookup(client, ws.headers, "again@shop.io"))["suppressed"] is False
    assert await summary(client, ws.headers) == {
        "count": 0,
        "by_reason": {"unsubscribed": 0, "bounced": 0, "complained": 0, "deleted": 0},
    }
    assert (await get_contact(client, ws.headers, contact["id"]))["status"] == "subscribed"


async def test_unsuppressed_address_creates_normally(client, ws):
    await add_ok(client, ws.headers, ["someone.else@shop.io"], reason="complained")
    contact = await create_contact(client, ws.headers, "free@shop.io")
    assert contact["status"] == "subscribed"
    assert (await summary(client, ws.headers))["count"] == 1


async def test_import_then_bounce_update_of_existing_contact_not_downgraded(client, ws):
    contact = await create_contact(client, ws.headers, "esc@shop.io")
    await add_ok(client, ws.headers, ["esc@shop.io"], reason="complained")
    assert (await get_contact(client, ws.headers, contact["id"]))["status"] == "complained"
    result = await add_ok(client, ws.headers, ["esc@shop.io"], reason="bounced")
    assert result["unchanged"] == 1
    assert result["contacts_updated"] == 0
    assert (await get_contact(client, ws.headers, contact["id"]))["status"] == "complained"


async def unsubscribe_suppressed(client, ws, email):
    contact = await create_contact(client, ws.headers, email)
    response = await client.patch(
        f"{CONTACTS}/{contact['id']}",
        json={"status": "unsubscribed", "suppress": True},
        headers=ws.headers,
    )
    assert response.status_code == 200, response.text
    return contact


async def test_patch_resubscribe_removes_the_unsubscribed_entry(client, ws):
    contact = await unsubscribe_suppressed(client, ws, "return@shop.io")
    response = await client.patch(
        f"{CONTACTS}/{contact['id']}", json={"status": "subscribed"}, headers=ws.headers
    )
    assert response.status_code == 409
    assert (await lookup(client, ws.headers, "return@shop.io"))["reason"] == "unsubscribed"
    response = await client.patch(
        f"{CONTACTS}/{contact['id']}", json={"resubscribe": True}, headers=ws.headers
    )
    assert response.status_code == 200, response.text
    updated = response.json()["contact"]
    assert updated["status"] == "subscribed"
    assert updated["unsubscribed_at"] is None
    assert (await lookup(client, ws.headers, "return@shop.io"))["suppressed"] is False
    assert (await summary(client, ws.headers))["count"] == 0


@pytest.mark.parametrize("reason", ["bounced", "complained"])
async def test_patch_resubscribe_refused_for_strong_reasons(client, ws, reason):
    contact = await create_contact(client, ws.headers, "perm@shop.io")
    await add_ok(client, ws.headers, ["perm@shop.io"], reason=reason)
    response = await client.patch(
        f"{CONTACTS}/{contact['id']}", json={"resubscribe": True}, headers=ws.headers
    )
    assert response.status_code == 409
    assert (await get_contact(client, ws.headers, contact["id"]))["status"] == reason
    assert (await lookup(client, ws.headers, "perm@shop.io"))["reason"] == reason


@pytest.mark.parametrize("reason", ["unsubscribed", "bounced", "complained"])
async def test_rename_to_a_suppressed_address_is_409(client, ws, reason):
    contact = await create_contact(client, ws.headers, "mover@shop.io")
    await add_ok(client, ws.headers, ["target@shop.io"], reason=reason)
    response = await client.patch(
        f"{CONTACTS}/{contact['id']}", json={"email": "target@shop.io"}, headers=ws.headers
    )
    assert response.status_code == 409
    assert (await get_contact(client, ws.headers, contact["id"]))["email"] == "mover@shop.io"
    assert (await lookup(client, ws.headers, "target@shop.io"))["reason"] == reason


async def test_rename_to_a_deleted_address_is_409(client, ws):
    old = await create_contact(client, ws.headers, "old@shop.io")
    await delete(client, ws, old["id"])
    contact = await create_contact(client, ws.headers, "mover@shop.io")
    response = await client.patch(
        f"{CONTACTS}/{contact['id']}", json={"email": "old@shop.io"}, headers=ws.headers
    )
    assert response.status_code == 409
    assert (await lookup(client, ws.headers, "old@shop.io"))["reason"] == "deleted"


async def test_import_leaves_archived_contacts_alone(client, ws):
    contact = await create_contact(client, ws.headers, "shelf@shop.io")
    response = await client.patch(
        f"{CONTACTS}/{contact['id']}", json={"status": "archived"}, headers=ws.headers
    )
    assert response.status_code == 200, response.text
    result = await add_ok(client, ws.headers, ["shelf@shop.io"], reason="bounced")
    assert result["added"] == 1
    assert result["contacts_updated"] == 0
    assert (await get_contact(client, ws.headers, contact["id"]))["status"] == "archived"


async def test_sibling_workspace_of_the_same_account_is_isolated(client, ws, factory):
    sibling = await factory.workspace(account_id=ws.account_id)
    contact = await create_contact(client, ws.headers, "mine@shop.io")
    await delete(client, ws, contact["id"])
    assert (await summary(client, sibling.headers))["count"] == 0
    assert (await lookup(client, sibling.headers, "mine@shop.io"))["suppressed"] is False
    assert (await lift(client, sibling.headers, email="mine@shop.io")).status_code == 404
    created = await create_contact(client, sibling.headers, "mine@shop.io")
    assert created["status"] == "subscribed"
    assert (await summary(client, ws.headers))["count"] == 1
