"""POST /contacts/bulk: every action, its counts, errors, events and all-or-nothing."""

from __future__ import annotations

import csv
import io

import pytest

from tests.contacts.helpers import create, events_of


async def _bulk(client, ws, **body):
    return await client.post("/api/v1/contacts/bulk", json=body, headers=ws.headers)


async def _status(client, ws, cid):
    response = await client.get(f"/api/v1/contacts/{cid}", headers=ws.headers)
    return response.json()["contact"]["status"] if response.status_code == 200 else None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "action is required"),
        ({"action": "explode", "contact_ids": ["x"]}, "Unknown action: explode"),
        ({"action": "archive"}, "contact_ids array or filter is required"),
        ({"action": "archive", "contact_ids": "abc"}, "contact_ids array or filter is required"),
        ({"action": "archive", "contact_ids": [1, None, {}]}, "No valid contact IDs provided"),
        ({"action": "archive", "contact_ids": []}, "No valid contact IDs provided"),
        (
            {"action": "unsubscribe", "contact_ids": ["a"], "suppress": "yes"},
            "suppress must be true or false",
        ),
        ({"action": "add_tag", "contact_ids": ["a"]}, "tag_id is required"),
        ({"action": "remove_tag", "contact_ids": ["a"]}, "tag_id is required"),
        ({"action": "add_to_list", "contact_ids": ["a"]}, "list_id is required"),
        ({"action": "remove_from_list", "filter": {}}, "list_id is required"),
        # Given where the action needs none: still an id or nothing, as the schema documents.
        (
            {"action": "archive", "contact_ids": ["a"], "list_id": ""},
            "list_id must be a non-empty string",
        ),
        (
            {"action": "add_to_list", "contact_ids": ["a"], "list_id": "l", "tag_id": 7},
            "tag_id must be a non-empty string",
        ),
    ],
)
async def test_bulk_400s(client, ws, body, message):
    response = await client.post("/api/v1/contacts/bulk", json=body, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": message}


async def test_unknown_tag_list_and_empty_filter_are_404(client, ws):
    contact = await create(client, ws.headers)
    for body, message in [
        ({"action": "add_tag", "contact_ids": [contact["id"]], "tag_id": "nope"}, "Tag not found"),
        (
            {"action": "add_to_list", "contact_ids": [contact["id"]], "list_id": "nope"},
            "List not found",
        ),
        ({"action": "archive", "filter": {"q": "nobody-matches"}}, "No contacts match that filter"),
    ]:
        response = await _bulk(client, ws, **body)
        assert response.status_code == 404
        assert response.json() == {"error": message}


async def test_unsubscribe_counts_events_and_suppression(client, ws, db):
    a = await create(client, ws.headers, "a@x.io")
    b = await create(client, ws.headers, "b@x.io")
    c = await create(client, ws.headers, "c@x.io")
    await client.patch(
        f"/api/v1/contacts/{c['id']}", json={"status": "bounced"}, headers=ws.headers
    )
    response = await _bulk(
        client, ws, action="unsubscribe", contact_ids=[a["id"], b["id"], c["id"], 7]
    )
    assert response.status_code == 200
    assert response.json() == {
        "success": True,
        "unsubscribed": 2,
        "already_unsubscribed": 1,
        "suppressed": 0,
        "blocked": 1,
    }
    assert await _status(client, ws, a["id"]) == "unsubscribed"
    assert await _status(client, ws, c["id"]) == "bounced"
    events = await events_of(db, ws.workspace_id, "contact.unsubscribed")
    assert sorted(e.data["contact"]["email"] for e in events) == ["a@x.io", "b@x.io"]
    assert all(e.data["contact"]["status"] == "unsubscribed" for e in events)
    assert all(e.data["contact"]["unsubscribed_at"] for e in events)
    # Not blocked without suppress: a single PATCH can bring them back.
    check = await client.get("/api/v1/suppressions", params={"email": "a@x.io"}, headers=ws.headers)
    assert check.json()["suppressed"] is False


async def test_unsubscribe_with_suppress_never_downgrades(client, ws):
    a = await create(client, ws.headers, "a@x.io")
    b = await create(client, ws.headers, "b@x.io")
    await client.patch(
        f"/api/v1/contacts/{b['id']}", json={"status": "complained"}, headers=ws.headers
    )
    response = await _bulk(
        client, ws, action="unsubscribe", contact_ids=[a["id"], b["id"]], suppress=True
    )
    body = response.json()
    assert body["unsubscribed"] == 1 and body["already_unsubscribed"] == 1
    assert body["suppressed"] == 1 and body["blocked"] == 2
    reasons = {}
    for email in ("a@x.io", "b@x.io"):
        check = await client.get(
            "/api/v1/suppressions", params={"email": email}, headers=ws.headers
        )
        reasons[email] = check.json()["reason"]
    assert reasons == {"a@x.io": "unsubscribed", "b@x.io": "complained"}


async def test_archive_and_restore(client, ws):
    a = await create(client, ws.headers, "a@x.io")
    b = await create(client, ws.headers, "b@x.io")
    c = await create(client, ws.headers, "c@x.io")
    await client.patch(
        f"/api/v1/contacts/{b['id']}", json={"status": "unsubscribed"}, headers=ws.headers
    )
    first = await _bulk(client, ws, action="archive", contact_ids=[a["id"], b["id"]])
    assert first.json() == {"success": True, "archived": 2, "already_archived": 0}
    again = await _bulk(client, ws, action="archive", contact_ids=[a["id"], c["id"]])
    assert again.json() == {"success": True, "archived": 1, "already_archived": 1}
    listing = (await client.get("/api/v1/contacts", headers=ws.headers)).json()
    assert listing["pagination"]["total"] == 0
    # a's address gets blocked while archived: it comes back unsubscribed.
    await client.post("/api/v1/suppressions", json={"entries": ["a@x.io"]}, headers=ws.headers)
    restored = await _bulk(client, ws, action="restore", filter={"status": "archived"})
    assert restored.json() == {"success": True, "restored": 3, "not_archived": 0}
    assert await _status(client, ws, a["id"]) == "unsubscribed"
    assert await _status(client, ws, b["id"]) == "unsubscribed"
    assert await _status(client, ws, c["id"]) == "subscribed"
    none_archived = await _bulk(client, ws, action="restore", contact_ids=[c["id"]])
    assert none_archived.json() == {"success": True, "restored": 0, "not_archived": 1}


async def test_filter_ignores_archived_unless_asked(client, ws):
    a = await create(client, ws.headers, "a@x.io")
    await create(client, ws.headers, "b@x.io")
    await _bulk(client, ws, action="archive", contact_ids=[a["id"]])
    response = await _bulk(client, ws, action="unsubscribe", filter={})
    assert response.json()["unsubscribed"] == 1
    assert await _status(client, ws, a["id"]) == "archived"


async def test_delete_and_erase(client, ws, db, factory):
    a = await create(client, ws.headers, "a@x.io")
    b = await create(client, ws.headers, "b@x.io")
    other = await factory.workspace()
    foreign = await create(client, other.headers, "f@x.io")
    response = await _bulk(client, ws, action="delete", contact_ids=[a["id"], foreign["id"]])
    assert response.json() == {"success": True, "deleted": 2}  # ids submitted
    assert await _status(client, ws, a["id"]) is None
    assert await _status(client, other, foreign["id"]) == "subscribed"
    erased = await _bulk(client, ws, action="erase", contact_ids=[b["id"]])
    assert erased.json() == {"success": True, "erased": 1}
    rows = (await client.get("/api/v1/suppressions/list", headers=ws.headers)).json()[
        "suppressions"
    ]
    by_liftable = {r["liftable"]: r for r in rows}
    assert by_liftable[True]["email_masked"] == "a***@x.io"
    assert by_liftable[False]["email_masked"] is None and by_liftable[False]["reason"] == "deleted"
    events = await events_of(db, ws.workspace_id, "contact.deleted")
    assert {e.data["mode"] for e in events} == {"delete", "erase"}
    erased_event = next(e for e in events if e.data["mode"] == "erase")
    assert erased_event.data["contact"]["email"] is None


async def test_tags_in_bulk(client, ws, db):
    made = [await create(client, ws.headers, f"t{i}@x.io") for i in range(3)]
    tag = (await client.post("/api/v1/tags", json={"name": "vip"}, headers=ws.headers)).json()[
        "tag"
    ]
    await client.post(
        f"/api/v1/contacts/{made[0]['id']}/tags", json={"tag_id": tag["id"]}, headers=ws.headers
    )
    ids = [m["id"] for m in made]
    response = await _bulk(client, ws, action="add_tag", contact_ids=ids, tag_id=tag["id"])
    assert response.json() == {"success": True, "tagged": 3}
    listing = (
        await client.get("/api/v1/contacts", params={"tag": tag["id"]}, headers=ws.headers)
    ).json()
    assert listing["pagination"]["total"] == 3
    added = await events_of(db, ws.workspace_id, "contact.tag_added")
    assert len(added) == 3  # one from the single attach, two from bulk (t0 already had it)
    assert all(e.tag_id == tag["id"] for e in added)
    assert all(e.data["contact"]["tags"] == ["vip"] for e in added)
    removed = await _bulk(
        client, ws, action="remove_tag", filter={"tag": tag["id"]}, tag_id=tag["id"]
    )
    assert removed.json() == {"success": True, "untagged": 3}
    assert len(await events_of(db, ws.workspace_id, "contact.tag_removed")) == 3


async def test_lists_in_bulk(client, ws, db, factory):
    a = await create(client, ws.headers, "a@x.io")
    b = await create(client, ws.headers, "b@x.io")
    c = await create(client, ws.headers, "c@x.io")
    await client.patch(
        f"/api/v1/contacts/{c['id']}", json={"status": "unsubscribed"}, headers=ws.headers
    )
    lst = (await client.post("/api/v1/lists", json={"name": "news"}, headers=ws.headers)).json()[
        "list"
    ]
    await client.post(
        f"/api/v1/lists/{lst['id']}/contacts", json={"contact_ids": [a["id"]]}, headers=ws.headers
    )
    response = await _bulk(
        client, ws, action="add_to_list", contact_ids=[a["id"], b["id"], c["id"]], list_id=lst["id"]
    )
    assert response.json() == {
        "success": True,
        "added": 1,
        "already_member": 1,
        "skipped_not_subscribed": 1,
        "membership": "confirmed",
    }
    joined = await events_of(db, ws.workspace_id, "contact.list_joined")
    assert len(joined) == 2 and all(e.list_id == lst["id"] for e in joined)
    removed = await _bulk(
        client, ws, action="remove_from_list", filter={"list": lst["id"]}, list_id=lst["id"]
    )
    assert removed.json() == {"success": True, "removed": 2}
    assert len(await events_of(db, ws.workspace_id, "contact.list_left")) == 2
    # Free plan: unconfirmed, no list_joined.
    free = await factory.workspace("free")
    contact = await create(client, free.headers, "f@x.io")
    free_list = (
        await client.post("/api/v1/lists", json={"name": "l"}, headers=free.headers)
    ).json()["list"]
    response = await _bulk(
        client, free, action="add_to_list", contact_ids=[contact["id"]], list_id=free_list["id"]
    )
    assert response.json()["membership"] == "unconfirmed" and response.json()["added"] == 1
    assert await events_of(db, free.workspace_id, "contact.list_joined") == []


async def test_export_needs_permission_before_reading(client, factory):
    workspace = await factory.workspace(permissions="contacts:read,contacts:write")
    response = await client.post(
        "/api/v1/contacts/bulk",
        json={"action": "export", "filter": {"q": "nobody"}},
        headers=workspace.headers,
    )
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: contacts:export permission required"}


async def test_bulk_export_csv(client, ws):
    await create(client, ws.headers, "a@x.io", first_name="=cmd", custom_fields={"plan": "pro"})
    await create(client, ws.headers, "b@x.io", last_name="+1")
    response = await _bulk(client, ws, action="export", filter={})
    assert response.status_code == 200
    assert 'filename="contacts-export.csv"' in response.headers["content-disposition"]
    lines = response.text.splitlines()
    assert lines[0] == (
        '"email","first_name","last_name","status","source","language","tags","created_at","custom.plan"'
    )
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert {r["email"] for r in rows} == {"a@x.io", "b@x.io"}
    by_email = {r["email"]: r for r in rows}
    assert by_email["a@x.io"]["first_name"] == "'=cmd"
    assert by_email["b@x.io"]["last_name"] == "'+1"
    assert by_email["a@x.io"]["custom.plan"] == "pro"


async def test_bulk_is_all_or_nothing(client, ws, db, monkeypatch):
    from mailroom.events import bulk as bulk_events

    made = [await create(client, ws.headers, f"z{i}@x.io") for i in range(3)]

    async def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(bulk_events, "emit_for_selection", broken)
    response = await _bulk(client, ws, action="unsubscribe", contact_ids=[m["id"] for m in made])
    assert response.status_code == 500
    assert response.json() == {"error": "Bulk action failed"}
    for m in made:
        assert await _status(client, ws, m["id"]) == "subscribed"
