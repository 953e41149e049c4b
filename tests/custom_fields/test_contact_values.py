"""Spec, CustomFields rules 1-4 and PATCH /contacts rule 1: the shape of `custom_fields` on
contact create and update, typing by the registry, merge/replace semantics."""

from __future__ import annotations

import httpx
import pytest

from tests.custom_fields.helpers import (
    CONTACTS,
    create_field,
    new_contact,
    patch_contact,
    stored,
)

SHAPE = "custom_fields.{key} must be a string, number or boolean"
DATE = "custom_fields.{key} must be a date (YYYY-MM-DD, an ISO date-time or DD/MM/YYYY)"


async def write(client, ws, mode: str, custom_fields, **extra):
    """Write `custom_fields` by creating a contact, or by patching an existing one (which
    starts with `{"existing": "kept"}`). Returns (response, contact id or None)."""
    if mode == "create":
        response = await client.post(
            CONTACTS,
            json={"email": "new@example.com", "custom_fields": custom_fields, **extra},
            headers=ws.headers,
        )
        contact_id = response.json()["contact"]["id"] if response.status_code == 201 else None
        return response, contact_id
    contact = await new_contact(
        client, ws.headers, "old@example.com", custom_fields={"existing": "kept"}
    )
    response = await patch_contact(
        client, ws.headers, contact["id"], {"custom_fields": custom_fields, **extra}
    )
    return response, contact["id"]


async def assert_refused(client, ws, mode: str, custom_fields, message: str) -> None:
    response, contact_id = await write(client, ws, mode, custom_fields)
    assert response.status_code == 400, response.text
    assert response.json() == {"error": message}
    if mode == "create":
        listed = await client.get(CONTACTS, headers=ws.headers)
        assert listed.json()["contacts"] == []
    else:
        assert await stored(client, ws.headers, contact_id) == {"existing": "kept"}


async def assert_stored(client, ws, mode: str, custom_fields, expected: dict) -> None:
    response, contact_id = await write(client, ws, mode, custom_fields)
    assert response.status_code in (200, 201), response.text
    if mode == "patch":
        expected = {"existing": "kept", **expected}
    assert response.json()["contact"]["custom_fields"] == expected
    assert await stored(client, ws.headers, contact_id) == expected


MODES = pytest.mark.parametrize("mode", ["create", "patch"])

# ---------------------------------------------------------------- rule 1: flat object, 50 keys


@MODES
async def test_at_most_50_keys(client, ws, mode):
    fifty = {f"k{i:02d}": i for i in range(50)}
    if mode == "create":
        await assert_stored(client, ws, mode, fifty, fifty)
    else:
        contact = await new_contact(client, ws.headers, "old@example.com")
        response = await patch_contact(client, ws.headers, contact["id"], {"custom_fields": fifty})
        assert response.status_code == 200
        assert await stored(client, ws.headers, contact["id"]) == fifty


@MODES
async def test_51_keys_refused(client, ws, mode):
    fifty_one = {f"k{i:02d}": i for i in range(51)}
    await assert_refused(client, ws, mode, fifty_one, "custom_fields may have at most 50 keys")


async def test_merge_cannot_grow_a_contact_past_50_keys(client, ws):
    """Rule 1 is about the value object on the contact: merging 30 new keys into 30 stored
    ones would leave 60."""
    first = {f"a{i:02d}": "x" for i in range(30)}
    contact = await new_contact(client, ws.headers, "a@example.com", custom_fields=first)
    response = await patch_contact(
        client, ws.headers, contact["id"], {"custom_fields": {f"b{i:02d}": "y" for i in range(30)}}
    )
    assert response.status_code == 400
    assert response.json() == {"error": "custom_fields may have at most 50 keys"}
    assert await stored(client, ws.headers, contact["id"]) == first


@MODES
@pytest.mark.parametrize("value", ["a string", ["list"], 42, True])
async def test_custom_fields_must_be_an_object(client, ws, mode, value):
    await assert_refused(client, ws, mode, value, "custom_fields must be an object")


# ---------------------------------------------------------------- rule 2: keys


@MODES
@pytest.mark.parametrize("key", ["", "k" * 65])
async def test_key_length(client, ws, mode, key):
    await assert_refused(client, ws, mode, {key: "v"}, "custom_fields keys must be 1-64 characters")


@MODES
@pytest.mark.parametrize("key", ["k", "k" * 64, "with space", "dash-ed", "ünïcode"])
async def test_key_length_accepted(client, ws, mode, key):
    await assert_stored(client, ws, mode, {key: "v"}, {key: "v"})


@MODES
@pytest.mark.parametrize("key", ["__proto__", "constructor", "prototype"])
async def test_reserved_keys_refused(client, ws, mode, key):
    await assert_refused(
        client, ws, mode, {key: "x", "fine": "y"}, f"custom_fields.{key} is not an allowed key"
    )


# ---------------------------------------------------------------- rule 3: values


@MODES
async def test_scalar_values_kept(client, ws, mode):
    values = {"s": "text", "i": 42, "f": 2.5, "neg": -3, "t": True, "fa": False, "empty": ""}
    await assert_stored(client, ws, mode, values, values)


@MODES
async def test_value_max_200_characters(client, ws, mode):
    await assert_stored(client, ws, mode, {"bio": "x" * 200}, {"bio": "x" * 200})


@MODES
async def test_value_over_200_characters_refused(client, ws, mode):
    await assert_refused(
        client, ws, mode, {"bio": "x" * 201}, "custom_fields.bio must be 200 characters or fewer"
    )


@MODES
@pytest.mark.parametrize("value", [[], ["a", "b"], {}, {"nested": 1}, [{"a": 1}]])
async def test_arrays_and_objects_refused(client, ws, mode, value):
    await assert_refused(client, ws, mode, {"tags": value}, SHAPE.format(key="tags"))


async def raw_write(app, ws, mode: str, literal: str):
    """Send `{"n": <literal>}` as custom_fields in a hand-written JSON body (for values a JSON
    encoder would not produce), through a client that turns app crashes into 500s.
    Returns (response, contact id or None)."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    headers = {**ws.headers, "content-type": "application/json"}
    fields = '{"n": ' + literal + "}"
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        if mode == "create":
            body = '{"email": "new@example.com", "custom_fields": ' + fields + "}"
            return await c.post(CONTACTS, content=body.encode(), headers=headers), None
        contact = await new_contact(c, ws.headers, "old@example.com", custom_fields={"a": 1})
        body = '{"custom_fields": ' + fields + "}"
        response = await c.patch(
            f"{CONTACTS}/{contact['id']}", content=body.encode(), headers=headers
        )
        return response, contact["id"]


@MODES
@pytest.mark.parametrize("literal", ["Infinity", "-Infinity", "NaN"])
async def test_non_finite_numbers_refused(app, client, ws, mode, literal):
    response, contact_id = await raw_write(app, ws, mode, literal)
    assert response.status_code == 400
    assert response.json() == {"error": SHAPE.format(key="n")}
    if contact_id is None:
        assert (await client.get(CONTACTS, headers=ws.headers)).json()["contacts"] == []
    else:
        assert await stored(client, ws.headers, contact_id) == {"a": 1}


@MODES
async def test_huge_integer_is_not_a_server_error(app, client, ws, mode):
    """Rule 3: a value must be a finite number. A 400-digit integer (no float can hold it) is
    either refused with the rule-3 message or stored as sent; it is never a 500."""
    response, contact_id = await raw_write(app, ws, mode, "9" * 400)
    assert response.status_code in (200, 201, 400), (response.status_code, response.text)
    if response.status_code == 400:
        assert response.json() == {"error": SHAPE.format(key="n")}
        if contact_id is not None:
            assert await stored(client, ws.headers, contact_id) == {"a": 1}
    else:
        contact_id = response.json()["contact"]["id"]
        assert (await stored(client, ws.headers, contact_id))["n"] == int("9" * 400)


@MODES
@pytest.mark.parametrize("literal", ["1e20", "-9007199254740994.0", "1.7e308"])
async def test_numbers_past_the_published_bound_refused(app, client, ws, mode, literal):
    """The document bounds a number at +-2**53 (past it no double is exact, and every one is
    a whole number): a float beyond is refused as an integer beyond is, not stored."""
    response, contact_id = await raw_write(app, ws, mode, literal)
    assert response.status_code == 400, response.text
    assert response.json() == {"error": SHAPE.format(key="n")}
    if contact_id is None:
        assert (await client.get(CONTACTS, headers=ws.headers)).json()["contacts"] == []
    else:
        assert await stored(client, ws.headers, contact_id) == {"a": 1}


@MODES
async def test_numbers_at_the_published_bound_kept(client, ws, mode):
    values = {"top": 2**53, "bottom": -(2**53), "float": 9007199254740992.0}
    await assert_stored(client, ws, mode, values, values)


async def test_nulls_dropped_on_create(client, ws):
    contact = await new_contact(
        client, ws.headers, "a@example.com", custom_fields={"kept": "x", "gone": None}
    )
    assert contact["custom_fields"] == {"kept": "x"}
    assert await stored(client, ws.headers, contact["id"]) == {"kept": "x"}


async def test_all_null_object_on_create_stores_nothing(client, ws):
    contact = await new_contact(
        client, ws.headers, "a@example.com", custom_fields={"a": None, "b": None}
    )
    assert await stored(client, ws.headers, contact["id"]) == {}


async def test_create_without_custom_fields_is_empty_object(client, ws):
    contact = await new_contact(client, ws.headers, "a@example.com")
    assert contact["custom_fields"] == {}
    assert await stored(client, ws.headers, contact["id"]) == {}


# ---------------------------------------------------------------- PATCH: merge and replace


async def test_patch_merges_and_null_removes(client, ws):
    contact = await new_contact(
        client, ws.headers, "a@example.com", custom_fields={"a": 1, "b": "two", "c": True}
    )
    response = await patch_contact(
        client, ws.headers, contact["id"], {"custom_fields": {"b": None, "c": False, "d": "new"}}
    )
    assert response.status_code == 200
    expected = {"a": 1, "c": False, "d": "new"}
    assert response.json()["contact"]["custom_fields"] == expected
    assert await stored(client, ws.headers, contact["id"]) == expected


async def test_patch_null_for_absent_key_is_harmless(client, ws):
    contact = await new_contact(client, ws.headers, "a@example.com", custom_fields={"a": 1})
    response = await patch_contact(
        client, ws.headers, contact["id"], {"custom_fields": {"never_there": None}}
    )
    assert response.status_code == 200
    assert await stored(client, ws.headers, contact["id"]) == {"a": 1}


@pytest.mark.parametrize("extra", [{}, {"replace_custom_fields": False}])
async def test_empty_object_without_flag_changes_nothing(client, ws, extra):
    contact = await new_contact(
        client, ws.headers, "a@example.com", custom_fields={"a": 1, "b": "x"}
    )
    response = await patch_contact(
        client, ws.headers, contact["id"], {"custom_fields": {}, **extra}
    )
    assert response.status_code == 200
    assert response.json()["contact"]["custom_fields"] == {"a": 1, "b": "x"}
    assert await stored(client, ws.headers, contact["id"]) == {"a": 1, "b": "x"}


async def test_replace_replaces_whole_object(client, ws):
    contact = await new_contact(
        client, ws.headers, "a@example.com", custom_fields={"a": 1, "b": "x"}
    )
    response = await patch_contact(
        client,
        ws.headers,
        contact["id"],
        {"custom_fields": {"c": "only", "d": None}, "replace_custom_fields": True},
    )
    assert response.status_code == 200
    assert response.json()["contact"]["custom_fields"] == {"c": "only"}
    assert await stored(client, ws.headers, contact["id"]) == {"c": "only"}


async def test_replace_with_empty_object_clears(client, ws):
    contact = await new_contact(client, ws.headers, "a@example.com", custom_fields={"a": 1})
    response = await patch_contact(
        client, ws.headers, contact["id"], {"custom_fields": {}, "replace_custom_fields": True}
    )
    assert response.status_code == 200
    assert await stored(client, ws.headers, contact["id"]) == {}


async def test_replace_requires_custom_fields(client, ws):
    contact = await new_contact(client, ws.headers, "a@example.com", custom_fields={"a": 1})
    for body in (
        {"replace_custom_fields": True},
        {"replace_custom_fields": True, "first_name": "Jane"},
    ):
        response = await patch_contact(client, ws.headers, contact["id"], body)
        assert response.status_code == 400
        assert response.json() == {"error": "replace_custom_fields: true requires custom_fields"}
    after = await client.get(f"{CONTACTS}/{contact['id']}", headers=ws.headers)
    assert after.json()["contact"]["custom_fields"] == {"a": 1}
    assert after.json()["contact"]["first_name"] == ""


async def test_replace_flag_must_be_boolean(client, ws):
    contact = await new_contact(client, ws.headers, "a@example.com", custom_fields={"a": 1})
    response = await patch_contact(
        client, ws.headers, contact["id"], {"custom_fields": {}, "replace_custom_fields": "yes"}
    )
    assert response.status_code == 400
    assert response.json() == {"error": "replace_custom_fields must be true or false"}
    assert await stored(client, ws.headers, contact["id"]) == {"a": 1}


# ---------------------------------------------------------------- rule 4: typed keys


@MODES
@pytest.mark.parametrize(
    ("value", "expected"),
    [(12, 12), (2.5, 2.5), (-4, -4), (0, 0), ("42", 42), ("3.5", 3.5), ("-7", -7)],
)
async def test_number_field_accepts_numbers_and_numeric_strings(client, ws, mode, value, expected):
    await create_field(client, ws.headers, key="score", type="number")
    response, contact_id = await write(client, ws, mode, {"score": value})
    assert response.status_code in (200, 201), response.text
    got = (await stored(client, ws.headers, contact_id))["score"]
    assert got == expected
    assert isinstance(got, int | float) and not isinstance(got, bool)


@MODES
@pytest.mark.parametrize("value", ["abc", "12abc", "1,5", True, False])
async def test_number_field_refuses_non_numbers(client, ws, mode, value):
    await create_field(client, ws.headers, key="score", type="number")
    await assert_refused(client, ws, mode, {"score": value}, "custom_fields.score must be a number")


@MODES
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        ("yes", True),
        ("no", False),
        ("true", True),
        ("false", False),
    ],
)
async def test_boolean_field(client, ws, mode, value, expected):
    await create_field(client, ws.headers, key="vip", type="boolean")
    response, contact_id = await write(client, ws, mode, {"vip": value})
    assert response.status_code in (200, 201), response.text
    got = (await stored(client, ws.headers, contact_id))["vip"]
    assert got is expected


@MODES
@pytest.mark.parametrize("value", ["maybe", "y", 1, 0, "1", "on"])
async def test_boolean_field_refuses_others(client, ws, mode, value):
    await create_field(client, ws.headers, key="vip", type="boolean")
    await assert_refused(
        client, ws, mode, {"vip": value}, "custom_fields.vip must be true or false"
    )


@MODES
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-02-29", "2024-02-29"),
        ("1999-12-31", "1999-12-31"),
        ("2024-03-05T10:20:30Z", "2024-03-05"),
        ("2024-03-05T10:20:30", "2024-03-05"),
        ("2024-03-05T10:20:30.123+00:00", "2024-03-05"),
        ("05/03/2024", "2024-03-05"),
        ("31/12/1999", "1999-12-31"),
        ("29/02/2024", "2024-02-29"),
    ],
)
async def test_date_field_stores_yyyy_mm_dd(client, ws, mode, value, expected):
    await create_field(client, ws.headers, key="birthday", type="date")
    await assert_stored(client, ws, mode, {"birthday": value}, {"birthday": expected})


@MODES
@pytest.mark.parametrize(
    "value",
    [
        "2023-02-29",
        "2024-02-30",
        "2024-13-01",
        "2024-00-10",
        "29/02/2023",
        "31/04/2024",
        "12/31/1999",
        "2024-3-5",
        "2024-02-30T10:00:00Z",
        "yesterday",
        20240305,
        True,
    ],
)
async def test_date_field_refuses_impossible_dates(client, ws, mode, value):
    await create_field(client, ws.headers, key="birthday", type="date")
    await assert_refused(client, ws, mode, {"birthday": value}, DATE.format(key="birthday"))


@MODES
async def test_dropdown_field(client, ws, mode):
    await create_field(client, ws.headers, key="tier", type="dropdown", options=["Gold", "Silver"])
    await assert_stored(client, ws, mode, {"tier": "Silver"}, {"tier": "Silver"})


@MODES
@pytest.mark.parametrize("value", ["Bronze", 5, True])
async def test_dropdown_field_refuses_other_values(client, ws, mode, value):
    await create_field(client, ws.headers, key="tier", type="dropdown", options=["Gold", "Silver"])
    await assert_refused(
        client, ws, mode, {"tier": value}, "custom_fields.tier must be one of Gold, Silver"
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ({"type": "number"}, 5),
        ({"type": "boolean"}, True),
        ({"type": "date"}, "2024-01-01"),
        ({"type": "dropdown", "options": ["A", "B"]}, "A"),
    ],
)
async def test_empty_string_clears_a_typed_field(client, ws, field, value):
    await create_field(client, ws.headers, key="typed", **field)
    contact = await new_contact(
        client, ws.headers, "a@example.com", custom_fields={"typed": value, "other": "x"}
    )
    assert contact["custom_fields"] == {"typed": value, "other": "x"}
    response = await patch_contact(
        client, ws.headers, contact["id"], {"custom_fields": {"typed": ""}}
    )
    assert response.status_code == 200
    assert response.json()["contact"]["custom_fields"] == {"other": "x"}
    assert await stored(client, ws.headers, contact["id"]) == {"other": "x"}
    # On create an empty string for a typed key stores nothing.
    created = await new_contact(client, ws.headers, "b@example.com", custom_fields={"typed": ""})
    assert await stored(client, ws.headers, created["id"]) == {}


async def test_typed_mismatch_refuses_the_whole_patch(client, ws):
    await create_field(client, ws.headers, key="score", type="number")
    contact = await new_contact(
        client, ws.headers, "a@example.com", first_name="Ann", custom_fields={"score": 1}
    )
    response = await patch_contact(
        client,
        ws.headers,
        contact["id"],
        {"first_name": "Bea", "custom_fields": {"score": "lots", "city": "Oslo"}},
    )
    assert response.status_code == 400
    assert response.json() == {"error": "custom_fields.score must be a number"}
    after = await client.get(f"{CONTACTS}/{contact['id']}", headers=ws.headers)
    assert after.json()["contact"]["first_name"] == "Ann"
    assert after.json()["contact"]["custom_fields"] == {"score": 1}


async def test_typed_values_are_checked_when_replacing(client, ws):
    await create_field(client, ws.headers, key="vip", type="boolean")
    contact = await new_contact(client, ws.headers, "a@example.com", custom_fields={"a": 1})
    refused = await patch_contact(
        client,
        ws.headers,
        contact["id"],
        {"custom_fields": {"vip": "perhaps"}, "replace_custom_fields": True},
    )
    assert refused.status_code == 400
    assert refused.json() == {"error": "custom_fields.vip must be true or false"}
    assert await stored(client, ws.headers, contact["id"]) == {"a": 1}
    accepted = await patch_contact(
        client,
        ws.headers,
        contact["id"],
        {"custom_fields": {"vip": "yes"}, "replace_custom_fields": True},
    )
    assert accepted.status_code == 200
    assert await stored(client, ws.headers, contact["id"]) == {"vip": True}


async def test_refused_create_registers_no_new_keys(client, ws):
    await create_field(client, ws.headers, key="score", type="number")
    response = await client.post(
        CONTACTS,
        json={"email": "a@example.com", "custom_fields": {"brand_new": "x", "score": "nope"}},
        headers=ws.headers,
    )
    assert response.status_code == 400
    listed = await client.get("/api/v1/custom-fields", headers=ws.headers)
    assert {f["key"] for f in listed.json()["fields"]} == {"score"}
