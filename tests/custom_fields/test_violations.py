"""Spec, Custom fields rules: when stored values do not fit a requested type or options the
request is 409 with `violations` until `confirm_violations: true`; stored values are never
rewritten. PATCH answers `violations` (object or null) in its 200 body."""

from __future__ import annotations

from tests.custom_fields.helpers import (
    FIELDS,
    create_field,
    fields_by_key,
    new_contact,
    patch_contact,
    seed_values,
    stored,
)


def conflict_message(count: int) -> str:
    return (
        f"{count} stored value(s) do not fit this type. Send confirm_violations: true to apply "
        "it anyway; stored values are kept as they are and flagged."
    )


def assert_violations(body, *, count: int, examples: set[str]) -> None:
    violations = body["violations"]
    assert set(violations) == {"count", "examples", "partial"}
    assert violations["count"] == count
    assert isinstance(violations["examples"], list)
    assert all(isinstance(e, str) for e in violations["examples"])
    assert set(violations["examples"]) == examples
    assert violations["partial"] is False


# ---------------------------------------------------------------- PATCH


async def test_patch_type_conflict_is_409_until_confirmed(client, ws):
    a = await new_contact(client, ws.headers, "a@example.com", custom_fields={"age": "abc"})
    b = await new_contact(client, ws.headers, "b@example.com", custom_fields={"age": "42"})
    c = await new_contact(client, ws.headers, "c@example.com", custom_fields={"age": 7})
    d = await new_contact(client, ws.headers, "d@example.com", custom_fields={"age": "old"})
    assert (await fields_by_key(client, ws.headers))["age"]["type"] == "text"

    response = await client.patch(f"{FIELDS}/age", json={"type": "number"}, headers=ws.headers)
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == conflict_message(2)
    assert_violations(body, count=2, examples={"abc", "old"})
    assert (await fields_by_key(client, ws.headers))["age"]["type"] == "text"

    confirmed = await client.patch(
        f"{FIELDS}/age", json={"type": "number", "confirm_violations": True}, headers=ws.headers
    )
    assert confirmed.status_code == 200
    body = confirmed.json()
    assert body["field"]["type"] == "number"
    assert_violations(body, count=2, examples={"abc", "old"})
    assert (await fields_by_key(client, ws.headers))["age"]["type"] == "number"

    # Stored values are never rewritten: not even the ones that fit.
    assert await stored(client, ws.headers, a["id"]) == {"age": "abc"}
    assert await stored(client, ws.headers, b["id"]) == {"age": "42"}
    assert await stored(client, ws.headers, c["id"]) == {"age": 7}
    assert await stored(client, ws.headers, d["id"]) == {"age": "old"}

    # New writes are typed from now on.
    refused = await patch_contact(client, ws.headers, a["id"], {"custom_fields": {"age": "abc"}})
    assert refused.status_code == 400
    assert refused.json() == {"error": "custom_fields.age must be a number"}
    fixed = await patch_contact(client, ws.headers, a["id"], {"custom_fields": {"age": "31"}})
    assert fixed.status_code == 200
    assert await stored(client, ws.headers, a["id"]) == {"age": 31}


async def test_patch_violations_null_when_all_values_fit(client, ws):
    await new_contact(client, ws.headers, "a@example.com", custom_fields={"vip": "yes"})
    await new_contact(client, ws.headers, "b@example.com", custom_fields={"vip": True})
    await new_contact(client, ws.headers, "c@example.com", custom_fields={"vip": "False"})
    response = await client.patch(f"{FIELDS}/vip", json={"type": "boolean"}, headers=ws.headers)
    assert response.status_code == 200
    assert response.json()["violations"] is None
    assert response.json()["field"]["type"] == "boolean"


async def test_patch_confirm_without_violations_is_null(client, ws):
    await new_contact(client, ws.headers, "a@example.com", custom_fields={"n": 1})
    response = await client.patch(
        f"{FIELDS}/n", json={"type": "number", "confirm_violations": True}, headers=ws.headers
    )
    assert response.status_code == 200
    assert response.json()["violations"] is None


async def test_patch_date_conflict(client, ws):
    ok = await new_contact(
        client, ws.headers, "a@example.com", custom_fields={"since": "2024-02-29"}
    )
    bad = await new_contact(
        client, ws.headers, "b@example.com", custom_fields={"since": "2023-02-29"}
    )
    response = await client.patch(f"{FIELDS}/since", json={"type": "date"}, headers=ws.headers)
    assert response.status_code == 409
    assert_violations(response.json(), count=1, examples={"2023-02-29"})
    confirmed = await client.patch(
        f"{FIELDS}/since", json={"type": "date", "confirm_violations": True}, headers=ws.headers
    )
    assert confirmed.status_code == 200
    assert_violations(confirmed.json(), count=1, examples={"2023-02-29"})
    assert await stored(client, ws.headers, ok["id"]) == {"since": "2024-02-29"}
    assert await stored(client, ws.headers, bad["id"]) == {"since": "2023-02-29"}


async def test_patch_dropdown_options_conflict(client, ws):
    await create_field(client, ws.headers, key="tier", type="dropdown", options=["Gold", "Silver"])
    gold = await new_contact(client, ws.headers, "a@example.com", custom_fields={"tier": "Gold"})
    silver = await new_contact(
        client, ws.headers, "b@example.com", custom_fields={"tier": "Silver"}
    )
    # Removing an option in use needs confirmation.
    response = await client.patch(f"{FIELDS}/tier", json={"options": ["Gold"]}, headers=ws.headers)
    assert response.status_code == 409
    assert_violations(response.json(), count=1, examples={"Silver"})
    assert (await fields_by_key(client, ws.headers))["tier"]["options"] == ["Gold", "Silver"]
    confirmed = await client.patch(
        f"{FIELDS}/tier",
        json={"options": ["Gold"], "confirm_violations": True},
        headers=ws.headers,
    )
    assert confirmed.status_code == 200
    assert confirmed.json()["field"]["options"] == ["Gold"]
    assert_violations(confirmed.json(), count=1, examples={"Silver"})
    assert await stored(client, ws.headers, silver["id"]) == {"tier": "Silver"}
    assert await stored(client, ws.headers, gold["id"]) == {"tier": "Gold"}


async def test_patch_text_to_dropdown_conflict(client, ws):
    await new_contact(client, ws.headers, "a@example.com", custom_fields={"colour": "red"})
    await new_contact(client, ws.headers, "b@example.com", custom_fields={"colour": "teal"})
    response = await client.patch(
        f"{FIELDS}/colour",
        json={"type": "dropdown", "options": ["red", "blue"]},
        headers=ws.headers,
    )
    assert response.status_code == 409
    assert_violations(response.json(), count=1, examples={"teal"})


async def test_patch_to_text_never_conflicts(client, ws):
    await create_field(client, ws.headers, key="score", type="number")
    await new_contact(client, ws.headers, "a@example.com", custom_fields={"score": 3})
    response = await client.patch(f"{FIELDS}/score", json={"type": "text"}, headers=ws.headers)
    assert response.status_code == 200
    assert response.json()["violations"] is None
    assert response.json()["field"]["type"] == "text"


async def test_label_only_change_ignores_stored_misfits(client, ws):
    a = await new_contact(client, ws.headers, "a@example.com", custom_fields={"age": "abc"})
    await client.patch(
        f"{FIELDS}/age", json={"type": "number", "confirm_violations": True}, headers=ws.headers
    )
    response = await client.patch(f"{FIELDS}/age", json={"label": "Age"}, headers=ws.headers)
    assert response.status_code == 200
    assert response.json()["violations"] is None
    assert await stored(client, ws.headers, a["id"]) == {"age": "abc"}


async def test_violation_examples_are_capped_but_count_is_not(client, ws):
    for i in range(8):
        await new_contact(client, ws.headers, f"c{i}@example.com", custom_fields={"n": f"bad{i}"})
    response = await client.patch(f"{FIELDS}/n", json={"type": "number"}, headers=ws.headers)
    assert response.status_code == 409
    violations = response.json()["violations"]
    assert violations["count"] == 8
    assert 1 <= len(violations["examples"]) <= 8
    assert set(violations["examples"]) <= {f"bad{i}" for i in range(8)}
    assert violations["partial"] is False


# ---------------------------------------------------------------- POST


async def test_post_conflict_on_values_stored_before_registration(client, ws, db):
    """Values written before the registry existed: declaring a type they do not fit is 409."""
    a = await new_contact(client, ws.headers, "a@example.com")
    b = await new_contact(client, ws.headers, "b@example.com")
    c = await new_contact(client, ws.headers, "c@example.com")
    await seed_values(db, a["id"], {"birthday": "31/12/1990"})
    await seed_values(db, b["id"], {"birthday": "someday"})
    await seed_values(db, c["id"], {"birthday": "1990-02-30"})

    response = await client.post(
        FIELDS, json={"key": "birthday", "type": "date"}, headers=ws.headers
    )
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == conflict_message(2)
    assert_violations(body, count=2, examples={"someday", "1990-02-30"})
    assert "birthday" not in await fields_by_key(client, ws.headers)

    created = await client.post(
        FIELDS,
        json={"key": "birthday", "type": "date", "confirm_violations": True},
        headers=ws.headers,
    )
    assert created.status_code == 201
    assert created.json()["field"]["type"] == "date"
    assert (await fields_by_key(client, ws.headers))["birthday"]["type"] == "date"
    # Never rewritten, not even the DD/MM/YYYY one that fits.
    assert await stored(client, ws.headers, a["id"]) == {"birthday": "31/12/1990"}
    assert await stored(client, ws.headers, b["id"]) == {"birthday": "someday"}
    assert await stored(client, ws.headers, c["id"]) == {"birthday": "1990-02-30"}


async def test_post_dropdown_conflict(client, ws, db):
    a = await new_contact(client, ws.headers, "a@example.com")
    await seed_values(db, a["id"], {"tier": "Platinum"})
    response = await client.post(
        FIELDS, json={"key": "tier", "type": "dropdown", "options": ["Gold"]}, headers=ws.headers
    )
    assert response.status_code == 409
    assert_violations(response.json(), count=1, examples={"Platinum"})


async def test_post_without_conflict_needs_no_confirmation(client, ws, db):
    a = await new_contact(client, ws.headers, "a@example.com")
    b = await new_contact(client, ws.headers, "b@example.com")
    await seed_values(db, a["id"], {"active": True})
    await seed_values(db, b["id"], {"active": "no"})
    response = await client.post(
        FIELDS, json={"key": "active", "type": "boolean"}, headers=ws.headers
    )
    assert response.status_code == 201
    assert await stored(client, ws.headers, b["id"]) == {"active": "no"}


async def test_post_confirm_violations_must_be_boolean(client, ws):
    response = await client.post(
        FIELDS, json={"key": "x", "confirm_violations": "yes"}, headers=ws.headers
    )
    assert response.status_code == 400
    assert response.json() == {"error": "confirm_violations must be true or false"}


async def test_violations_only_count_this_workspace(client, ws, factory):
    other = await factory.workspace("pro")
    await new_contact(client, other.headers, "a@example.com", custom_fields={"age": "abc"})
    await new_contact(client, ws.headers, "a@example.com", custom_fields={"age": "12"})
    response = await client.patch(f"{FIELDS}/age", json={"type": "number"}, headers=ws.headers)
    assert response.status_code == 200
    assert response.json()["violations"] is None


async def test_violation_examples_are_strings_for_any_stored_value(client, ws):
    await new_contact(client, ws.headers, "a@example.com", custom_fields={"when": True})
    await new_contact(client, ws.headers, "b@example.com", custom_fields={"when": 3})
    await new_contact(client, ws.headers, "c@example.com", custom_fields={"when": "2024-01-01"})
    response = await client.patch(f"{FIELDS}/when", json={"type": "date"}, headers=ws.headers)
    assert response.status_code == 409
    violations = response.json()["violations"]
    assert violations["count"] == 2
    assert len(violations["examples"]) == 2
    assert all(isinstance(e, str) for e in violations["examples"])
    assert violations["partial"] is False
