"""Segment rules over contact fields: text (case ignored, LIKE wildcards literal, negatives
match contacts without the value) and timestamps (a date is the whole UTC day)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.segments.helpers import cond, contact, matched, rule, set_columns

A, B, C, D = "anna.smith@example.org", "bob@mail.io", "carla@example.org", "li.na@wu.io"


async def _people(client, ws, db) -> None:
    await contact(
        client, ws.headers, A, first_name="Anna", last_name="Smith", source="import", language="fr"
    )
    await contact(
        client, ws.headers, "  BOB@Mail.io ", first_name="Émile", last_name="Ünal", source="Form"
    )
    c = await contact(client, ws.headers, C, last_name="O'Brien_x%", language="en")
    response = await client.patch(
        f"/api/v1/contacts/{c}", json={"status": "unsubscribed"}, headers=ws.headers
    )
    assert response.status_code == 200, response.text
    # A pasted line break inside a first name (the API keeps inner whitespace).
    d = await contact(client, ws.headers, D, first_name="Li\nNa", last_name="Wu", language="de")
    await set_columns(db, d, status="archived", previous_status="subscribed")


TEXT_CASES = [
    (cond("email", "eq", "ANNA.SMITH@example.org"), {A}),
    (cond("email", "neq", A), {B, C, D}),
    (cond("email", "in", [B, "nobody@x.io"]), {B}),
    (cond("email", "contains", "EXAMPLE"), {A, C}),
    (cond("email", "not_contains", "example"), {B, D}),
    (cond("email", "starts_with", "car"), {C}),
    (cond("email", "ends_with", ".IO"), {B, D}),
    (cond("email", "is_set"), {A, B, C, D}),
    (cond("email", "is_not_set"), set()),
    (cond("first_name", "eq", "émile"), {B}),
    (cond("first_name", "eq", "ÉMILE"), {B}),
    (cond("first_name", "contains", "MIL"), {B}),
    (cond("first_name", "starts_with", "li"), {D}),
    (cond("first_name", "eq", "li\nna"), {D}),
    (cond("first_name", "is_set"), {A, B, D}),
    (cond("first_name", "is_not_set"), {C}),
    (cond("first_name", "neq", "anna"), {B, C, D}),
    (cond("last_name", "eq", "ünal"), {B}),
    (cond("last_name", "eq", "WU"), {D}),
    (cond("last_name", "ends_with", "SMITH"), {A}),
    (cond("last_name", "contains", "_x%"), {C}),
    (cond("last_name", "contains", "o_b"), set()),  # `_` is a letter here, not a wildcard
    (cond("last_name", "contains", "%"), {C}),
    (cond("last_name", "not_contains", "%"), {A, B, D}),
    (cond("source", "eq", "form"), {B}),
    (cond("source", "neq", "import"), {B, C, D}),
    (cond("source", "in", ["API", "form"]), {B, C, D}),
    (cond("source", "starts_with", "IMP"), {A}),
    (cond("language", "eq", "FR"), {A}),
    (cond("language", "neq", "fr"), {B, C, D}),
    (cond("language", "is_not_set"), {B}),
    (cond("language", "is_set"), {A, C, D}),
    (cond("status", "eq", "unsubscribed"), {C}),
    (cond("status", "neq", "subscribed"), {C, D}),
    (cond("status", "in", ["archived", "bounced"]), {D}),
    (cond("status", "contains", "sub"), {A, B, C}),
]


async def test_text_operators_ignore_case_and_match_every_status(client, ws, db):
    await _people(client, ws, db)
    wrong = []
    for condition, expected in TEXT_CASES:
        got = await matched(client, ws.headers, rule(condition))
        if got != expected:
            wrong.append((condition, sorted(got), sorted(expected)))
    assert wrong == []


async def test_match_all_any_and_nesting(client, ws, db):
    await _people(client, ws, db)
    example = cond("email", "contains", "example")
    assert await matched(client, ws.headers, rule(example, cond("language", "eq", "en"))) == {C}
    assert await matched(
        client, ws.headers, rule(example, cond("language", "eq", "de"), match="any")
    ) == {A, C, D}
    nested = rule(
        cond("status", "neq", "archived"),
        rule(cond("first_name", "eq", "anna"), rule(cond("source", "eq", "form")), match="any"),
    )
    assert await matched(client, ws.headers, nested) == {A, B}


async def test_timestamps(client, ws, db):
    now = datetime.now(UTC)
    old = await contact(client, ws.headers, A)
    mid = await contact(client, ws.headers, B)
    await contact(client, ws.headers, C)
    at = datetime(2020, 1, 15, 10, 0, tzinfo=UTC)
    await set_columns(db, old, created_at=at, subscribed_at=at)
    await set_columns(
        db,
        mid,
        created_at=now - timedelta(days=10),
        subscribed_at=now - timedelta(days=10),
        unsubscribed_at=now - timedelta(days=5),
        status="unsubscribed",
    )
    cases = [
        (cond("created_at", "before", "2020-01-15"), set()),
        (cond("created_at", "before", "2020-01-16"), {A}),
        (cond("created_at", "after", "2020-01-15"), {B, C}),
        (cond("created_at", "after", "2020-01-14"), {A, B, C}),
        (cond("created_at", "before", "2020-01-15T10:00:01Z"), {A}),
        (cond("created_at", "before", "2020-01-15T12:00:00+02:00"), set()),
        (cond("created_at", "after", "2020-01-15T10:00:00"), {B, C}),
        (cond("created_at", "after", "2020-01-15t09:59:59z"), {A, B, C}),
        (cond("created_at", "within_last", 30), {B, C}),
        (cond("created_at", "not_within_last", 30), {A}),
        (cond("subscribed_at", "within_last", 11), {B, C}),
        (cond("subscribed_at", "within_last", 9), {C}),
        (cond("unsubscribed_at", "within_last", 7), {B}),
        (cond("unsubscribed_at", "within_last", 4), set()),
        (cond("unsubscribed_at", "not_within_last", 7), {A, C}),
        (cond("unsubscribed_at", "before", "2999-01-01"), {B}),
        (cond("unsubscribed_at", "after", "9999-12-31"), set()),
    ]
    wrong = []
    for condition, expected in cases:
        got = await matched(client, ws.headers, rule(condition))
        if got != expected:
            wrong.append((condition, sorted(got), sorted(expected)))
    assert wrong == []
