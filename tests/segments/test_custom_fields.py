"""Segment rules over custom fields: each registered type with its operators, values stored
before a field was typed (those that fit match as the registry reads them, the others match
nothing and never break the query), unregistered keys compared as text, and a deleted or
retyped field's rules left in place, matching nobody."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from tests.segments.helpers import cond, contact, field, matched, preview, rule, set_columns

P1, P2, P3, P4, P5 = (f"p{i}@example.org" for i in range(1, 6))


def _day(year: int, shift: int) -> date:
    """Today's date moved by `shift` days, in `year` (a leap year: 29 February exists)."""
    moved = datetime.now(UTC).date() + timedelta(days=shift)
    return date(year, moved.month, moved.day)


async def _people(client, ws, db) -> dict[str, str]:
    await field(client, ws.headers, "score", "number")
    await field(client, ws.headers, "vip", "boolean")
    await field(client, ws.headers, "birthday", "date")
    await field(client, ws.headers, "joined", "date")
    await field(client, ws.headers, "plan", "dropdown", options=["Free", "Pro", "Business"])
    await field(client, ws.headers, "nickname", "text")
    ids = {}
    ids[P1] = await contact(
        client,
        ws.headers,
        P1,
        custom_fields={
            "score": 10,
            "vip": True,
            "birthday": _day(1988, -20).isoformat(),
            "plan": "Pro",
            "nickname": "Ace",
            "fav-color": "Red",
            "färg": "Blå",
        },
    )
    ids[P2] = await contact(client, ws.headers, P2, custom_fields={"nickname": "ace king"})
    ids[P3] = await contact(client, ws.headers, P3, custom_fields={"vip": False})
    ids[P4] = await contact(
        client,
        ws.headers,
        P4,
        custom_fields={"joined": (datetime.now(UTC).date() - timedelta(days=2)).isoformat()},
    )
    ids[P5] = await contact(
        client,
        ws.headers,
        P5,
        custom_fields={"score": -3.5, "birthday": _day(1980, 3).isoformat(), "plan": "Business"},
    )
    # Stored before the fields were typed (stored values are never rewritten): these fit...
    birthday = _day(1984, 40)
    await set_columns(
        db,
        ids[P2],
        custom_fields={
            "score": " 42 ",
            "vip": "Yes",
            "birthday": f"{birthday.day}/{birthday.month}/{birthday.year}",
            "plan": "pro",
            "nickname": "ace king",
        },
    )
    # ... these do not.
    await set_columns(
        db,
        ids[P3],
        custom_fields={"score": "abc", "vip": False, "birthday": "2023-02-30", "plan": "Gold"},
    )
    await set_columns(
        db,
        ids[P5],
        custom_fields={
            "score": -3.5,
            "vip": "no",
            "birthday": _day(1980, 3).isoformat(),
            "plan": "Business",
        },
    )
    return ids


CASES = [
    (cond("custom_fields.score", "gt", 5), {P1, P2}),
    (cond("custom_fields.score", "gte", 10), {P1, P2}),
    (cond("custom_fields.score", "lt", 0), {P5}),
    (cond("custom_fields.score", "lte", 10), {P1, P5}),
    (cond("custom_fields.score", "eq", 42), {P2}),
    (cond("custom_fields.score", "eq", -3.5), {P5}),
    (cond("custom_fields.score", "neq", 10), {P2, P4, P5}),  # p3's "abc" fits no number
    (cond("custom_fields.vip", "is_true"), {P1, P2}),
    (cond("custom_fields.vip", "is_false"), {P3, P5}),  # only a stored false, not a missing one
    (cond("custom_fields.birthday", "before", "1983-01-01"), {P5}),
    (cond("custom_fields.birthday", "before", "1988-01-01"), {P2, P5}),
    (cond("custom_fields.birthday", "after", "1986-01-01"), {P1}),
    (cond("custom_fields.birthday", "after", "1970-01-01T23:00:00-05:00"), {P1, P2, P5}),
    (cond("custom_fields.birthday", "within_last", 36_500), {P1, P2, P5}),
    (cond("custom_fields.birthday", "anniversary_in", 7), {P5}),
    (cond("custom_fields.birthday", "anniversary_in", 45), {P2, P5}),
    (cond("custom_fields.birthday", "anniversary_in", 366), {P1, P2, P5}),
    (cond("custom_fields.joined", "within_last", 7), {P4}),
    (cond("custom_fields.joined", "within_last", 1), set()),
    (cond("custom_fields.plan", "eq", "pro"), {P1, P2}),
    (cond("custom_fields.plan", "neq", "Pro"), {P4, P5}),  # p3's "Gold" fits no option
    (cond("custom_fields.plan", "in", ["business", "FREE"]), {P5}),
    (cond("custom_fields.nickname", "eq", "ACE"), {P1}),
    (cond("custom_fields.nickname", "contains", "King"), {P2}),
    (cond("custom_fields.nickname", "starts_with", "ace"), {P1, P2}),
    (cond("custom_fields.nickname", "is_not_set"), {P3, P4, P5}),
    (cond("custom_fields.nickname", "neq", "ace"), {P2, P3, P4, P5}),
    (cond("custom_fields.nickname", "in", ["x", "ACE KING"]), {P2}),
    # Keys no field can name (merge tags cannot use them) are compared as text.
    (cond("custom_fields.fav-color", "eq", "red"), {P1}),
    (cond("custom_fields.färg", "eq", "blå"), {P1}),
    (cond("custom_fields.färg", "is_not_set"), {P2, P3, P4, P5}),
    # A key nobody carries is unregistered text too.
    (cond("custom_fields.unheard_of", "neq", "x"), {P1, P2, P3, P4, P5}),
]


async def test_each_type_and_operator(client, ws, db):
    await _people(client, ws, db)
    wrong = []
    for condition, expected in CASES:
        got = await matched(client, ws.headers, rule(condition))
        if got != expected:
            wrong.append((condition, sorted(got), sorted(expected)))
    assert wrong == []


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        (
            cond("custom_fields.score", "contains", "1"),
            "conditions[0].op: contains is not valid for a number field (custom_fields.score)",
        ),
        (
            cond("custom_fields.score", "gt", "5"),
            "conditions[0].value: must be a number (custom_fields.score)",
        ),
        (
            cond("custom_fields.vip", "eq", True),
            "conditions[0].op: eq is not valid for a boolean field (custom_fields.vip)",
        ),
        (
            cond("custom_fields.vip", "is_true", True),
            "conditions[0].value: is_true takes no value (custom_fields.vip)",
        ),
        (
            cond("custom_fields.plan", "eq", "Gold"),
            "conditions[0].value: must be one of Free, Pro, Business (custom_fields.plan)",
        ),
        (
            cond("custom_fields.plan", "in", ["Pro", "Gold"]),
            "conditions[0].value[1]: must be one of Free, Pro, Business (custom_fields.plan)",
        ),
        (
            cond("custom_fields.nickname", "gt", 5),
            "conditions[0].op: gt is not valid for a text field (custom_fields.nickname)",
        ),
        (
            cond("custom_fields.nickname", "eq", 5),
            "conditions[0].value: must be a non-empty string of at most 254 characters "
            "(custom_fields.nickname)",
        ),
        (
            cond("custom_fields.birthday", "anniversary_in", 400),
            "conditions[0].value: must be a whole number of days from 0 to 366 "
            "(custom_fields.birthday)",
        ),
        (
            cond("custom_fields.birthday", "before", "15/03/1990"),
            "conditions[0].value: must be an ISO date (YYYY-MM-DD) or date-time "
            "(custom_fields.birthday)",
        ),
        (
            cond("custom_fields.birthday", "not_within_last", 3),
            "conditions[0].op: not_within_last is not valid for a date field "
            "(custom_fields.birthday)",
        ),
        (
            cond("custom_fields." + "k" * 65, "eq", "x"),
            "conditions[0].field: custom field keys are 1-64 characters",
        ),
    ],
)
async def test_a_value_or_operator_the_type_does_not_take_is_400(client, ws, condition, message):
    await field(client, ws.headers, "score", "number")
    await field(client, ws.headers, "vip", "boolean")
    await field(client, ws.headers, "birthday", "date")
    await field(client, ws.headers, "plan", "dropdown", options=["Free", "Pro", "Business"])
    await field(client, ws.headers, "nickname", "text")
    for method, path in (("POST", "/api/v1/segments"), ("POST", "/api/v1/segments/preview")):
        response = await client.request(
            method, path, json={"name": "S", "rules": rule(condition)}, headers=ws.headers
        )
        assert response.status_code == 400
        assert response.json() == {"error": message}
    listed = await client.get("/api/v1/segments", headers=ws.headers)
    assert listed.json()["segments"] == []


async def test_a_deleted_field_stops_matching_and_a_retyped_one_too(client, ws, db):
    await _people(client, ws, db)
    rules = rule(cond("custom_fields.score", "neq", 10), match="any")
    created = await client.post(
        "/api/v1/segments", json={"name": "Not ten", "rules": rules}, headers=ws.headers
    )
    assert created.status_code == 201, created.text
    segment = created.json()["segment"]
    assert segment["rules"] == rules  # what is stored beside it is never shown
    nick = await client.post(
        "/api/v1/segments",
        json={"name": "Aces", "rules": rule(cond("custom_fields.nickname", "contains", "ace"))},
        headers=ws.headers,
    )
    assert nick.status_code == 201, nick.text

    async def count(segment_id: str) -> int:
        response = await client.get(f"/api/v1/segments/{segment_id}/preview", headers=ws.headers)
        assert response.status_code == 200, response.text
        return int(response.json()["count"])

    assert await count(segment["id"]) == 3
    assert await count(nick.json()["segment"]["id"]) == 2
    deleted = await client.delete("/api/v1/custom-fields/score", headers=ws.headers)
    assert deleted.status_code == 200, deleted.text
    # Left in place, matching nobody (not even through `neq`, which matches a missing value).
    assert await count(segment["id"]) == 0
    still = await client.get(f"/api/v1/segments/{segment['id']}", headers=ws.headers)
    assert still.json()["segment"]["rules"] == rules
    # A new rule on the key reads it as unregistered text (and everyone lacks it now).
    as_text = rule(cond("custom_fields.score", "neq", "10"))
    assert (await preview(client, ws.headers, as_text))["count"] == 5
    retyped = await client.patch(
        "/api/v1/custom-fields/nickname",
        json={"type": "number", "confirm_violations": True},
        headers=ws.headers,
    )
    assert retyped.status_code == 200, retyped.text
    assert await count(nick.json()["segment"]["id"]) == 0
