"""POST /contacts/bulk: every action's counts and effects, the filter, errors, events."""

from __future__ import annotations

import pytest

from tests.spec_bulk_import.helpers import (
    BULK,
    CONTACT_EVENT_FIELDS,
    create_contact,
    create_list,
    create_tag,
    events_of,
    find,
    import_ok,
    list_members,
    make_csv,
    read_export,
    set_status,
    suppress,
    suppression,
    tag_names,
    total,
)

BULK_COLUMNS = [
    "email",
    "first_name",
    "last_name",
    "status",
    "source",
    "language",
    "tags",
    "created_at",
]


async def _bulk(client, headers, **body):
    return await client.post(BULK, json=body, headers=headers)


async def _ok(client, headers, **body):
    response = await _bulk(client, headers, **body)
    assert response.status_code == 200, response.text
    return response.json()


async def _status(client, headers, contact_id):
    response = await client.get(f"/api/v1/contacts/{contact_id}", headers=headers)
    if response.status_code == 404:
        return None
    assert response.status_code == 200, response.text
    return response.json()["contact"]["status"]


async def _people(client, ws, *emails, **fields):
    return [await create_contact(client, ws.headers, e, **fields) for e in emails]


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "action is required"),
        ({"contact_ids": ["x"]}, "action is required"),
        ({"action": "", "contact_ids": ["x"]}, "action is required"),
        ({"action": "explode", "contact_ids": ["x"]}, "Unknown action: explode"),
        ({"action": "archive"}, "contact_ids array or filter is required"),
        ({"action": "delete", "tag_id": "t"}, "contact_ids array or filter is required"),
        ({"action": "archive", "contact_ids": []}, "No valid contact IDs provided"),
        (
            {"action": "archive", "contact_ids": [1, None, {}, ["a"]]},
            "No valid contact IDs provided",
        ),
    ],
)
async def test_400_messages(client, ws, body, message):
    response = await _bulk(client, ws.headers, **body)
    assert response.status_code == 400
    assert response.json() == {"error": message}


@pytest.mark.parametrize(
    "body",
    [
        {"action": "unsubscribe", "contact_ids": ["a"], "suppress": "yes"},
        {"action": "unsubscribe", "contact_ids": ["a"], "suppress": 1},
        {"action": "add_tag", "contact_ids": ["a"]},
        {"action": "remove_tag", "filter": {}},
        {"action": "add_to_list", "contact_ids": ["a"]},
        {"action": "remove_from_list", "filter": {}},
        {"action": "add_tag", "contact_ids": ["a"], "tag_id": ""},
    ],
)
async def test_other_400s(client, ws, body):
    contact = await create_contact(client, ws.headers, "keep@acme.io")
    body = {**body, "contact_ids": [contact["id"]]} if "contact_ids" in body else body
    response = await _bulk(client, ws.headers, **body)
    assert response.status_code == 400
    assert isinstance(response.json()["error"], str)
    assert await _status(client, ws.headers, contact["id"]) == "subscribed"


async def test_unknown_or_foreign_tag_and_list_are_404(client, ws, factory):
    contact = await create_contact(client, ws.headers, "c@acme.io")
    other = await factory.workspace()
    their_tag = await create_tag(client, other.headers, "theirs")
    their_list = await create_list(client, other.headers, "theirs")
    ids = [contact["id"]]
    for action in ("add_tag", "remove_tag"):
        for tag_id in ("nope", their_tag["id"]):
            response = await _bulk(
                client, ws.headers, action=action, contact_ids=ids, tag_id=tag_id
            )
            assert response.status_code == 404
            assert response.json() == {"error": "Tag not found"}
    for action in ("add_to_list", "remove_from_list"):
        for list_id in ("nope", their_list["id"]):
            response = await _bulk(
                client, ws.headers, action=action, contact_ids=ids, list_id=list_id
            )
            assert response.status_code == 404
            assert response.json() == {"error": "List not found"}


@pytest.mark.parametrize(
    "action", ["unsubscribe", "archive", "restore", "delete", "erase", "export"]
)
async def test_filter_matching_nobody_is_404(client, ws, action):
    await create_contact(client, ws.headers, "someone@acme.io")
    response = await _bulk(client, ws.headers, action=action, filter={"q": "nobody-at-all"})
    assert response.status_code == 404
    assert response.json() == {"error": "No contacts match that filter"}
    assert await total(client, ws.headers) == 1


async def test_filter_matching_nobody_is_404_for_tag_and_list_actions(client, ws):
    await create_contact(client, ws.headers, "someone@acme.io")
    tag = await create_tag(client, ws.headers, "t")
    news = await create_list(client, ws.headers, "l")
    for body in (
        {"action": "add_tag", "tag_id": tag["id"]},
        {"action": "remove_tag", "tag_id": tag["id"]},
        {"action": "add_to_list", "list_id": news["id"]},
        {"action": "remove_from_list", "list_id": news["id"]},
    ):
        response = await _bulk(client, ws.headers, filter={"source": "nowhere"}, **body)
        assert response.status_code == 404
        assert response.json() == {"error": "No contacts match that filter"}


async def test_needs_contacts_write(client, ws, factory):
    contact = await create_contact(client, ws.headers, "c@acme.io")
    headers = await factory.key(ws, "contacts:read,contacts:export")
    response = await _bulk(client, headers, action="archive", contact_ids=[contact["id"]])
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: contacts:write permission required"}
    assert await _status(client, ws.headers, contact["id"]) == "subscribed"


# ---------------------------------------------------------------- unsubscribe


async def test_unsubscribe_counts_and_events(client, ws, db):
    a, b, c = await _people(client, ws, "a@acme.io", "b@acme.io", "c@acme.io")
    await set_status(client, ws.headers, c["id"], "unsubscribed")
    body = await _ok(
        client,
        ws.headers,
        action="unsubscribe",
        contact_ids=[a["id"], b["id"], c["id"], 42, None],
    )
    assert body["success"] is True
    assert body["unsubscribed"] == 2
    assert body["already_unsubscribed"] == 1
    assert body["suppressed"] == 0
    assert body["blocked"] == 0
    for contact in (a, b, c):
        assert await _status(client, ws.headers, contact["id"]) == "unsubscribed"
    events = await events_of(db, ws.workspace_id, "contact.unsubscribed")
    bulk_events = [e for e in events if e.data["contact"]["email"] in ("a@acme.io", "b@acme.io")]
    assert sorted(e.data["contact"]["email"] for e in bulk_events) == ["a@acme.io", "b@acme.io"]
    for event in bulk_events:
        assert set(event.data["contact"]) >= CONTACT_EVENT_FIELDS
        assert event.data["contact"]["status"] == "unsubscribed"
    stored = (await client.get(f"/api/v1/contacts/{a['id']}", headers=ws.headers)).json()
    assert stored["contact"]["unsubscribed_at"] is not None
    # Without suppress the address is not blocked.
    assert (await suppression(client, ws.headers, "a@acme.io"))["suppressed"] is False


async def test_unsubscribe_leaves_bounced_and_complained_untouched(client, ws):
    a, b = await _people(client, ws, "a@acme.io", "b@acme.io")
    await set_status(client, ws.headers, b["id"], "bounced")
    body = await _ok(client, ws.headers, action="unsubscribe", contact_ids=[a["id"], b["id"]])
    assert body["unsubscribed"] == 1 and body["already_unsubscribed"] == 1
    assert await _status(client, ws.headers, b["id"]) == "bounced"


async def test_unsubscribe_with_suppress_blocks_all_never_downgrading(client, ws):
    a, b, c = await _people(client, ws, "a@acme.io", "b@acme.io", "c@acme.io")
    await set_status(client, ws.headers, b["id"], "unsubscribed")
    await suppress(client, ws.headers, ["c@acme.io"], reason="complained")
    body = await _ok(
        client,
        ws.headers,
        action="unsubscribe",
        contact_ids=[a["id"], b["id"], c["id"]],
        suppress=True,
    )
    assert body["unsubscribed"] == 1
    assert body["already_unsubscribed"] == 2
    assert body["blocked"] == 3
    assert body["suppressed"] == 2
    assert (await suppression(client, ws.headers, "a@acme.io"))["reason"] == "unsubscribed"
    assert (await suppression(client, ws.headers, "b@acme.io"))["reason"] == "unsubscribed"
    assert (await suppression(client, ws.headers, "c@acme.io"))["reason"] == "complained"


async def test_ids_from_other_workspaces_are_ignored(client, ws, factory):
    mine = await create_contact(client, ws.headers, "mine@acme.io")
    other = await factory.workspace()
    theirs = await create_contact(client, other.headers, "theirs@acme.io")
    body = await _ok(
        client, ws.headers, action="unsubscribe", contact_ids=[mine["id"], theirs["id"]]
    )
    assert body["unsubscribed"] == 1
    assert await _status(client, other.headers, theirs["id"]) == "subscribed"
    for action in ("archive", "delete", "erase"):
        await _ok(client, ws.headers, action=action, contact_ids=[theirs["id"]])
        assert await _status(client, other.headers, theirs["id"]) == "subscribed"


# ---------------------------------------------------------------- archive / restore


async def test_archive_and_restore_keep_previous_status(client, ws):
    a, b, c = await _people(client, ws, "a@acme.io", "b@acme.io", "c@acme.io")
    await set_status(client, ws.headers, b["id"], "unsubscribed")
    await set_status(client, ws.headers, c["id"], "bounced")
    ids = [a["id"], b["id"], c["id"]]
    body = await _ok(client, ws.headers, action="archive", contact_ids=ids)
    assert body == {"success": True, "archived": 3, "already_archived": 0}
    assert all([await _status(client, ws.headers, i) == "archived" for i in ids])
    assert await total(client, ws.headers) == 0
    assert await total(client, ws.headers, status="archived") == 3
    again = await _ok(client, ws.headers, action="archive", contact_ids=[a["id"]])
    assert again == {"success": True, "archived": 0, "already_archived": 1}
    # Not blocked by archiving.
    assert (await suppression(client, ws.headers, "a@acme.io"))["suppressed"] is False
    restored = await _ok(client, ws.headers, action="restore", contact_ids=[*ids, "unknown-id"])
    assert restored["restored"] == 3
    assert await _status(client, ws.headers, a["id"]) == "subscribed"
    assert await _status(client, ws.headers, b["id"]) == "unsubscribed"
    assert await _status(client, ws.headers, c["id"]) == "bounced"
    nothing = await _ok(client, ws.headers, action="restore", contact_ids=[a["id"]])
    assert nothing == {"success": True, "restored": 0, "not_archived": 1}


async def test_restore_of_address_blocked_meanwhile_is_unsubscribed(client, ws):
    a, b = await _people(client, ws, "a@acme.io", "b@acme.io")
    await _ok(client, ws.headers, action="archive", contact_ids=[a["id"], b["id"]])
    await suppress(client, ws.headers, ["a@acme.io"], reason="unsubscribed")
    body = await _ok(client, ws.headers, action="restore", filter={"status": "archived"})
    assert body["restored"] == 2 and body["not_archived"] == 0
    assert await _status(client, ws.headers, a["id"]) == "unsubscribed"
    assert await _status(client, ws.headers, b["id"]) == "subscribed"


async def test_archived_contacts_do_not_count_toward_cap(client, factory):
    free = await factory.workspace("free")
    content = make_csv([["email"], *([f"c{i:03d}@acme.io"] for i in range(500))])
    await import_ok(client, free.headers, content)
    refused = await client.post(
        "/api/v1/contacts", json={"email": "new@acme.io"}, headers=free.headers
    )
    assert refused.status_code == 403
    await _ok(client, free.headers, action="archive", filter={"q": "c000@"})
    created = await client.post(
        "/api/v1/contacts", json={"email": "new@acme.io"}, headers=free.headers
    )
    assert created.status_code == 201


# ---------------------------------------------------------------- delete / erase


async def test_delete_counts_ids_submitted_and_suppresses(client, ws, db, factory):
    a, b = await _people(client, ws, "a@acme.io", "b@acme.io")
    other = await factory.workspace()
    theirs = await create_contact(client, other.headers, "theirs@acme.io")
    tag = await create_tag(client, ws.headers, "t")
    news = await create_list(client, ws.headers, "News")
    await _ok(client, ws.headers, action="add_tag", contact_ids=[a["id"]], tag_id=tag["id"])
    await _ok(client, ws.headers, action="add_to_list", contact_ids=[a["id"]], list_id=news["id"])
    body = await _ok(
        client,
        ws.headers,
        action="delete",
        contact_ids=[a["id"], theirs["id"], "no-such-id", 7],
    )
    assert body == {"success": True, "deleted": 3}
    assert await _status(client, ws.headers, a["id"]) is None
    assert await _status(client, ws.headers, b["id"]) == "subscribed"
    assert await _status(client, other.headers, theirs["id"]) == "subscribed"
    check = await suppression(client, ws.headers, "a@acme.io")
    assert check["suppressed"] is True and check["reason"] == "deleted"
    assert check["liftable"] is True
    rows = (await client.get("/api/v1/suppressions/list", headers=ws.headers)).json()
    row = rows["suppressions"][0]
    assert row["reason"] == "deleted" and row["email_masked"] and row["email_masked"] != "a@acme.io"
    assert row["liftable"] is True
    assert await list_members(client, ws.headers, news["id"]) == {}
    tags = (await client.get(f"/api/v1/tags/{tag['id']}", headers=ws.headers)).json()["tag"]
    assert tags["contact_count"] == 0
    events = await events_of(db, ws.workspace_id, "contact.deleted")
    assert len(events) == 1


async def test_delete_by_filter(client, ws):
    await _people(client, ws, "a@acme.io", "b@acme.io", "x@other.io")
    body = await _ok(client, ws.headers, action="delete", filter={"q": "@acme.io"})
    assert body == {"success": True, "deleted": 2}
    assert await total(client, ws.headers) == 1


async def test_erase_is_hash_only_and_never_liftable(client, ws, db):
    a, b = await _people(client, ws, "a@acme.io", "b@acme.io")
    body = await _ok(client, ws.headers, action="erase", contact_ids=[a["id"], b["id"]])
    assert body == {"success": True, "erased": 2}
    assert await total(client, ws.headers) == 0
    rows = (await client.get("/api/v1/suppressions/list", headers=ws.headers)).json()
    assert len(rows["suppressions"]) == 2
    for row in rows["suppressions"]:
        assert row["reason"] == "deleted"
        assert row["liftable"] is False
        assert row["email_masked"] is None and row["email_domain"] is None
    lift = await client.post(
        "/api/v1/suppressions/lift", json={"email": "a@acme.io"}, headers=ws.headers
    )
    assert lift.status_code == 409
    assert len(await events_of(db, ws.workspace_id, "contact.deleted")) == 2


# ---------------------------------------------------------------- tags


async def test_add_and_remove_tag_count_ids_submitted(client, ws, db):
    a, b, c = await _people(client, ws, "a@acme.io", "b@acme.io", "c@acme.io")
    tag = await create_tag(client, ws.headers, "VIP")
    await client.post(
        f"/api/v1/contacts/{a['id']}/tags", json={"tag_id": tag["id"]}, headers=ws.headers
    )
    body = await _ok(
        client,
        ws.headers,
        action="add_tag",
        contact_ids=[a["id"], b["id"], "unknown-id", 3],
        tag_id=tag["id"],
    )
    assert body == {"success": True, "tagged": 3}
    assert await total(client, ws.headers, tag=tag["id"]) == 2
    assert tag_names(await find(client, ws.headers, "b@acme.io")) == {"VIP"}
    added = await events_of(db, ws.workspace_id, "contact.tag_added")
    assert {e.data["contact"]["email"] for e in added} == {"a@acme.io", "b@acme.io"}
    removed = await _ok(
        client, ws.headers, action="remove_tag", contact_ids=[a["id"], c["id"]], tag_id=tag["id"]
    )
    assert removed == {"success": True, "untagged": 2}
    assert await total(client, ws.headers, tag=tag["id"]) == 1
    assert tag_names(await find(client, ws.headers, "a@acme.io")) == set()
    tag_removed = await events_of(db, ws.workspace_id, "contact.tag_removed")
    assert [e.data["contact"]["email"] for e in tag_removed] == ["a@acme.io"]


async def test_add_tag_by_filter(client, ws):
    await _people(client, ws, "a@acme.io", "b@acme.io", "c@other.io")
    tag = await create_tag(client, ws.headers, "acme")
    body = await _ok(
        client, ws.headers, action="add_tag", filter={"q": "acme.io"}, tag_id=tag["id"]
    )
    assert body == {"success": True, "tagged": 2}
    assert await total(client, ws.headers, tag=tag["id"]) == 2


# ---------------------------------------------------------------- lists


async def test_add_to_single_opt_in_list(client, ws, db):
    a, b, c, d = await _people(client, ws, "a@acme.io", "b@acme.io", "c@acme.io", "d@acme.io")
    await set_status(client, ws.headers, c["id"], "unsubscribed")
    await set_status(client, ws.headers, d["id"], "bounced")
    news = await create_list(client, ws.headers, "News")
    first = await _ok(
        client, ws.headers, action="add_to_list", contact_ids=[a["id"]], list_id=news["id"]
    )
    assert first["added"] == 1
    body = await _ok(
        client,
        ws.headers,
        action="add_to_list",
        contact_ids=[a["id"], b["id"], c["id"], d["id"], "unknown-id"],
        list_id=news["id"],
    )
    assert body["success"] is True
    assert body["added"] == 1
    assert body["already_member"] == 1
    assert body["skipped_not_subscribed"] == 2
    assert await list_members(client, ws.headers, news["id"]) == {
        "a@acme.io": "confirmed",
        "b@acme.io": "confirmed",
    }
    joined = await events_of(db, ws.workspace_id, "contact.list_joined")
    assert sorted(e.data["contact"]["email"] for e in joined) == ["a@acme.io", "b@acme.io"]
    assert all(e.list_id == news["id"] for e in joined)


async def test_add_to_double_opt_in_list_is_unconfirmed(client, ws, db):
    a, b = await _people(client, ws, "a@acme.io", "b@acme.io")
    dbl = await create_list(client, ws.headers, "Double", double_opt_in=True)
    body = await _ok(
        client, ws.headers, action="add_to_list", contact_ids=[a["id"], b["id"]], list_id=dbl["id"]
    )
    assert body["added"] == 2 and body["already_member"] == 0
    assert body["skipped_not_subscribed"] == 0
    assert await list_members(client, ws.headers, dbl["id"]) == {
        "a@acme.io": "unconfirmed",
        "b@acme.io": "unconfirmed",
    }
    assert await events_of(db, ws.workspace_id, "contact.list_joined") == []


async def test_add_to_list_on_free_plan_is_unconfirmed(client, factory, db):
    free = await factory.workspace("free")
    contact = await create_contact(client, free.headers, "f@acme.io")
    plain = await create_list(client, free.headers, "Plain")
    body = await _ok(
        client, free.headers, action="add_to_list", contact_ids=[contact["id"]], list_id=plain["id"]
    )
    assert body["added"] == 1
    assert await list_members(client, free.headers, plain["id"]) == {"f@acme.io": "unconfirmed"}
    assert await events_of(db, free.workspace_id, "contact.list_joined") == []


async def test_remove_from_list(client, ws, db):
    a, b, c = await _people(client, ws, "a@acme.io", "b@acme.io", "c@acme.io")
    news = await create_list(client, ws.headers, "News")
    await _ok(
        client, ws.headers, action="add_to_list", contact_ids=[a["id"], b["id"]], list_id=news["id"]
    )
    body = await _ok(
        client,
        ws.headers,
        action="remove_from_list",
        contact_ids=[a["id"], c["id"], "unknown-id"],
        list_id=news["id"],
    )
    assert body["success"] is True and body["removed"] == 1
    assert await list_members(client, ws.headers, news["id"]) == {"b@acme.io": "confirmed"}
    left = await events_of(db, ws.workspace_id, "contact.list_left")
    assert [e.data["contact"]["email"] for e in left] == ["a@acme.io"]
    assert left[0].list_id == news["id"]
    by_filter = await _ok(
        client,
        ws.headers,
        action="remove_from_list",
        filter={"list": news["id"]},
        list_id=news["id"],
    )
    assert by_filter["removed"] == 1
    assert len(await events_of(db, ws.workspace_id, "contact.list_left")) == 2


# ---------------------------------------------------------------- filter semantics


async def test_filter_leaves_archived_out_unless_asked(client, ws):
    a, b = await _people(client, ws, "a@acme.io", "b@acme.io")
    await _ok(client, ws.headers, action="archive", contact_ids=[a["id"]])
    body = await _ok(client, ws.headers, action="unsubscribe", filter={})
    assert body["unsubscribed"] == 1 and body["already_unsubscribed"] == 0
    assert await _status(client, ws.headers, a["id"]) == "archived"
    tag = await create_tag(client, ws.headers, "arch")
    tagged = await _ok(
        client, ws.headers, action="add_tag", filter={"status": "archived"}, tag_id=tag["id"]
    )
    assert tagged["tagged"] == 1
    assert tag_names(await find(client, ws.headers, "a@acme.io")) == {"arch"}
    assert tag_names(await find(client, ws.headers, "b@acme.io")) == set()
    only_archived = await _bulk(client, ws.headers, action="delete", filter={"status": "archived"})
    assert only_archived.json() == {"success": True, "deleted": 1}
    assert await _status(client, ws.headers, b["id"]) == "unsubscribed"


async def test_filter_keys(client, ws):
    a = await create_contact(client, ws.headers, "alpha@acme.io", first_name="Zed")
    b = await create_contact(client, ws.headers, "beta@acme.io", source="form")
    c = await create_contact(client, ws.headers, "gamma@acme.io")
    await set_status(client, ws.headers, c["id"], "unsubscribed")
    tag = await create_tag(client, ws.headers, "t")
    news = await create_list(client, ws.headers, "News")
    await _ok(client, ws.headers, action="add_tag", contact_ids=[a["id"]], tag_id=tag["id"])
    await _ok(client, ws.headers, action="add_to_list", contact_ids=[b["id"]], list_id=news["id"])
    mark = await create_tag(client, ws.headers, "mark")

    async def hits(filter_):
        await _ok(client, ws.headers, action="remove_tag", filter={}, tag_id=mark["id"])
        response = await _bulk(
            client, ws.headers, action="add_tag", filter=filter_, tag_id=mark["id"]
        )
        if response.status_code == 404:
            return []
        assert response.status_code == 200, response.text
        listing = await client.get(
            "/api/v1/contacts", params={"tag": mark["id"]}, headers=ws.headers
        )
        emails = [x["email"] for x in listing.json()["contacts"]]
        unsub = await client.get(
            "/api/v1/contacts",
            params={"tag": mark["id"], "status": "unsubscribed"},
            headers=ws.headers,
        )
        return sorted(set(emails) | {x["email"] for x in unsub.json()["contacts"]})

    assert await hits({"q": "ZED"}) == ["alpha@acme.io"]
    assert await hits({"q": "beta@"}) == ["beta@acme.io"]
    assert await hits({"status": "unsubscribed"}) == ["gamma@acme.io"]
    assert await hits({"tag": tag["id"]}) == ["alpha@acme.io"]
    assert await hits({"list": news["id"]}) == ["beta@acme.io"]
    assert await hits({"source": "form"}) == ["beta@acme.io"]
    assert await hits({"from": "2000-01-01"}) == ["alpha@acme.io", "beta@acme.io", "gamma@acme.io"]
    assert await hits({"to": "2000-01-01"}) == []
    day = a["created_at"][:10]
    everyone = ["alpha@acme.io", "beta@acme.io", "gamma@acme.io"]
    assert await hits({"to": day}) == everyone  # the whole day
    assert await hits({"from": day, "to": day}) == everyone
    assert await hits({"tag": tag["id"], "list": news["id"]}) == []


# ---------------------------------------------------------------- export


async def test_export_action_csv(client, ws):
    a = await create_contact(
        client,
        ws.headers,
        "a@acme.io",
        first_name="=cmd",
        last_name="Lee",
        language="de",
        custom_fields={"plan": "@pro"},
    )
    b = await create_contact(client, ws.headers, "b@acme.io", last_name="-5")
    await create_contact(client, ws.headers, "c@acme.io")
    tag = await create_tag(client, ws.headers, "VIP")
    await _ok(client, ws.headers, action="add_tag", contact_ids=[a["id"]], tag_id=tag["id"])
    response = await _bulk(client, ws.headers, action="export", contact_ids=[a["id"], b["id"], 5])
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    disposition = response.headers["content-disposition"]
    assert "attachment" in disposition and "contacts-export.csv" in disposition
    header, rows = read_export(response.text)
    assert header == [*BULK_COLUMNS, "custom.plan"]
    by_email = {r["email"]: r for r in rows}
    assert set(by_email) == {"a@acme.io", "b@acme.io"}
    assert by_email["a@acme.io"]["first_name"] == "'=cmd"
    assert by_email["a@acme.io"]["tags"] == "VIP"
    assert by_email["a@acme.io"]["language"] == "de"
    assert by_email["a@acme.io"]["custom.plan"] == "'@pro"
    assert by_email["b@acme.io"]["last_name"] == "'-5"
    assert by_email["b@acme.io"]["custom.plan"] == ""
    for line in response.text.splitlines():
        assert line.startswith('"') and line.endswith('"')


async def test_export_action_without_custom_fields(client, ws):
    await create_contact(client, ws.headers, "a@acme.io")
    response = await _bulk(client, ws.headers, action="export", filter={})
    assert response.status_code == 200
    header, rows = read_export(response.text)
    assert header == BULK_COLUMNS
    assert [r["email"] for r in rows] == ["a@acme.io"]


async def test_export_action_filter_and_archived(client, ws):
    a, _b = await _people(client, ws, "a@acme.io", "b@acme.io")
    await _ok(client, ws.headers, action="archive", contact_ids=[a["id"]])
    response = await _bulk(client, ws.headers, action="export", filter={})
    _, rows = read_export(response.text, strict=False)
    assert [r["email"] for r in rows] == ["b@acme.io"]
    response = await _bulk(client, ws.headers, action="export", filter={"status": "archived"})
    _, rows = read_export(response.text, strict=False)
    assert [(r["email"], r["status"]) for r in rows] == [("a@acme.io", "archived")]


async def test_export_action_refused_before_any_read_without_permission(client, ws, factory):
    await create_contact(client, ws.headers, "a@acme.io")
    headers = await factory.key(ws, "contacts:read,contacts:write")
    for body in (
        {"action": "export", "filter": {"q": "nobody-matches"}},
        {"action": "export", "filter": {}},
        {"action": "export", "contact_ids": ["unknown-id"]},
    ):
        response = await _bulk(client, headers, **body)
        assert response.status_code == 403
        assert response.json() == {"error": "Forbidden: contacts:export permission required"}


async def test_delete_never_downgrades_a_complaint(client, ws):
    contact = await create_contact(client, ws.headers, "spam@acme.io")
    await suppress(client, ws.headers, ["spam@acme.io"], reason="complained")
    body = await _ok(client, ws.headers, action="delete", contact_ids=[contact["id"]])
    assert body == {"success": True, "deleted": 1}
    check = await suppression(client, ws.headers, "spam@acme.io")
    assert check["reason"] == "complained"
    assert check["liftable"] is False


async def test_filter_acts_on_at_most_50000_contacts(client, factory):
    business = await factory.workspace("business")
    rows = "".join(f"u{i}@acme.io,\n" for i in range(50_000))
    content = f"email,status\n{rows}".encode()
    # One import takes at most 50,000 rows: the 50,001st contact comes in a second file.
    assert (await import_ok(client, business.headers, content))["imported"] == 50_000
    last = b"email,status\nlast@acme.io,unsubscribed\n"
    assert (await import_ok(client, business.headers, last))["imported"] == 1
    body = await _ok(client, business.headers, action="archive", filter={})
    assert body["archived"] == 50_000
    assert body["already_archived"] == 0
    assert await total(client, business.headers) == 1  # archived are left out
    assert await total(client, business.headers, status="archived") == 50_000
