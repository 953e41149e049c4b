"""Segments through the API: create, read, rename, change the rule, delete, page; the shape of
a rule and its refusals (each naming its place, nothing stored); permissions; previews, which
are reads (never counted against the hourly write limit, never audited)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, insert, select

from mailroom.models import RateLimitHit
from tests.segments.helpers import cond, contact, rule, set_columns

SEGMENT_KEYS = {"id", "name", "rules", "created_at", "updated_at"}
SUBSCRIBED = rule(cond("status", "eq", "subscribed"))


async def create(client, headers, name, rules=SUBSCRIBED):
    response = await client.post(
        "/api/v1/segments", json={"name": name, "rules": rules}, headers=headers
    )
    assert response.status_code == 201, response.text
    return response.json()["segment"]


async def listed(client, headers, **params):
    response = await client.get("/api/v1/segments", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def test_create_read_update_delete(client, ws):
    created = await create(client, ws.headers, "  Active   people ")
    assert set(created) == SEGMENT_KEYS
    assert created["name"] == "Active people"
    assert created["rules"] == SUBSCRIBED
    got = await client.get(f"/api/v1/segments/{created['id']}", headers=ws.headers)
    assert got.status_code == 200
    assert got.json() == {"segment": created}

    new_rules = {"conditions": [cond("email", "contains", "@")]}  # match defaults to all
    patched = await client.patch(
        f"/api/v1/segments/{created['id']}",
        json={"name": "Everyone", "rules": new_rules},
        headers=ws.headers,
    )
    assert patched.status_code == 200, patched.text
    segment = patched.json()["segment"]
    assert segment["name"] == "Everyone"
    assert segment["rules"] == {"match": "all", "conditions": new_rules["conditions"]}
    assert segment["updated_at"] >= created["updated_at"]
    again = await client.get(f"/api/v1/segments/{created['id']}", headers=ws.headers)
    assert again.json() == {"segment": segment}

    deleted = await client.delete(f"/api/v1/segments/{created['id']}", headers=ws.headers)
    assert deleted.status_code == 200
    assert deleted.json() == {"success": True, "id": created["id"]}
    gone = await client.get(f"/api/v1/segments/{created['id']}", headers=ws.headers)
    assert gone.status_code == 404
    assert gone.json() == {"error": "Segment not found"}


async def test_listing_is_paged_newest_first_and_searchable(client, ws):
    made = [await create(client, ws.headers, f"Segment {i}") for i in range(5)]
    first = await listed(client, ws.headers, limit=2)
    assert [s["id"] for s in first["segments"]] == [made[4]["id"], made[3]["id"]]
    assert first["pagination"] == {"page": 1, "limit": 2, "total": 5, "total_pages": 3}
    last = await listed(client, ws.headers, limit=2, page=3)
    assert [s["id"] for s in last["segments"]] == [made[0]["id"]]
    found = await listed(client, ws.headers, q="MENT 3")
    assert [s["name"] for s in found["segments"]] == ["Segment 3"]


async def test_names_are_unique_ignoring_case(client, ws):
    original = await create(client, ws.headers, "Buyers")
    response = await client.post(
        "/api/v1/segments", json={"name": " BUYERS ", "rules": SUBSCRIBED}, headers=ws.headers
    )
    assert response.status_code == 409
    assert response.json() == {
        "error": "A segment with this name already exists",
        "id": original["id"],
    }
    other = await create(client, ws.headers, "Others")
    renamed = await client.patch(
        f"/api/v1/segments/{other['id']}", json={"name": "buyers"}, headers=ws.headers
    )
    assert renamed.status_code == 409
    assert (await listed(client, ws.headers))["pagination"]["total"] == 2


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"rules": SUBSCRIBED}, "name is required"),
        ({"name": 5, "rules": SUBSCRIBED}, "name must be a string"),
        ({"name": "n" * 101, "rules": SUBSCRIBED}, "name must be 100 characters or fewer"),
        ({"name": "S"}, "rules is required"),
        ({"name": "S", "rules": []}, "rules: must be an object"),
        ({"name": "S", "rules": {"conditions": []}}, "conditions: must be a non-empty array"),
        (
            {"name": "S", "rules": {"match": "some", "conditions": [cond("email", "is_set")]}},
            "match: must be all or any",
        ),
        (
            {"name": "S", "rules": {"conditions": [cond("email", "is_set")], "x": 1}},
            "rules: unknown key(s): x",
        ),
        (
            {"name": "S", "rules": rule("email")},
            "conditions[0]: must be a condition {field, op, value} or a rule {match, conditions}",
        ),
        (
            {"name": "S", "rules": rule({"op": "eq", "value": "x"})},
            "conditions[0].field: is required",
        ),
        (
            {"name": "S", "rules": rule({"field": "email", "value": "x"})},
            "conditions[0].op: is required",
        ),
        (
            {
                "name": "S",
                "rules": rule(
                    cond("email", "is_set"), {"field": "email", "op": "eq", "value": "x", "y": 2}
                ),
            },
            "conditions[1]: unknown key(s): y",
        ),
        (
            {"name": "S", "rules": rule(cond("phone", "eq", "1"))},
            "conditions[0].field: unknown field phone",
        ),
        (
            {
                "name": "S",
                "rules": rule(
                    cond("email", "is_set"), cond("email", "is_set"), cond("first_name", "gt", 5)
                ),
            },
            "conditions[2].op: gt is not valid for a text field",
        ),
        (
            {"name": "S", "rules": rule(cond("created_at", "contains", "x"))},
            "conditions[0].op: contains is not valid for a date field",
        ),
        (
            {"name": "S", "rules": rule(cond("email", "eq", ""))},
            "conditions[0].value: must be a non-empty string of at most 254 characters",
        ),
        (
            {"name": "S", "rules": rule(cond("email", "eq", "x" * 255))},
            "conditions[0].value: must be a non-empty string of at most 254 characters",
        ),
        (
            {"name": "S", "rules": rule(cond("email", "in", "x"))},
            "conditions[0].value: must be an array of 1 to 100 strings",
        ),
        (
            {"name": "S", "rules": rule(cond("email", "in", ["x"] * 101))},
            "conditions[0].value: must be an array of 1 to 100 strings",
        ),
        (
            {"name": "S", "rules": rule(cond("email", "in", ["x", 3]))},
            "conditions[0].value[1]: must be a non-empty string of at most 254 characters",
        ),
        (
            {"name": "S", "rules": rule(cond("email", "is_set", "x"))},
            "conditions[0].value: is_set takes no value",
        ),
        (
            {"name": "S", "rules": rule(cond("status", "eq", "gone"))},
            "conditions[0].value: must be one of subscribed, unsubscribed, bounced, complained, archived",
        ),
        (
            {"name": "S", "rules": rule(cond("created_at", "before", "15/03/2024"))},
            "conditions[0].value: must be an ISO date (YYYY-MM-DD) or date-time",
        ),
        (
            {"name": "S", "rules": rule(cond("created_at", "within_last", 0))},
            "conditions[0].value: must be a whole number of days from 1 to 36500",
        ),
        (
            {"name": "S", "rules": rule(cond("created_at", "within_last", 2.5))},
            "conditions[0].value: must be a whole number of days from 1 to 36500",
        ),
        (
            {"name": "S", "rules": rule(cond("created_at", "within_last", True))},
            "conditions[0].value: must be a whole number of days from 1 to 36500",
        ),
        (
            {
                "name": "S",
                "rules": rule(rule(cond("email", "is_set"), rule(cond("email", "in", [1])))),
            },
            "conditions[0].conditions[1].conditions[0].value[0]: must be a non-empty string of at "
            "most 254 characters",
        ),
        (
            {"name": "S", "rules": rule(rule(rule(rule(cond("email", "is_set")))))},
            "conditions[0].conditions[0].conditions[0]: rules nest at most 3 levels deep",
        ),
        (
            {
                "name": "S",
                "rules": rule(
                    *[cond("email", "is_set")] * 30, rule(*[cond("email", "is_set")] * 21)
                ),
            },
            "conditions: a rule has at most 50 conditions in all",
        ),
    ],
)
async def test_bad_rules_are_400_naming_the_place_and_store_nothing(client, ws, body, message):
    response = await client.post("/api/v1/segments", json=body, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert (await listed(client, ws.headers))["segments"] == []
    if "rules" in body and "name" in body and body["name"] == "S":
        preview = await client.post(
            "/api/v1/segments/preview", json={"rules": body["rules"]}, headers=ws.headers
        )
        assert preview.status_code == 400
        assert preview.json() == {"error": message}


async def test_fifty_conditions_over_three_levels_are_accepted(client, ws):
    rules = rule(
        *[cond("email", "is_set")] * 30,
        rule(*[cond("email", "is_set")] * 19, rule(cond("email", "is_set"))),
    )
    created = await create(client, ws.headers, "Big", rules)
    assert created["rules"] == rules


async def test_a_bad_update_changes_nothing(client, ws):
    segment = await create(client, ws.headers, "Keep")
    cases = [
        ({}, "No updatable fields provided"),
        (
            {"rules": rule(cond("first_name", "gt", 1))},
            "conditions[0].op: gt is not valid for a text field",
        ),
        ({"name": ""}, "name is required"),
        ({"name": "New", "rules": None}, "rules is required"),
        ({"colour": "red"}, "Unknown field(s): colour"),
    ]
    for body, message in cases:
        response = await client.patch(
            f"/api/v1/segments/{segment['id']}", json=body, headers=ws.headers
        )
        assert response.status_code == 400, body
        assert response.json()["error"].startswith(message), (body, response.json())
    again = await client.get(f"/api/v1/segments/{segment['id']}", headers=ws.headers)
    assert again.json() == {"segment": segment}


async def test_another_workspaces_segment_is_not_found(client, ws, factory):
    other = await factory.workspace("pro")
    theirs = await create(client, other.headers, "Theirs")
    for method, path, body in (
        ("GET", f"/api/v1/segments/{theirs['id']}", None),
        ("GET", f"/api/v1/segments/{theirs['id']}/preview", None),
        ("PATCH", f"/api/v1/segments/{theirs['id']}", {"name": "Mine"}),
        ("DELETE", f"/api/v1/segments/{theirs['id']}", None),
        ("GET", "/api/v1/segments/not-an-id/preview", None),
    ):
        response = await client.request(method, path, json=body, headers=ws.headers)
        assert response.status_code == 404, (method, path)
        assert response.json() == {"error": "Segment not found"}
    assert (await listed(client, ws.headers))["segments"] == []
    assert (await listed(client, other.headers))["segments"] == [theirs]


async def test_permissions(client, ws, factory):
    segment = await create(client, ws.headers, "S")
    reader = await factory.key(ws, "segments:read")
    nobody = await factory.key(ws, "contacts:read")
    for method, path, body in (
        ("POST", "/api/v1/segments", {"name": "T", "rules": SUBSCRIBED}),
        ("PATCH", f"/api/v1/segments/{segment['id']}", {"name": "T"}),
        ("DELETE", f"/api/v1/segments/{segment['id']}", None),
    ):
        response = await client.request(method, path, json=body, headers=reader)
        assert response.status_code == 403
        assert response.json() == {"error": "Forbidden: segments:write permission required"}
    for method, path, body in (
        ("GET", "/api/v1/segments", None),
        ("GET", f"/api/v1/segments/{segment['id']}", None),
        ("GET", f"/api/v1/segments/{segment['id']}/preview", None),
        ("POST", "/api/v1/segments/preview", {"rules": SUBSCRIBED}),
    ):
        assert (await client.request(method, path, json=body, headers=reader)).status_code == 200
        response = await client.request(method, path, json=body, headers=nobody)
        assert response.status_code == 403
        assert response.json() == {"error": "Forbidden: segments:read permission required"}
    assert (await listed(client, ws.headers))["segments"] == [segment]


async def test_preview_counts_all_and_shows_ten_newest_first(client, ws, db):
    start = datetime(2026, 1, 1, tzinfo=UTC)
    ids = []
    for i in range(12):
        contact_id = await contact(client, ws.headers, f"p{i}@example.org", first_name=f"P{i}")
        await set_columns(db, contact_id, created_at=start + timedelta(minutes=i))
        ids.append(contact_id)
    await set_columns(db, ids[0], status="archived", previous_status="subscribed")
    rules = rule(cond("email", "starts_with", "p"))
    response = await client.post(
        "/api/v1/segments/preview", json={"rules": rules}, headers=ws.headers
    )
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 12  # every status, archived included
    assert [c["id"] for c in body["contacts"]] == ids[::-1][:10]
    listed_contacts = await client.get("/api/v1/contacts", params={"limit": 1}, headers=ws.headers)
    shown = listed_contacts.json()["contacts"][0]
    assert body["contacts"][0] == shown  # the contact list's own shape
    segment = await create(client, ws.headers, "P", rules)
    saved = await client.get(f"/api/v1/segments/{segment['id']}/preview", headers=ws.headers)
    assert saved.json() == body
    nobody = await client.post(
        "/api/v1/segments/preview",
        json={"rules": rule(cond("email", "eq", "none@example.org"))},
        headers=ws.headers,
    )
    assert nobody.json() == {"count": 0, "contacts": []}


async def test_previews_are_reads_never_counted_nor_audited(client, factory, db):
    free = await factory.workspace("free")
    segment = await create(client, free.headers, "S")
    async with db.transaction() as session:  # the rest of the hour's 120 writes, spent
        now = datetime.now(UTC)
        await session.execute(
            insert(RateLimitHit), [{"key": f"writes:{free.workspace_id}", "at": now}] * 119
        )
    refused = await client.post(
        "/api/v1/segments", json={"name": "T", "rules": SUBSCRIBED}, headers=free.headers
    )
    assert refused.status_code == 429
    for _ in range(3):
        posted = await client.post(
            "/api/v1/segments/preview", json={"rules": SUBSCRIBED}, headers=free.headers
        )
        assert posted.status_code == 200, posted.text
        got = await client.get(f"/api/v1/segments/{segment['id']}/preview", headers=free.headers)
        assert got.status_code == 200
    async with db.session() as session:
        hits = await session.scalar(
            select(func.count()).where(RateLimitHit.key == f"writes:{free.workspace_id}")
        )
    assert hits == 120
    log = await client.get("/api/v1/account/audit-log", headers=free.headers)
    # The one successful write; previews leave nothing (a 429 is refused before any audit).
    assert [(e["operation"], e["status"]) for e in log.json()["entries"]] == [
        ("create_segment", 201)
    ]
