"""POST /contacts/import against what the workspace already holds: existing contacts
(skip_duplicates), lists, the contact cap and the events written (rules 5, 7, 8, 9)."""

from __future__ import annotations

import pytest

from tests.spec_bulk_import.helpers import (
    CONTACT_EVENT_FIELDS,
    create_contact,
    create_list,
    create_tag,
    events_of,
    find,
    get,
    import_ok,
    import_rows,
    list_members,
    make_csv,
    set_status,
    suppress,
    suppression,
    tag_names,
    total,
    upload,
)


async def _existing(client, ws, email="old@acme.io", **extra):
    return await create_contact(
        client,
        ws.headers,
        email,
        first_name="Olga",
        last_name="Old",
        source="api",
        custom_fields={"plan": "basic", "city": "Oslo"},
        **extra,
    )


async def test_skip_duplicates_true_keeps_names_merges_the_rest(client, ws):
    old = await _existing(client, ws)
    kept_tag = await create_tag(client, ws.headers, "Existing")
    await client.post(
        f"/api/v1/contacts/{old['id']}/tags", json={"tag_id": kept_tag["id"]}, headers=ws.headers
    )
    rows = [
        ["email", "first_name", "last_name", "source", "tags", "plan", "team", "city"],
        ["OLD@acme.io", "New", "Name", "webinar", "fresh", "gold", "red", ""],
        ["new@acme.io", "Nia", "", "", "", "", "", ""],
    ]
    body = await import_rows(client, ws.headers, rows)
    assert body["imported"] == 1
    assert body["updated"] == 1
    contact = await get(client, ws.headers, "old@acme.io")
    assert contact["id"] == old["id"]
    assert (contact["first_name"], contact["last_name"]) == ("Olga", "Old")
    assert contact["source"] == "api"
    assert contact["status"] == "subscribed"
    assert tag_names(contact) == {"Existing", "fresh"}
    assert contact["custom_fields"] == {"plan": "gold", "city": "Oslo", "team": "red"}


async def test_skip_duplicates_is_the_default(client, ws):
    await _existing(client, ws)
    rows = [["email", "first_name"], ["old@acme.io", "Changed"]]
    await import_rows(client, ws.headers, rows)
    assert (await get(client, ws.headers, "old@acme.io"))["first_name"] == "Olga"


async def test_skip_duplicates_false_refreshes_names_and_source(client, ws):
    old = await _existing(client, ws)
    rows = [
        ["email", "first_name", "last_name", "source", "plan"],
        ["old@acme.io", "Nova", "Newer", "webinar", "gold"],
    ]
    body = await import_rows(client, ws.headers, rows, skip_duplicates="false")
    assert body["updated"] == 1 and body["imported"] == 0
    contact = await get(client, ws.headers, "old@acme.io")
    assert contact["id"] == old["id"]
    assert (contact["first_name"], contact["last_name"]) == ("Nova", "Newer")
    assert contact["source"] == "webinar"
    assert contact["custom_fields"] == {"plan": "gold", "city": "Oslo"}
    assert contact["status"] == "subscribed"


async def test_skip_duplicates_false_uses_request_source(client, ws):
    await _existing(client, ws)
    rows = [["email", "first_name"], ["old@acme.io", "Nova"]]
    await import_rows(client, ws.headers, rows, skip_duplicates="false", source="crm")
    contact = await get(client, ws.headers, "old@acme.io")
    assert contact["source"] == "crm"
    assert contact["first_name"] == "Nova"


@pytest.mark.parametrize("status", ["unsubscribed", "bounced", "complained"])
@pytest.mark.parametrize("skip", ["true", "false"])
async def test_subscribed_contact_escalated_by_the_file(client, ws, status, skip):
    await _existing(client, ws)
    rows = [["email", "status"], ["old@acme.io", status]]
    body = await import_rows(client, ws.headers, rows, skip_duplicates=skip)
    assert body["updated"] == 1
    contact = await get(client, ws.headers, "old@acme.io")
    assert contact["status"] == status
    assert contact["unsubscribed_at"] is not None
    assert (await suppression(client, ws.headers, "old@acme.io"))["suppressed"] is True


@pytest.mark.parametrize("current", ["unsubscribed", "bounced", "complained"])
@pytest.mark.parametrize("skip", ["true", "false"])
async def test_never_reverse_escalation(client, ws, current, skip):
    old = await _existing(client, ws)
    await set_status(client, ws.headers, old["id"], current)
    rows = [["email", "status", "first_name"], ["old@acme.io", "subscribed", "Back"]]
    body = await import_rows(client, ws.headers, rows, skip_duplicates=skip)
    assert body["updated"] == 1
    assert (await get(client, ws.headers, "old@acme.io"))["status"] == current


async def test_unsubscribed_contact_not_changed_to_bounced_lower_or_equal(client, ws):
    """Escalation applies to subscribed contacts: an unsubscribed one keeps its status."""
    old = await _existing(client, ws)
    await set_status(client, ws.headers, old["id"], "unsubscribed")
    await import_rows(client, ws.headers, [["email", "status"], ["old@acme.io", "unsubscribed"]])
    assert (await get(client, ws.headers, "old@acme.io"))["status"] == "unsubscribed"


async def test_existing_contact_tags_not_duplicated(client, ws):
    old = await _existing(client, ws)
    tag = await create_tag(client, ws.headers, "Gold")
    await client.post(
        f"/api/v1/contacts/{old['id']}/tags", json={"tag_id": tag["id"]}, headers=ws.headers
    )
    body = await import_rows(client, ws.headers, [["email", "tags"], ["old@acme.io", "gold;new"]])
    assert body["tags_created"] == 1
    assert body["tags_attached"] == 1
    contact = await get(client, ws.headers, "old@acme.io")
    assert sorted(t["name"] for t in contact["tags"]) == ["Gold", "new"]


async def test_contact_created_event_per_new_contact(client, ws, db):
    await _existing(client, ws)
    before = len(await events_of(db, ws.workspace_id, "contact.created"))
    rows = [
        ["email", "status"],
        ["n1@acme.io", "subscribed"],
        ["n2@acme.io", "unsubscribed"],
        ["old@acme.io", "subscribed"],
        ["bad", ""],
    ]
    body = await import_rows(client, ws.headers, rows)
    assert body["imported"] == 2
    created = (await events_of(db, ws.workspace_id, "contact.created"))[before:]
    assert sorted(e.data["contact"]["email"] for e in created) == ["n1@acme.io", "n2@acme.io"]
    n1 = await get(client, ws.headers, "n1@acme.io")
    event = next(e for e in created if e.data["contact"]["email"] == "n1@acme.io")
    assert event.data["contact"]["id"] == n1["id"]
    assert event.data["contact"]["status"] == "subscribed"
    assert set(event.data["contact"]) >= CONTACT_EVENT_FIELDS


async def test_list_id_single_opt_in_adds_confirmed(client, ws):
    news = await create_list(client, ws.headers, "News")
    old = await _existing(client, ws)
    gone = await create_contact(client, ws.headers, "gone@acme.io")
    await set_status(client, ws.headers, gone["id"], "unsubscribed")
    await suppress(client, ws.headers, ["blocked@acme.io"])
    rows = [
        ["email", "status"],
        ["l1@acme.io", "subscribed"],
        ["l2@acme.io", ""],
        ["l3@acme.io", "unsubscribed"],
        ["old@acme.io", ""],
        ["gone@acme.io", "subscribed"],
        ["blocked@acme.io", "subscribed"],
    ]
    body = await import_rows(client, ws.headers, rows, list_id=news["id"])
    assert body["list_added"] == 3
    assert body["list_pending_confirmation"] == 0
    members = await list_members(client, ws.headers, news["id"])
    assert members == {
        "l1@acme.io": "confirmed",
        "l2@acme.io": "confirmed",
        old["email"]: "confirmed",
    }


async def test_list_id_already_member_not_counted_twice(client, ws):
    news = await create_list(client, ws.headers, "News")
    await import_rows(client, ws.headers, [["email"], ["m1@acme.io"]], list_id=news["id"])
    body = await import_rows(
        client, ws.headers, [["email"], ["m1@acme.io"], ["m2@acme.io"]], list_id=news["id"]
    )
    assert body["list_added"] == 1
    assert set(await list_members(client, ws.headers, news["id"])) == {"m1@acme.io", "m2@acme.io"}


async def test_list_id_double_opt_in_adds_unconfirmed(client, ws, db):
    dbl = await create_list(client, ws.headers, "Double", double_opt_in=True)
    rows = [["email"], ["d1@acme.io"], ["d2@acme.io"]]
    body = await import_rows(client, ws.headers, rows, list_id=dbl["id"])
    assert body["list_added"] == 0
    assert body["list_pending_confirmation"] == 2
    assert await list_members(client, ws.headers, dbl["id"]) == {
        "d1@acme.io": "unconfirmed",
        "d2@acme.io": "unconfirmed",
    }
    assert await events_of(db, ws.workspace_id, "contact.list_joined") == []


async def test_list_id_on_free_plan_adds_unconfirmed(client, factory):
    free = await factory.workspace("free")
    single = await create_list(client, free.headers, "Free list")
    body = await import_rows(
        client, free.headers, [["email"], ["fp@acme.io"]], list_id=single["id"]
    )
    assert body["list_added"] == 0
    assert body["list_pending_confirmation"] == 1
    assert await list_members(client, free.headers, single["id"]) == {"fp@acme.io": "unconfirmed"}


async def test_unknown_list_is_404_and_nothing_written(client, ws, factory):
    other = await factory.workspace()
    foreign = await create_list(client, other.headers, "Theirs")
    for list_id in ("no-such-list", foreign["id"]):
        response = await upload(
            client, ws.headers, make_csv([["email"], ["x@acme.io"]]), list_id=list_id
        )
        assert response.status_code == 404
        assert response.json() == {"error": "List not found"}
    assert await find(client, ws.headers, "x@acme.io") is None


async def test_free_plan_cap_counts_only_subscribed_rows(client, factory):
    free = await factory.workspace("free")
    first = make_csv([["email"], *([f"c{i:03d}@acme.io"] for i in range(499))])
    body = await import_ok(client, free.headers, first)
    assert body["imported"] == 499
    over = make_csv(
        [
            ["email", "status", "tags"],
            ["over1@acme.io", "subscribed", "capped"],
            ["over2@acme.io", "", "capped"],
            ["quiet@acme.io", "unsubscribed", "capped"],
        ]
    )
    response = await upload(
        client, free.headers, over, new_fields=[{"key": "score", "type": "number"}], tags="batch"
    )
    assert response.status_code == 403
    assert response.json()["error"] == (
        "Contact limit reached (500 on the Free plan). Upgrade to add more."
    )
    for email in ("over1@acme.io", "over2@acme.io", "quiet@acme.io"):
        assert await find(client, free.headers, email) is None
    tags = await client.get("/api/v1/tags", headers=free.headers)
    assert tags.json()["tags"] == []
    registry = await client.get("/api/v1/custom-fields", headers=free.headers)
    assert registry.json()["fields"] == []
    assert await total(client, free.headers) == 499
    # One subscribed slot left: unsubscribed / bounced rows do not count toward the cap.
    fits = make_csv(
        [
            ["email", "status"],
            ["last@acme.io", "subscribed"],
            ["u1@acme.io", "unsubscribed"],
            ["u2@acme.io", "bounced"],
            ["u3@acme.io", "complained"],
        ]
    )
    body = await import_ok(client, free.headers, fits)
    assert body["imported"] == 4
    assert await total(client, free.headers, status="subscribed") == 500


async def test_existing_contacts_do_not_use_cap_slots(client, factory):
    free = await factory.workspace("free")
    await import_ok(
        client, free.headers, make_csv([["email"], *([f"e{i}@acme.io"] for i in range(500))])
    )
    again = make_csv([["email", "plan"], ["e1@acme.io", "gold"], ["e2@acme.io", "gold"]])
    body = await import_ok(client, free.headers, again)
    assert body["updated"] == 2 and body["imported"] == 0


async def test_suppressed_subscribed_rows_do_not_count_toward_cap(client, factory):
    free = await factory.workspace("free")
    await import_ok(
        client, free.headers, make_csv([["email"], *([f"s{i}@acme.io"] for i in range(500))])
    )
    await client.post(
        "/api/v1/suppressions", json={"entries": ["blocked@acme.io"]}, headers=free.headers
    )
    body = await import_ok(client, free.headers, make_csv([["email"], ["blocked@acme.io"]]))
    assert body["imported"] == 1 and body["suppressed"] == 1
    assert (await get(client, free.headers, "blocked@acme.io"))["status"] == "unsubscribed"


async def test_archived_contacts_do_not_count_toward_cap(client, factory):
    free = await factory.workspace("free")
    await import_ok(
        client, free.headers, make_csv([["email"], *([f"a{i}@acme.io"] for i in range(500))])
    )
    one = await get(client, free.headers, "a1@acme.io")
    archived = await client.post(
        "/api/v1/contacts/bulk",
        json={"action": "archive", "contact_ids": [one["id"]]},
        headers=free.headers,
    )
    assert archived.status_code == 200
    body = await import_ok(client, free.headers, make_csv([["email"], ["room@acme.io"]]))
    assert body["imported"] == 1


async def test_cap_is_pooled_across_the_accounts_workspaces(client, factory):
    free = await factory.workspace("free")
    sibling = await factory.workspace(account_id=free.account_id)
    await import_ok(
        client, free.headers, make_csv([["email"], *([f"p{i}@acme.io"] for i in range(499))])
    )
    response = await upload(
        client, sibling.headers, make_csv([["email"], ["s1@acme.io"], ["s2@acme.io"]])
    )
    assert response.status_code == 403
    assert response.json()["error"] == (
        "Contact limit reached (500 on the Free plan). Upgrade to add more."
    )
    assert await total(client, sibling.headers) == 0
    body = await import_ok(client, sibling.headers, make_csv([["email"], ["s1@acme.io"]]))
    assert body["imported"] == 1


async def test_slots_freed_by_bulk_and_import_escalation(client, factory):
    free = await factory.workspace("free")
    await import_ok(
        client, free.headers, make_csv([["email"], *([f"f{i:03d}@acme.io"] for i in range(500))])
    )
    one_more = make_csv([["email"], ["extra1@acme.io"]])
    assert (await upload(client, free.headers, one_more)).status_code == 403
    # An import that unsubscribes an existing contact frees its slot.
    await import_ok(
        client, free.headers, make_csv([["email", "status"], ["f000@acme.io", "unsubscribed"]])
    )
    assert (await import_ok(client, free.headers, one_more))["imported"] == 1
    two_more = make_csv([["email"], ["extra2@acme.io"]])
    assert (await upload(client, free.headers, two_more)).status_code == 403
    # So does a bulk unsubscribe, and a bulk delete.
    unsub = await client.post(
        "/api/v1/contacts/bulk",
        json={"action": "unsubscribe", "filter": {"q": "f001@"}},
        headers=free.headers,
    )
    assert unsub.status_code == 200 and unsub.json()["unsubscribed"] == 1
    assert (await import_ok(client, free.headers, two_more))["imported"] == 1
    three_more = make_csv([["email"], ["extra3@acme.io"]])
    assert (await upload(client, free.headers, three_more)).status_code == 403
    deleted = await client.post(
        "/api/v1/contacts/bulk",
        json={"action": "delete", "filter": {"q": "f002@"}},
        headers=free.headers,
    )
    assert deleted.status_code == 200
    assert (await import_ok(client, free.headers, three_more))["imported"] == 1
    assert await total(client, free.headers, status="subscribed") == 500
