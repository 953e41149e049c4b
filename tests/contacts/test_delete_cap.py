"""DELETE and erase, and the contact cap pooled across an account's workspaces."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, insert, select

from mailroom.core.clock import utcnow
from mailroom.core.emails import email_hash
from mailroom.core.ids import new_id
from mailroom.models import Contact, ContactTag, ListMember, Suppression
from tests.contacts.helpers import create, events_of


async def _rows(db, model, **where):
    async with db.session() as session:
        query = select(func.count()).select_from(model)
        for name, value in where.items():
            query = query.where(getattr(model, name) == value)
        return await session.scalar(query)


async def test_delete_suppresses_masked_and_removes_memberships(client, ws, db):
    contact = await create(client, ws.headers, "del@example.com", first_name="Del")
    tag = (await client.post("/api/v1/tags", json={"name": "t"}, headers=ws.headers)).json()["tag"]
    lst = (await client.post("/api/v1/lists", json={"name": "l"}, headers=ws.headers)).json()[
        "list"
    ]
    await client.post(
        f"/api/v1/contacts/{contact['id']}/tags", json={"tag_id": tag["id"]}, headers=ws.headers
    )
    await client.post(
        f"/api/v1/lists/{lst['id']}/contacts",
        json={"contact_ids": [contact["id"]]},
        headers=ws.headers,
    )
    response = await client.delete(f"/api/v1/contacts/{contact['id']}", headers=ws.headers)
    assert response.status_code == 200
    assert response.json()["success"] is True
    assert (
        await client.get(f"/api/v1/contacts/{contact['id']}", headers=ws.headers)
    ).status_code == 404
    assert await _rows(db, ContactTag, contact_id=contact["id"]) == 0
    assert await _rows(db, ListMember, contact_id=contact["id"]) == 0
    rows = (await client.get("/api/v1/suppressions/list", headers=ws.headers)).json()[
        "suppressions"
    ]
    [row] = rows
    assert row["reason"] == "deleted"
    assert row["email_masked"] == "d***@example.com"
    assert row["email_domain"] == "example.com"
    assert row["liftable"] is True
    assert row["contact"] is None
    [event] = await events_of(db, ws.workspace_id, "contact.deleted")
    assert event.data["contact"]["email"] == "del@example.com"
    assert event.data["contact"]["tags"] == ["t"]


async def test_erase_keeps_hash_only_and_is_never_liftable(client, ws, db, settings):
    contact = await create(client, ws.headers, "erase@example.com")
    response = await client.delete(
        f"/api/v1/contacts/{contact['id']}", params={"mode": "erase"}, headers=ws.headers
    )
    assert response.status_code == 200
    [row] = (await client.get("/api/v1/suppressions/list", headers=ws.headers)).json()[
        "suppressions"
    ]
    assert row["email_hash"] == email_hash(settings.resolved_secret_key, "erase@example.com")
    assert row["email_masked"] is None and row["email_domain"] is None
    assert row["liftable"] is False
    lift = await client.post(
        "/api/v1/suppressions/lift", json={"email": "erase@example.com"}, headers=ws.headers
    )
    assert lift.status_code == 409
    [event] = await events_of(db, ws.workspace_id, "contact.deleted")
    assert event.data["contact"]["email"] is None


async def test_bad_delete_mode_is_400(client, ws):
    contact = await create(client, ws.headers)
    response = await client.delete(
        f"/api/v1/contacts/{contact['id']}", params={"mode": "shred"}, headers=ws.headers
    )
    assert response.status_code == 400
    assert (
        await client.get(f"/api/v1/contacts/{contact['id']}", headers=ws.headers)
    ).status_code == 200


async def test_delete_never_downgrades_a_bounce(client, ws):
    contact = await create(client, ws.headers, "b@example.com")
    await client.patch(
        f"/api/v1/contacts/{contact['id']}", json={"status": "bounced"}, headers=ws.headers
    )
    await client.delete(f"/api/v1/contacts/{contact['id']}", headers=ws.headers)
    check = (
        await client.get(
            "/api/v1/suppressions", params={"email": "b@example.com"}, headers=ws.headers
        )
    ).json()
    assert check["reason"] == "bounced"


async def _fill(db, workspace_id: str, count: int, status: str = "subscribed") -> None:
    now = utcnow() - timedelta(days=1)
    rows = [
        {
            "id": new_id(),
            "workspace_id": workspace_id,
            "email": f"{status}{i}-{workspace_id[-6:]}@fill.example",
            "search_text": f"{status}{i}",
            "email_hash": email_hash("x", f"{i}{workspace_id}{status}"),
            "first_name": "",
            "last_name": "",
            "status": status,
            "custom_fields": {},
            "source": "api",
            "subscribed_at": now,
            "created_at": now,
            "updated_at": now,
        }
        for i in range(count)
    ]
    async with db.transaction() as session:
        await session.execute(insert(Contact), rows)


async def test_contact_cap_is_pooled_across_the_account(client, factory, db):
    first = await factory.workspace("free")
    second = await factory.workspace(account_id=first.account_id)
    await _fill(db, first.workspace_id, 300)
    await _fill(db, second.workspace_id, 199)
    # Unsubscribed and archived contacts never count.
    await _fill(db, first.workspace_id, 50, status="unsubscribed")
    await _fill(db, second.workspace_id, 50, status="archived")
    ok = await client.post("/api/v1/contacts", json={"email": "last@x.io"}, headers=second.headers)
    assert ok.status_code == 201
    for workspace in (first, second):
        refused = await client.post(
            "/api/v1/contacts", json={"email": "over@x.io"}, headers=workspace.headers
        )
        assert refused.status_code == 403
        assert refused.json() == {
            "error": "Contact limit reached (500 on the Free plan). Upgrade to add more."
        }
    # Another account is not affected.
    other = await factory.workspace("free")
    assert (
        await client.post("/api/v1/contacts", json={"email": "over@x.io"}, headers=other.headers)
    ).status_code == 201
    # Unsubscribing one frees a slot; re-subscribing it then hits the cap again.
    contact = ok.json()["contact"]
    await client.patch(
        f"/api/v1/contacts/{contact['id']}", json={"status": "unsubscribed"}, headers=second.headers
    )
    assert (
        await client.post("/api/v1/contacts", json={"email": "again@x.io"}, headers=first.headers)
    ).status_code == 201
    back = await client.patch(
        f"/api/v1/contacts/{contact['id']}", json={"status": "subscribed"}, headers=second.headers
    )
    assert back.status_code == 403
    assert back.json()["error"].startswith("Contact limit reached (500 on the Free plan)")


async def test_starter_cap_message(client, factory, db):
    starter = await factory.workspace("starter")
    await _fill(db, starter.workspace_id, 2500)
    refused = await client.post(
        "/api/v1/contacts", json={"email": "a@x.io"}, headers=starter.headers
    )
    assert refused.status_code == 403
    assert refused.json()["error"] == (
        "Contact limit reached (2500 on the Starter plan). Upgrade to add more."
    )
    assert await _rows(db, Suppression) == 0
