"""Spec, "Tag on a contact" and the contact-tag rows of the Contacts table: attach, list,
detach, their errors and permissions, the `tag` filter of the contact list, and the
`contact.tag_added` / `contact.tag_removed` events written to the outbox."""

from __future__ import annotations

import asyncio
from datetime import datetime

import httpx
import pytest
from sqlalchemy import select

from mailroom.models import Event

EVENT_CONTACT_KEYS = {
    "id",
    "email",
    "status",
    "first_name",
    "last_name",
    "source",
    "custom_fields",
    "created_at",
    "subscribed_at",
    "unsubscribed_at",
    "tags",
}


@pytest.fixture
async def raw_client(app):
    """Like `client`, but an unhandled error comes back as the 500 a user would get."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


async def create_tag(client, headers, name, **extra):
    response = await client.post("/api/v1/tags", json={"name": name, **extra}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["tag"]


async def create_contact(client, headers, email, **extra):
    response = await client.post(
        "/api/v1/contacts", json={"email": email, **extra}, headers=headers
    )
    assert response.status_code == 201, response.text
    return response.json()["contact"]


async def attach(client, headers, contact_id, tag_id):
    return await client.post(
        f"/api/v1/contacts/{contact_id}/tags", json={"tag_id": tag_id}, headers=headers
    )


async def tags_of(client, headers, contact_id):
    response = await client.get(f"/api/v1/contacts/{contact_id}/tags", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["tags"]


async def events_of(db, workspace_id, *types):
    async with db.session() as session:
        query = select(Event).where(Event.workspace_id == workspace_id)
        if types:
            query = query.where(Event.type.in_(types))
        rows = (await session.scalars(query.order_by(Event.created_at))).all()
    return list(rows)


def tag_names_in(snapshot_tags):
    """Names in the event's `tags` (element shape is not fixed by the spec)."""
    return [t["name"] if isinstance(t, dict) else t for t in snapshot_tags]


def ts(value):
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@pytest.fixture
async def pair(client, ws):
    contact = await create_contact(
        client, ws.headers, "Jane@MailTest.io", first_name="Jane", last_name="Doe"
    )
    tag = await create_tag(client, ws.headers, "VIP", color="#2563eb")
    return contact, tag


# ---------------------------------------------------------------- attach


async def test_attach_returns_contact_tag_and_is_visible_everywhere(client, ws, pair):
    contact, tag = pair
    response = await attach(client, ws.headers, contact["id"], tag["id"])
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"contact_tag"}
    link = body["contact_tag"]
    assert set(link) == {"contact_id", "tag_id", "created_at"}
    assert link["contact_id"] == contact["id"] and link["tag_id"] == tag["id"]
    ts(link["created_at"])

    listed = await tags_of(client, ws.headers, contact["id"])
    assert len(listed) == 1
    assert set(listed[0]) == {"id", "name", "color", "assigned_at"}
    assert listed[0]["id"] == tag["id"]
    assert listed[0]["name"] == "VIP"
    assert listed[0]["color"] == "#2563eb"
    assert ts(listed[0]["assigned_at"]) == ts(link["created_at"])

    single = (await client.get(f"/api/v1/contacts/{contact['id']}", headers=ws.headers)).json()
    assert [t["id"] for t in single["contact"]["tags"]] == [tag["id"]]
    counted = (await client.get(f"/api/v1/tags/{tag['id']}", headers=ws.headers)).json()["tag"]
    assert counted["contact_count"] == 1


async def test_contact_with_no_tags_lists_empty(client, ws, pair):
    contact, _ = pair
    assert await tags_of(client, ws.headers, contact["id"]) == []


async def test_several_tags_on_one_contact(client, ws, pair):
    contact, vip = pair
    lead = await create_tag(client, ws.headers, "Lead")
    assert (await attach(client, ws.headers, contact["id"], vip["id"])).status_code == 201
    assert (await attach(client, ws.headers, contact["id"], lead["id"])).status_code == 201
    listed = await tags_of(client, ws.headers, contact["id"])
    assert {t["id"] for t in listed} == {vip["id"], lead["id"]}


async def test_attach_twice_is_409_and_keeps_one_link(client, ws, db, pair):
    contact, tag = pair
    first = await attach(client, ws.headers, contact["id"], tag["id"])
    assert first.status_code == 201
    second = await attach(client, ws.headers, contact["id"], tag["id"])
    assert second.status_code == 409
    assert second.json() == {"error": "Contact already has this tag"}
    listed = await tags_of(client, ws.headers, contact["id"])
    assert len(listed) == 1
    assert ts(listed[0]["assigned_at"]) == ts(first.json()["contact_tag"]["created_at"])
    assert len(await events_of(db, ws.workspace_id, "contact.tag_added")) == 1


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({}, "tag_id is required"),
        ({"tag_id": None}, "tag_id is required"),
        ({"tag_id": ""}, "tag_id is required"),
        ({"tag_id": 42}, "tag_id must be a string"),
        ({"tag_id": ["x"]}, "tag_id must be a string"),
    ],
)
async def test_attach_without_valid_tag_id_is_400(client, ws, db, pair, payload, message):
    contact, _ = pair
    response = await client.post(
        f"/api/v1/contacts/{contact['id']}/tags", json=payload, headers=ws.headers
    )
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert await tags_of(client, ws.headers, contact["id"]) == []
    assert await events_of(db, ws.workspace_id, "contact.tag_added") == []


async def test_attach_to_unknown_contact_is_404(client, ws, db, pair):
    _, tag = pair
    response = await attach(client, ws.headers, "no-such-contact", tag["id"])
    assert response.status_code == 404
    assert response.json() == {"error": "Contact not found"}
    assert await events_of(db, ws.workspace_id, "contact.tag_added") == []


async def test_attach_unknown_tag_is_404(client, ws, db, pair):
    contact, _ = pair
    response = await attach(client, ws.headers, contact["id"], "no-such-tag")
    assert response.status_code == 404
    assert response.json() == {"error": "Tag not found"}
    assert await tags_of(client, ws.headers, contact["id"]) == []
    assert await events_of(db, ws.workspace_id, "contact.tag_added") == []


async def test_attach_deleted_tag_is_404(client, ws, pair):
    contact, tag = pair
    assert (await client.delete(f"/api/v1/tags/{tag['id']}", headers=ws.headers)).status_code == 200
    response = await attach(client, ws.headers, contact["id"], tag["id"])
    assert response.status_code == 404
    assert response.json() == {"error": "Tag not found"}


async def test_simultaneous_attaches_give_one_201_and_409s(raw_client, ws, db, pair):
    contact, tag = pair
    responses = await asyncio.gather(
        *[attach(raw_client, ws.headers, contact["id"], tag["id"]) for _ in range(8)]
    )
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201] + [409] * 7, [r.text for r in responses]
    for response in responses:
        if response.status_code == 409:
            assert response.json() == {"error": "Contact already has this tag"}
    assert len(await tags_of(raw_client, ws.headers, contact["id"])) == 1
    assert len(await events_of(db, ws.workspace_id, "contact.tag_added")) == 1


# ---------------------------------------------------------------- list and detach


async def test_list_tags_of_unknown_contact_is_404(client, ws):
    response = await client.get("/api/v1/contacts/no-such-contact/tags", headers=ws.headers)
    assert response.status_code == 404
    assert response.json() == {"error": "Contact not found"}


async def test_detach_removes_the_tag(client, ws, pair):
    contact, tag = pair
    other = await create_tag(client, ws.headers, "Other")
    await attach(client, ws.headers, contact["id"], tag["id"])
    await attach(client, ws.headers, contact["id"], other["id"])

    response = await client.delete(
        f"/api/v1/contacts/{contact['id']}/tags/{tag['id']}", headers=ws.headers
    )
    assert response.status_code == 200
    assert response.json() == {"success": True}
    assert [t["id"] for t in await tags_of(client, ws.headers, contact["id"])] == [other["id"]]
    counted = (await client.get(f"/api/v1/tags/{tag['id']}", headers=ws.headers)).json()["tag"]
    assert counted["contact_count"] == 0
    # The tag itself stays.
    assert counted["name"] == "VIP"
    # And can be attached again.
    assert (await attach(client, ws.headers, contact["id"], tag["id"])).status_code == 201


async def test_detach_tag_not_on_contact_is_404(client, ws, db, pair):
    contact, tag = pair
    response = await client.delete(
        f"/api/v1/contacts/{contact['id']}/tags/{tag['id']}", headers=ws.headers
    )
    assert response.status_code == 404
    assert response.json() == {"error": "This tag is not associated with the contact"}
    assert await events_of(db, ws.workspace_id, "contact.tag_removed") == []


async def test_detach_twice_is_404_the_second_time(client, ws, db, pair):
    contact, tag = pair
    await attach(client, ws.headers, contact["id"], tag["id"])
    path = f"/api/v1/contacts/{contact['id']}/tags/{tag['id']}"
    assert (await client.delete(path, headers=ws.headers)).status_code == 200
    again = await client.delete(path, headers=ws.headers)
    assert again.status_code == 404
    assert again.json() == {"error": "This tag is not associated with the contact"}
    assert len(await events_of(db, ws.workspace_id, "contact.tag_removed")) == 1


async def test_simultaneous_detaches_give_one_200_and_404s(raw_client, ws, db, pair):
    contact, tag = pair
    await attach(raw_client, ws.headers, contact["id"], tag["id"])
    path = f"/api/v1/contacts/{contact['id']}/tags/{tag['id']}"
    responses = await asyncio.gather(
        *[raw_client.delete(path, headers=ws.headers) for _ in range(8)]
    )
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] + [404] * 7, [r.text for r in responses]
    assert await tags_of(raw_client, ws.headers, contact["id"]) == []
    assert len(await events_of(db, ws.workspace_id, "contact.tag_removed")) == 1


async def test_detach_unknown_contact_or_tag_is_404(client, ws, pair):
    contact, tag = pair
    await attach(client, ws.headers, contact["id"], tag["id"])
    unknown_contact = await client.delete(
        f"/api/v1/contacts/no-such-contact/tags/{tag['id']}", headers=ws.headers
    )
    assert unknown_contact.status_code == 404
    assert unknown_contact.json() == {"error": "Contact not found"}
    unknown_tag = await client.delete(
        f"/api/v1/contacts/{contact['id']}/tags/no-such-tag", headers=ws.headers
    )
    assert unknown_tag.status_code == 404
    assert unknown_tag.json() == {"error": "Tag not found"}
    assert [t["id"] for t in await tags_of(client, ws.headers, contact["id"])] == [tag["id"]]


async def test_deleting_the_contact_drops_its_tag_links(client, ws, pair):
    contact, tag = pair
    await attach(client, ws.headers, contact["id"], tag["id"])
    deleted = await client.delete(f"/api/v1/contacts/{contact['id']}", headers=ws.headers)
    assert deleted.status_code == 200
    counted = (await client.get(f"/api/v1/tags/{tag['id']}", headers=ws.headers)).json()["tag"]
    assert counted["contact_count"] == 0
    gone = await client.get(f"/api/v1/contacts/{contact['id']}/tags", headers=ws.headers)
    assert gone.status_code == 404
    assert gone.json() == {"error": "Contact not found"}


# ---------------------------------------------------------------- permissions


async def test_tag_routes_need_tag_permissions(client, ws, factory, pair):
    contact, tag = pair
    contacts_only = await factory.key(ws, ["contacts:read", "contacts:write"])
    reader = await factory.key(ws, "tags:read")

    response = await client.get(f"/api/v1/contacts/{contact['id']}/tags", headers=contacts_only)
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: tags:read permission required"}
    assert (
        await client.get(f"/api/v1/contacts/{contact['id']}/tags", headers=reader)
    ).status_code == 200

    for headers in (contacts_only, reader):
        refused = await attach(client, headers, contact["id"], tag["id"])
        assert refused.status_code == 403
        assert refused.json() == {"error": "Forbidden: tags:write permission required"}
    assert await tags_of(client, ws.headers, contact["id"]) == []

    await attach(client, ws.headers, contact["id"], tag["id"])
    for headers in (contacts_only, reader):
        refused = await client.delete(
            f"/api/v1/contacts/{contact['id']}/tags/{tag['id']}", headers=headers
        )
        assert refused.status_code == 403
        assert refused.json() == {"error": "Forbidden: tags:write permission required"}
    assert len(await tags_of(client, ws.headers, contact["id"])) == 1


async def test_tags_write_key_can_tag(client, ws, factory, pair):
    contact, tag = pair
    writer = await factory.key(ws, "tags:write")
    assert (await attach(client, writer, contact["id"], tag["id"])).status_code == 201
    removed = await client.delete(
        f"/api/v1/contacts/{contact['id']}/tags/{tag['id']}", headers=writer
    )
    assert removed.status_code == 200


# ---------------------------------------------------------------- contact list filter


async def test_contact_list_filters_by_tag(client, ws, pair):
    tagged, tag = pair
    plain = await create_contact(client, ws.headers, "plain@mailtest.io")
    other_tag = await create_tag(client, ws.headers, "Other")
    await attach(client, ws.headers, tagged["id"], tag["id"])
    await attach(client, ws.headers, plain["id"], other_tag["id"])

    response = await client.get("/api/v1/contacts", params={"tag": tag["id"]}, headers=ws.headers)
    assert response.status_code == 200
    body = response.json()
    assert [c["id"] for c in body["contacts"]] == [tagged["id"]]
    assert body["pagination"]["total"] == 1

    unknown = await client.get("/api/v1/contacts", params={"tag": "nope"}, headers=ws.headers)
    assert unknown.status_code == 200
    assert unknown.json()["contacts"] == [] and unknown.json()["pagination"]["total"] == 0

    await client.delete(f"/api/v1/contacts/{tagged['id']}/tags/{tag['id']}", headers=ws.headers)
    after = await client.get("/api/v1/contacts", params={"tag": tag["id"]}, headers=ws.headers)
    assert after.json()["contacts"] == []


# ---------------------------------------------------------------- events


async def test_attach_writes_tag_added_event(client, ws, db, pair):
    contact, tag = pair
    before = await events_of(db, ws.workspace_id)
    await attach(client, ws.headers, contact["id"], tag["id"])
    new = [e for e in await events_of(db, ws.workspace_id) if e.id not in {b.id for b in before}]
    assert [e.type for e in new] == ["contact.tag_added"]
    event = new[0]
    assert event.tag_id == tag["id"]
    assert event.list_id is None
    snapshot = event.data["contact"]
    assert set(snapshot) == EVENT_CONTACT_KEYS
    assert snapshot["id"] == contact["id"]
    assert snapshot["email"] == "jane@mailtest.io"
    assert snapshot["status"] == "subscribed"
    assert snapshot["first_name"] == "Jane" and snapshot["last_name"] == "Doe"
    assert snapshot["source"] == "api"
    assert snapshot["custom_fields"] == {}
    assert snapshot["unsubscribed_at"] is None
    assert ts(snapshot["created_at"]) == ts(contact["created_at"])
    assert ts(snapshot["subscribed_at"]) == ts(contact["subscribed_at"])
    assert tag_names_in(snapshot["tags"]) == ["VIP"]


async def test_detach_writes_tag_removed_event(client, ws, db, pair):
    contact, tag = pair
    other = await create_tag(client, ws.headers, "Other")
    await attach(client, ws.headers, contact["id"], tag["id"])
    await attach(client, ws.headers, contact["id"], other["id"])
    before = {e.id for e in await events_of(db, ws.workspace_id)}
    response = await client.delete(
        f"/api/v1/contacts/{contact['id']}/tags/{tag['id']}", headers=ws.headers
    )
    assert response.status_code == 200
    new = [e for e in await events_of(db, ws.workspace_id) if e.id not in before]
    assert [e.type for e in new] == ["contact.tag_removed"]
    event = new[0]
    assert event.tag_id == tag["id"]
    assert event.list_id is None
    snapshot = event.data["contact"]
    assert set(snapshot) == EVENT_CONTACT_KEYS
    assert snapshot["id"] == contact["id"]
    assert tag_names_in(snapshot["tags"]) == ["Other"]


async def test_refused_tag_writes_emit_nothing(client, ws, db, pair, factory):
    contact, tag = pair
    reader = await factory.key(ws, "tags:read")
    before = len(await events_of(db, ws.workspace_id))
    await attach(client, reader, contact["id"], tag["id"])
    await attach(client, ws.headers, contact["id"], "nope")
    await client.delete(f"/api/v1/contacts/{contact['id']}/tags/{tag['id']}", headers=ws.headers)
    assert len(await events_of(db, ws.workspace_id)) == before
