"""List membership: adding (only subscribed contacts join; confirmed on a single opt-in list,
unconfirmed on a double opt-in list and on every list of a Free-plan workspace), the paged
member listing, removal, the `list` / `tag` filters of the contact list, and the
`contact.list_joined` / `contact.list_left` events written to the outbox."""

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
RESULT_KEYS = {"added", "already_member", "skipped_not_subscribed"}


@pytest.fixture
async def raw_client(app):
    """Like `client`, but an unhandled error comes back as the 500 a user would get."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


async def create_list(client, headers, name, **extra):
    response = await client.post("/api/v1/lists", json={"name": name, **extra}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["list"]


async def create_contact(client, headers, email, **extra):
    response = await client.post(
        "/api/v1/contacts", json={"email": email, **extra}, headers=headers
    )
    assert response.status_code == 201, response.text
    return response.json()["contact"]


async def set_status(client, headers, contact_id, status):
    response = await client.patch(
        f"/api/v1/contacts/{contact_id}", json={"status": status}, headers=headers
    )
    assert response.status_code == 200, response.text


async def add(client, headers, list_id, ids):
    return await client.post(
        f"/api/v1/lists/{list_id}/contacts", json={"contact_ids": ids}, headers=headers
    )


async def members(client, headers, list_id, **params):
    response = await client.get(f"/api/v1/lists/{list_id}/contacts", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def list_counts(client, headers, list_id):
    row = (await client.get(f"/api/v1/lists/{list_id}", headers=headers)).json()["list"]
    return row["member_count"], row["confirmed_count"], row["unconfirmed_count"]


async def events_of(db, workspace_id, *types):
    async with db.session() as session:
        query = select(Event).where(Event.workspace_id == workspace_id)
        if types:
            query = query.where(Event.type.in_(types))
        rows = (await session.scalars(query.order_by(Event.created_at))).all()
    return list(rows)


def counts(body):
    return {k: body[k] for k in RESULT_KEYS}


def ts(value):
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


# ---------------------------------------------------------------- adding


async def test_single_opt_in_list_adds_confirmed_members(client, ws):
    newsletter = await create_list(client, ws.headers, "Newsletter")
    a = await create_contact(client, ws.headers, "a@mailtest.io", first_name="Ann")
    b = await create_contact(client, ws.headers, "b@mailtest.io")

    response = await add(client, ws.headers, newsletter["id"], [a["id"], b["id"]])
    assert response.status_code == 200
    body = response.json()
    assert counts(body) == {"added": 2, "already_member": 0, "skipped_not_subscribed": 0}
    assert body["membership"] == "confirmed"

    page = await members(client, ws.headers, newsletter["id"])
    assert {c["id"] for c in page["contacts"]} == {a["id"], b["id"]}
    assert page["pagination"] == {"page": 1, "limit": 50, "total": 2, "total_pages": 1}
    ann = next(c for c in page["contacts"] if c["id"] == a["id"])
    assert ann["email"] == "a@mailtest.io" and ann["first_name"] == "Ann"
    assert ann["status"] == "subscribed"
    assert ann["membership"]["status"] == "confirmed"
    assert ann["membership"]["confirmed_at"] is not None
    ts(ann["membership"]["joined_at"])
    assert await list_counts(client, ws.headers, newsletter["id"]) == (2, 2, 0)


async def test_double_opt_in_list_adds_unconfirmed_members(client, ws):
    doi = await create_list(client, ws.headers, "DOI", double_opt_in=True)
    a = await create_contact(client, ws.headers, "a@mailtest.io")
    response = await add(client, ws.headers, doi["id"], [a["id"]])
    assert response.status_code == 200
    assert counts(response.json()) == {"added": 1, "already_member": 0, "skipped_not_subscribed": 0}
    assert response.json()["membership"] == "unconfirmed"
    page = await members(client, ws.headers, doi["id"])
    assert [c["id"] for c in page["contacts"]] == [a["id"]]
    assert page["contacts"][0]["membership"]["status"] == "unconfirmed"
    assert page["contacts"][0]["membership"]["confirmed_at"] is None
    assert await list_counts(client, ws.headers, doi["id"]) == (1, 0, 1)


async def test_free_plan_single_opt_in_list_still_adds_unconfirmed(client, factory, db):
    free = await factory.workspace("free")
    plain = await create_list(client, free.headers, "Plain", double_opt_in=False)
    a = await create_contact(client, free.headers, "a@mailtest.io")
    response = await add(client, free.headers, plain["id"], [a["id"]])
    assert response.status_code == 200
    assert counts(response.json()) == {"added": 1, "already_member": 0, "skipped_not_subscribed": 0}
    assert response.json()["membership"] == "unconfirmed"
    page = await members(client, free.headers, plain["id"])
    assert page["contacts"][0]["membership"]["status"] == "unconfirmed"
    assert page["contacts"][0]["membership"]["confirmed_at"] is None
    assert await list_counts(client, free.headers, plain["id"]) == (1, 0, 1)
    assert await events_of(db, free.workspace_id, "contact.list_joined") == []


async def test_only_subscribed_contacts_join(client, ws):
    target = await create_list(client, ws.headers, "Target")
    ok = await create_contact(client, ws.headers, "ok@mailtest.io")
    unsub = await create_contact(client, ws.headers, "unsub@mailtest.io")
    bounced = await create_contact(client, ws.headers, "bounced@mailtest.io")
    archived = await create_contact(client, ws.headers, "archived@mailtest.io")
    await set_status(client, ws.headers, unsub["id"], "unsubscribed")
    await set_status(client, ws.headers, bounced["id"], "bounced")
    await set_status(client, ws.headers, archived["id"], "archived")

    response = await add(
        client, ws.headers, target["id"], [ok["id"], unsub["id"], bounced["id"], archived["id"]]
    )
    assert response.status_code == 200
    assert counts(response.json()) == {"added": 1, "already_member": 0, "skipped_not_subscribed": 3}
    page = await members(client, ws.headers, target["id"])
    assert [c["id"] for c in page["contacts"]] == [ok["id"]]


async def test_only_unsubscribed_contacts_add_nobody(client, ws, db):
    target = await create_list(client, ws.headers, "Target")
    unsub = await create_contact(client, ws.headers, "unsub@mailtest.io")
    await set_status(client, ws.headers, unsub["id"], "unsubscribed")
    response = await add(client, ws.headers, target["id"], [unsub["id"]])
    assert response.status_code == 200
    assert counts(response.json()) == {"added": 0, "already_member": 0, "skipped_not_subscribed": 1}
    assert (await members(client, ws.headers, target["id"]))["contacts"] == []
    assert await events_of(db, ws.workspace_id, "contact.list_joined") == []


async def test_existing_members_are_counted_not_duplicated(client, ws, db):
    target = await create_list(client, ws.headers, "Target")
    a = await create_contact(client, ws.headers, "a@mailtest.io")
    b = await create_contact(client, ws.headers, "b@mailtest.io")
    await add(client, ws.headers, target["id"], [a["id"]])
    response = await add(client, ws.headers, target["id"], [a["id"], b["id"]])
    assert response.status_code == 200
    assert counts(response.json()) == {"added": 1, "already_member": 1, "skipped_not_subscribed": 0}
    assert (await members(client, ws.headers, target["id"]))["pagination"]["total"] == 2
    assert len(await events_of(db, ws.workspace_id, "contact.list_joined")) == 2


async def test_member_who_unsubscribed_counts_as_not_subscribed(client, ws):
    """As bulk add_to_list counts it: whoever is not subscribed is skipped, member or not."""
    target = await create_list(client, ws.headers, "Target")
    a = await create_contact(client, ws.headers, "a@mailtest.io")
    await add(client, ws.headers, target["id"], [a["id"]])
    await set_status(client, ws.headers, a["id"], "unsubscribed")
    response = await add(client, ws.headers, target["id"], [a["id"]])
    assert response.status_code == 200
    expected = {"added": 0, "already_member": 0, "skipped_not_subscribed": 1}
    assert counts(response.json()) == expected
    bulk = await client.post(
        "/api/v1/contacts/bulk",
        json={"action": "add_to_list", "contact_ids": [a["id"]], "list_id": target["id"]},
        headers=ws.headers,
    )
    assert counts(bulk.json()) == expected
    assert (await members(client, ws.headers, target["id"]))["pagination"]["total"] == 1


async def test_repeated_ids_in_one_request_fold(client, ws):
    target = await create_list(client, ws.headers, "Target")
    a = await create_contact(client, ws.headers, "a@mailtest.io")
    response = await add(client, ws.headers, target["id"], [a["id"], a["id"], f" {a['id']} "])
    assert response.status_code == 200
    assert counts(response.json()) == {"added": 1, "already_member": 0, "skipped_not_subscribed": 0}
    assert (await members(client, ws.headers, target["id"]))["pagination"]["total"] == 1


async def test_non_string_ids_are_dropped(client, ws):
    target = await create_list(client, ws.headers, "Target")
    a = await create_contact(client, ws.headers, "a@mailtest.io")
    response = await add(
        client, ws.headers, target["id"], [5, None, {"id": a["id"]}, [a["id"]], True, a["id"]]
    )
    assert response.status_code == 200
    assert counts(response.json()) == {"added": 1, "already_member": 0, "skipped_not_subscribed": 0}
    assert [c["id"] for c in (await members(client, ws.headers, target["id"]))["contacts"]] == [
        a["id"]
    ]


@pytest.mark.parametrize("ids", [[], [5, None, True, {"x": 1}, ["y"]], ["", "   "]])
async def test_no_valid_ids_is_400(client, ws, ids):
    target = await create_list(client, ws.headers, "Target")
    response = await add(client, ws.headers, target["id"], ids)
    assert response.status_code == 400
    assert response.json() == {"error": "No valid contact IDs provided"}


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({}, "contact_ids array is required"),
        ({"contact_ids": None}, "contact_ids array is required"),
        ({"contact_ids": "abc"}, "contact_ids must be an array"),
    ],
)
async def test_missing_contact_ids_is_400(client, ws, payload, message):
    target = await create_list(client, ws.headers, "Target")
    response = await client.post(
        f"/api/v1/lists/{target['id']}/contacts", json=payload, headers=ws.headers
    )
    assert response.status_code == 400
    assert response.json() == {"error": message}


async def test_unknown_ids_are_ignored_and_all_unknown_is_404(client, ws):
    target = await create_list(client, ws.headers, "Target")
    a = await create_contact(client, ws.headers, "a@mailtest.io")
    mixed = await add(client, ws.headers, target["id"], [a["id"], "no-such-contact"])
    assert mixed.status_code == 200
    assert mixed.json()["added"] == 1
    unknown = await add(client, ws.headers, target["id"], ["no-such-contact", "x" * 100])
    assert unknown.status_code == 404
    assert unknown.json() == {"error": "Contact not found"}
    assert (await members(client, ws.headers, target["id"]))["pagination"]["total"] == 1


async def test_more_than_1000_ids_is_400(client, ws):
    target = await create_list(client, ws.headers, "Target")
    a = await create_contact(client, ws.headers, "a@mailtest.io")
    response = await add(
        client, ws.headers, target["id"], [a["id"]] + [f"id-{i}" for i in range(1000)]
    )
    assert response.status_code == 400
    assert response.json() == {"error": "contact_ids may have at most 1000 ids"}
    assert (await members(client, ws.headers, target["id"]))["contacts"] == []


async def test_simultaneous_adds_of_one_contact_add_it_once(raw_client, ws, db):
    target = await create_list(raw_client, ws.headers, "Target")
    a = await create_contact(raw_client, ws.headers, "a@mailtest.io")
    responses = await asyncio.gather(
        *[add(raw_client, ws.headers, target["id"], [a["id"]]) for _ in range(8)]
    )
    assert [r.status_code for r in responses] == [200] * 8, [r.text for r in responses]
    assert sum(r.json()["added"] for r in responses) == 1
    assert sum(r.json()["already_member"] for r in responses) == 7
    assert (await members(raw_client, ws.headers, target["id"]))["pagination"]["total"] == 1
    assert len(await events_of(db, ws.workspace_id, "contact.list_joined")) == 1


async def test_adding_to_unknown_list_is_404(client, ws):
    a = await create_contact(client, ws.headers, "a@mailtest.io")
    response = await add(client, ws.headers, "no-such-list", [a["id"]])
    assert response.status_code == 404
    assert response.json() == {"error": "List not found"}


# ---------------------------------------------------------------- member listing


async def test_members_are_paged_most_recent_first_and_filter_by_state(client, ws):
    target = await create_list(client, ws.headers, "Target")
    made = [await create_contact(client, ws.headers, f"p{i}@mailtest.io") for i in range(3)]
    for contact in made:
        await add(client, ws.headers, target["id"], [contact["id"]])
    first = await members(client, ws.headers, target["id"], limit=2)
    second = await members(client, ws.headers, target["id"], limit=2, page=2)
    assert first["pagination"] == {"page": 1, "limit": 2, "total": 3, "total_pages": 2}
    assert second["pagination"] == {"page": 2, "limit": 2, "total": 3, "total_pages": 2}
    seen = [c["id"] for c in first["contacts"] + second["contacts"]]
    assert sorted(seen) == sorted(c["id"] for c in made)
    assert len(first["contacts"]) == 2 and len(second["contacts"]) == 1

    confirmed = await members(client, ws.headers, target["id"], status="confirmed")
    assert confirmed["pagination"]["total"] == 3
    unconfirmed = await members(client, ws.headers, target["id"], status="unconfirmed")
    assert unconfirmed["contacts"] == [] and unconfirmed["pagination"]["total"] == 0


async def test_member_listing_mixes_states_after_switching_opt_in(client, ws):
    target = await create_list(client, ws.headers, "Target")
    early = await create_contact(client, ws.headers, "early@mailtest.io")
    late = await create_contact(client, ws.headers, "late@mailtest.io")
    await add(client, ws.headers, target["id"], [early["id"]])
    await client.patch(
        f"/api/v1/lists/{target['id']}", json={"double_opt_in": True}, headers=ws.headers
    )
    response = await add(client, ws.headers, target["id"], [late["id"]])
    assert response.json()["membership"] == "unconfirmed"
    confirmed = await members(client, ws.headers, target["id"], status="confirmed")
    unconfirmed = await members(client, ws.headers, target["id"], status="unconfirmed")
    assert [c["id"] for c in confirmed["contacts"]] == [early["id"]]
    assert [c["id"] for c in unconfirmed["contacts"]] == [late["id"]]
    assert await list_counts(client, ws.headers, target["id"]) == (2, 1, 1)


async def test_member_listing_bad_state_or_paging_is_400(client, ws):
    target = await create_list(client, ws.headers, "Target")
    bad = await client.get(
        f"/api/v1/lists/{target['id']}/contacts", params={"status": "maybe"}, headers=ws.headers
    )
    assert bad.status_code == 400
    assert bad.json() == {"error": "status must be one of confirmed, unconfirmed"}
    over = await client.get(
        f"/api/v1/lists/{target['id']}/contacts", params={"limit": 101}, headers=ws.headers
    )
    assert over.status_code == 400
    assert over.json() == {"error": "limit must be at most 100"}


# ---------------------------------------------------------------- removing


async def test_remove_member(client, ws):
    target = await create_list(client, ws.headers, "Target")
    a = await create_contact(client, ws.headers, "a@mailtest.io")
    b = await create_contact(client, ws.headers, "b@mailtest.io")
    await add(client, ws.headers, target["id"], [a["id"], b["id"]])

    response = await client.delete(
        f"/api/v1/lists/{target['id']}/contacts/{a['id']}", headers=ws.headers
    )
    assert response.status_code == 200
    assert response.json() == {"success": True}
    assert [c["id"] for c in (await members(client, ws.headers, target["id"]))["contacts"]] == [
        b["id"]
    ]
    assert await list_counts(client, ws.headers, target["id"]) == (1, 1, 0)
    # The contact stays, and can join again.
    assert (await client.get(f"/api/v1/contacts/{a['id']}", headers=ws.headers)).status_code == 200
    assert (await add(client, ws.headers, target["id"], [a["id"]])).json()["added"] == 1


async def test_remove_errors(client, ws):
    target = await create_list(client, ws.headers, "Target")
    a = await create_contact(client, ws.headers, "a@mailtest.io")
    not_member = await client.delete(
        f"/api/v1/lists/{target['id']}/contacts/{a['id']}", headers=ws.headers
    )
    assert not_member.status_code == 404
    await add(client, ws.headers, target["id"], [a["id"]])
    unknown_list = await client.delete(
        f"/api/v1/lists/no-such-list/contacts/{a['id']}", headers=ws.headers
    )
    assert unknown_list.status_code == 404
    assert unknown_list.json() == {"error": "List not found"}
    unknown_contact = await client.delete(
        f"/api/v1/lists/{target['id']}/contacts/no-such-contact", headers=ws.headers
    )
    assert unknown_contact.status_code == 404
    assert unknown_contact.json() == {"error": "Contact not found"}
    assert (await members(client, ws.headers, target["id"]))["pagination"]["total"] == 1


async def test_simultaneous_removals_give_one_200_and_404s(raw_client, ws, db):
    target = await create_list(raw_client, ws.headers, "Target")
    a = await create_contact(raw_client, ws.headers, "a@mailtest.io")
    await add(raw_client, ws.headers, target["id"], [a["id"]])
    path = f"/api/v1/lists/{target['id']}/contacts/{a['id']}"
    responses = await asyncio.gather(
        *[raw_client.delete(path, headers=ws.headers) for _ in range(8)]
    )
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] + [404] * 7, [r.text for r in responses]
    assert len(await events_of(db, ws.workspace_id, "contact.list_left")) == 1


async def test_deleting_a_contact_removes_its_memberships(client, ws):
    target = await create_list(client, ws.headers, "Target")
    a = await create_contact(client, ws.headers, "a@mailtest.io")
    await add(client, ws.headers, target["id"], [a["id"]])
    assert (
        await client.delete(f"/api/v1/contacts/{a['id']}", headers=ws.headers)
    ).status_code == 200
    assert (await members(client, ws.headers, target["id"]))["contacts"] == []
    assert await list_counts(client, ws.headers, target["id"]) == (0, 0, 0)


# ---------------------------------------------------------------- contact list filters


async def test_contact_list_filters_by_list_and_by_list_and_tag(client, ws):
    target = await create_list(client, ws.headers, "Target")
    other_list = await create_list(client, ws.headers, "Other")
    tag = (await client.post("/api/v1/tags", json={"name": "VIP"}, headers=ws.headers)).json()[
        "tag"
    ]
    both = await create_contact(client, ws.headers, "both@mailtest.io")
    list_only = await create_contact(client, ws.headers, "listonly@mailtest.io")
    tag_only = await create_contact(client, ws.headers, "tagonly@mailtest.io")
    elsewhere = await create_contact(client, ws.headers, "elsewhere@mailtest.io")
    await add(client, ws.headers, target["id"], [both["id"], list_only["id"]])
    await add(client, ws.headers, other_list["id"], [elsewhere["id"], tag_only["id"]])
    for contact in (both, tag_only):
        await client.post(
            f"/api/v1/contacts/{contact['id']}/tags", json={"tag_id": tag["id"]}, headers=ws.headers
        )

    async def ids(**params):
        response = await client.get("/api/v1/contacts", params=params, headers=ws.headers)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["pagination"]["total"] == len(body["contacts"])
        return {c["id"] for c in body["contacts"]}

    assert await ids(list=target["id"]) == {both["id"], list_only["id"]}
    assert await ids(tag=tag["id"]) == {both["id"], tag_only["id"]}
    assert await ids(list=target["id"], tag=tag["id"]) == {both["id"]}
    assert await ids(list=other_list["id"], tag=tag["id"]) == {tag_only["id"]}
    assert await ids(list="no-such-list") == set()


async def test_unconfirmed_members_match_the_list_filter(client, ws):
    doi = await create_list(client, ws.headers, "DOI", double_opt_in=True)
    a = await create_contact(client, ws.headers, "a@mailtest.io")
    await add(client, ws.headers, doi["id"], [a["id"]])
    response = await client.get("/api/v1/contacts", params={"list": doi["id"]}, headers=ws.headers)
    assert [c["id"] for c in response.json()["contacts"]] == [a["id"]]


# ---------------------------------------------------------------- events


async def test_confirmed_join_writes_list_joined(client, ws, db):
    target = await create_list(client, ws.headers, "Target")
    a = await create_contact(
        client, ws.headers, "a@mailtest.io", first_name="Ann", custom_fields={"plan": "gold"}
    )
    b = await create_contact(client, ws.headers, "b@mailtest.io")
    tag = (await client.post("/api/v1/tags", json={"name": "VIP"}, headers=ws.headers)).json()[
        "tag"
    ]
    await client.post(
        f"/api/v1/contacts/{a['id']}/tags", json={"tag_id": tag["id"]}, headers=ws.headers
    )
    before = {e.id for e in await events_of(db, ws.workspace_id)}
    await add(client, ws.headers, target["id"], [a["id"], b["id"]])
    new = [e for e in await events_of(db, ws.workspace_id) if e.id not in before]
    assert sorted(e.type for e in new) == ["contact.list_joined", "contact.list_joined"]
    assert all(e.list_id == target["id"] and e.tag_id is None for e in new)
    by_contact = {e.data["contact"]["id"]: e.data["contact"] for e in new}
    assert set(by_contact) == {a["id"], b["id"]}
    snapshot = by_contact[a["id"]]
    assert set(snapshot) == EVENT_CONTACT_KEYS
    assert snapshot["email"] == "a@mailtest.io"
    assert snapshot["status"] == "subscribed"
    assert snapshot["first_name"] == "Ann"
    assert snapshot["custom_fields"] == {"plan": "gold"}
    assert [t["name"] if isinstance(t, dict) else t for t in snapshot["tags"]] == ["VIP"]
    assert set(by_contact[b["id"]]) == EVENT_CONTACT_KEYS


async def test_unconfirmed_join_writes_no_list_joined(client, ws, db):
    doi = await create_list(client, ws.headers, "DOI", double_opt_in=True)
    a = await create_contact(client, ws.headers, "a@mailtest.io")
    before = {e.id for e in await events_of(db, ws.workspace_id)}
    response = await add(client, ws.headers, doi["id"], [a["id"]])
    assert response.json()["added"] == 1
    new = [e for e in await events_of(db, ws.workspace_id) if e.id not in before]
    assert [e.type for e in new if e.type.startswith("contact.list")] == []


async def test_removal_writes_list_left(client, ws, db):
    target = await create_list(client, ws.headers, "Target")
    a = await create_contact(client, ws.headers, "a@mailtest.io")
    await add(client, ws.headers, target["id"], [a["id"]])
    before = {e.id for e in await events_of(db, ws.workspace_id)}
    await client.delete(f"/api/v1/lists/{target['id']}/contacts/{a['id']}", headers=ws.headers)
    new = [e for e in await events_of(db, ws.workspace_id) if e.id not in before]
    assert [e.type for e in new] == ["contact.list_left"]
    assert new[0].list_id == target["id"]
    snapshot = new[0].data["contact"]
    assert set(snapshot) == EVENT_CONTACT_KEYS
    assert snapshot["id"] == a["id"] and snapshot["email"] == "a@mailtest.io"


async def test_failed_removal_writes_nothing(client, ws, db):
    target = await create_list(client, ws.headers, "Target")
    a = await create_contact(client, ws.headers, "a@mailtest.io")
    before = len(await events_of(db, ws.workspace_id))
    await client.delete(f"/api/v1/lists/{target['id']}/contacts/{a['id']}", headers=ws.headers)
    assert len(await events_of(db, ws.workspace_id)) == before
