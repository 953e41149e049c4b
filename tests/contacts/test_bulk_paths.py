"""Bulk actions take one of two paths: with a webhook endpoint listening, the contacts an
action changed are listed (for their events); without one, the statement only counts. Both
must answer the same counts and leave the same stored effect."""

from __future__ import annotations

import pytest

from tests.contacts.helpers import create, events_of


async def _scenario(client, factory, db, listen: bool) -> tuple[list[dict], dict[str, int]]:
    ws = await factory.workspace("pro", listen=listen)
    h = ws.headers
    a, b, c, d = [await create(client, h, f"{n}@acme.io") for n in "abcd"]
    for contact, status in ((c, "unsubscribed"), (d, "bounced")):
        response = await client.patch(
            f"/api/v1/contacts/{contact['id']}", json={"status": status}, headers=h
        )
        assert response.status_code == 200, response.text
    tag = (await client.post("/api/v1/tags", json={"name": "vip"}, headers=h)).json()["tag"]
    made = await client.post("/api/v1/lists", json={"name": "News"}, headers=h)
    assert made.status_code == 201, made.text
    mailing_list = made.json()["list"]
    await client.post(f"/api/v1/contacts/{a['id']}/tags", json={"tag_id": tag["id"]}, headers=h)
    everyone = [a["id"], b["id"], c["id"], d["id"]]

    async def bulk(**body):
        response = await client.post("/api/v1/contacts/bulk", json=body, headers=h)
        assert response.status_code == 200, response.text
        return response.json()

    async def total(**query):
        response = await client.get("/api/v1/contacts", params=query, headers=h)
        return response.json()["pagination"]["total"]

    bodies = [
        await bulk(action="add_to_list", contact_ids=[a["id"]], list_id=mailing_list["id"]),
        await bulk(action="add_tag", contact_ids=everyone, tag_id=tag["id"]),
        await bulk(action="remove_tag", contact_ids=[a["id"], b["id"]], tag_id=tag["id"]),
        await bulk(action="add_to_list", contact_ids=everyone, list_id=mailing_list["id"]),
        await bulk(action="remove_from_list", contact_ids=[a["id"]], list_id=mailing_list["id"]),
        await bulk(action="unsubscribe", filter={}),
        await bulk(action="archive", contact_ids=[a["id"], c["id"]]),
        await bulk(action="archive", contact_ids=[a["id"], c["id"]]),
    ]
    stored = {
        "tagged": await total(tag=tag["id"]),
        "members": await total(list=mailing_list["id"]),
        "unsubscribed": await total(status="unsubscribed"),
        "archived": await total(status="archived"),
    }
    events = {
        name: len(await events_of(db, ws.workspace_id, name))
        for name in (
            "contact.tag_added",
            "contact.tag_removed",
            "contact.list_joined",
            "contact.list_left",
            "contact.unsubscribed",
        )
    }
    return bodies, {**stored, **events}


@pytest.mark.parametrize("listen", [True, False], ids=["endpoint listening", "nobody listening"])
async def test_bulk_counts_and_effects_do_not_depend_on_listeners(client, factory, db, listen):
    bodies, seen = await _scenario(client, factory, db, listen)
    assert bodies == [
        {
            "success": True,
            "added": 1,
            "already_member": 0,
            "skipped_not_subscribed": 0,
            "membership": "confirmed",
        },
        {"success": True, "tagged": 4},
        {"success": True, "untagged": 2},
        {
            "success": True,
            "added": 1,
            "already_member": 1,
            "skipped_not_subscribed": 2,
            "membership": "confirmed",
        },
        {"success": True, "removed": 1},
        {
            "success": True,
            "unsubscribed": 2,
            "already_unsubscribed": 2,
            "suppressed": 0,
            "blocked": 1,  # d: a bounce is suppressed
        },
        {"success": True, "archived": 2, "already_archived": 0},
        {"success": True, "archived": 0, "already_archived": 2},
    ]
    assert {k: seen[k] for k in ("tagged", "members", "unsubscribed", "archived")} == {
        "tagged": 1,  # d: a and b lost the tag, c is archived (hidden)
        "members": 1,  # b: a left
        "unsubscribed": 1,  # b (a is archived now)
        "archived": 2,
    }
    events = {k: v for k, v in seen.items() if k.startswith("contact.")}
    if listen:
        # tag_added: b, c, d (a had the tag, and its own attach is one more); the PATCH to
        # unsubscribed adds one contact.unsubscribed event for c.
        assert events == {
            "contact.tag_added": 4,
            "contact.tag_removed": 2,
            "contact.list_joined": 2,
            "contact.list_left": 1,
            "contact.unsubscribed": 3,
        }
    else:
        assert set(events.values()) == {0}
