"""Spec, CustomFields rule 5 and Custom fields: keys first written on a contact are registered
as `text`; GET reports `uses`, `unregistered` and `unaddressable`; scan declares unregistered
keys with an inferred type and leaves keys a merge tag cannot use alone."""

from __future__ import annotations

from tests.custom_fields.helpers import (
    FIELDS,
    create_field,
    fields_by_key,
    listing,
    new_contact,
    patch_contact,
    seed_values,
    stored,
)

# ---------------------------------------------------------------- rule 5: registered when first written


async def test_key_first_written_on_create_is_registered_as_text(client, ws):
    await new_contact(
        client, ws.headers, "a@example.com", custom_fields={"favourite_colour": "blue", "age": 31}
    )
    fields = await fields_by_key(client, ws.headers)
    assert set(fields) == {"favourite_colour", "age"}
    for key, label in (("favourite_colour", "Favourite colour"), ("age", "Age")):
        assert fields[key]["type"] == "text"
        assert fields[key]["label"] == label
        assert fields[key]["options"] is None
        assert fields[key]["uses"] == 1


async def test_key_first_written_on_patch_is_registered_as_text(client, ws):
    contact = await new_contact(client, ws.headers, "a@example.com")
    assert (await listing(client, ws.headers))["fields"] == []
    response = await patch_contact(
        client, ws.headers, contact["id"], {"custom_fields": {"loyalty_points": 12}}
    )
    assert response.status_code == 200
    field = (await fields_by_key(client, ws.headers))["loyalty_points"]
    assert field["type"] == "text"
    assert field["label"] == "Loyalty points"


async def test_text_registration_does_not_retype_existing_fields(client, ws):
    await create_field(client, ws.headers, key="score", type="number")
    await new_contact(
        client, ws.headers, "a@example.com", custom_fields={"score": 4, "new_key": "x"}
    )
    fields = await fields_by_key(client, ws.headers)
    assert fields["score"]["type"] == "number"
    assert fields["new_key"]["type"] == "text"


async def test_unaddressable_key_is_stored_but_not_registered(client, ws):
    contact = await new_contact(
        client,
        ws.headers,
        "a@example.com",
        custom_fields={"shoe size": "42", "zip-code": "0150", "ok_key": "y"},
    )
    assert await stored(client, ws.headers, contact["id"]) == {
        "shoe size": "42",
        "zip-code": "0150",
        "ok_key": "y",
    }
    body = await listing(client, ws.headers)
    assert {f["key"] for f in body["fields"]} == {"ok_key"}
    assert sorted(body["unaddressable"], key=lambda u: u["key"]) == [
        {"key": "shoe size", "uses": 1},
        {"key": "zip-code", "uses": 1},
    ]
    assert body["unregistered"] == []


# ---------------------------------------------------------------- GET: uses, unregistered


async def test_uses_counts_contacts_carrying_each_key(client, ws, factory):
    await create_field(client, ws.headers, key="unused")
    await new_contact(
        client, ws.headers, "a@example.com", custom_fields={"city": "Oslo", "vip": True}
    )
    await new_contact(client, ws.headers, "b@example.com", custom_fields={"city": "Rome"})
    await new_contact(client, ws.headers, "c@example.com", custom_fields={"city": "Lima"})
    await new_contact(client, ws.headers, "d@example.com")
    other = await factory.workspace("pro")
    await new_contact(client, other.headers, "e@example.com", custom_fields={"city": "Bern"})

    body = await listing(client, ws.headers)
    assert set(body) == {"fields", "unregistered", "unaddressable", "usage_available"}
    assert body["usage_available"] is True
    uses = {f["key"]: f["uses"] for f in body["fields"]}
    assert uses == {"unused": 0, "city": 3, "vip": 1}


async def test_uses_follow_removals(client, ws):
    a = await new_contact(client, ws.headers, "a@example.com", custom_fields={"city": "Oslo"})
    await new_contact(client, ws.headers, "b@example.com", custom_fields={"city": "Rome"})
    await patch_contact(client, ws.headers, a["id"], {"custom_fields": {"city": None}})
    assert (await fields_by_key(client, ws.headers))["city"]["uses"] == 1


async def test_unregistered_lists_keys_no_field_names(client, ws, db):
    a = await new_contact(client, ws.headers, "a@example.com")
    b = await new_contact(client, ws.headers, "b@example.com")
    await seed_values(db, a["id"], {"legacy_id": "L1", "region": "north"})
    await seed_values(db, b["id"], {"legacy_id": "L2", "odd key": 1})
    body = await listing(client, ws.headers)
    assert body["fields"] == []
    assert sorted(body["unregistered"], key=lambda u: u["key"]) == [
        {"key": "legacy_id", "uses": 2},
        {"key": "region", "uses": 1},
    ]
    assert body["unaddressable"] == [{"key": "odd key", "uses": 1}]


# ---------------------------------------------------------------- scan


async def test_scan_infers_types_from_stored_values(client, ws, db):
    values = [
        {
            "flag": True,
            "score": 1,
            "joined": "2024-01-02",
            "mixed": "2024-01-02",
            "bool_num": True,
            "note": "hello",
        },
        {
            "flag": False,
            "score": 2.5,
            "joined": "2023-12-31",
            "mixed": "hello",
            "bool_num": 1,
            "bad_date": "2023-02-30",
        },
        {"flag": True, "score": -7, "joined": "2020-02-29", "bad_date": "2023-02-28"},
    ]
    ids = []
    for i, seeded in enumerate(values):
        contact = await new_contact(client, ws.headers, f"c{i}@example.com")
        await seed_values(db, contact["id"], seeded)
        ids.append(contact["id"])

    response = await client.post(f"{FIELDS}/scan", headers=ws.headers)
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert body["unaddressable"] == []
    added = {f["key"]: f for f in body["added"]}
    assert {k: f["type"] for k, f in added.items()} == {
        "flag": "boolean",
        "score": "number",
        "joined": "date",
        "mixed": "text",
        "bool_num": "text",
        "note": "text",
        "bad_date": "text",
    }
    for key, field in added.items():
        assert field["label"] == key.replace("_", " ").capitalize()
        assert field["options"] is None
        assert {
            "id",
            "key",
            "label",
            "type",
            "options",
            "position",
            "created_at",
            "updated_at",
        } <= set(field)

    listed = await listing(client, ws.headers)
    assert {f["key"]: f["type"] for f in listed["fields"]} == {
        k: f["type"] for k, f in added.items()
    }
    assert listed["unregistered"] == []
    # Scanning declares; it never rewrites stored values.
    for contact_id, seeded in zip(ids, values, strict=True):
        assert await stored(client, ws.headers, contact_id) == seeded

    again = await client.post(f"{FIELDS}/scan", headers=ws.headers)
    assert again.status_code == 200
    assert again.json()["added"] == []


async def test_scan_types_apply_to_later_writes(client, ws, db):
    contact = await new_contact(client, ws.headers, "a@example.com")
    await seed_values(db, contact["id"], {"score": 3})
    await client.post(f"{FIELDS}/scan", headers=ws.headers)
    refused = await patch_contact(
        client, ws.headers, contact["id"], {"custom_fields": {"score": "x"}}
    )
    assert refused.status_code == 400
    assert refused.json() == {"error": "custom_fields.score must be a number"}


async def test_scan_leaves_registered_keys_alone(client, ws, db):
    await create_field(client, ws.headers, key="plan", label="Plan name")
    contact = await new_contact(client, ws.headers, "a@example.com")
    await seed_values(db, contact["id"], {"plan": True, "fresh": 5})
    response = await client.post(f"{FIELDS}/scan", headers=ws.headers)
    assert [f["key"] for f in response.json()["added"]] == ["fresh"]
    fields = await fields_by_key(client, ws.headers)
    assert fields["plan"]["type"] == "text"
    assert fields["plan"]["label"] == "Plan name"


async def test_scan_reports_unaddressable_keys_and_does_not_register_them(client, ws):
    await new_contact(
        client,
        ws.headers,
        "a@example.com",
        custom_fields={"shoe size": 42, "zip-code": "0150", "fine": "x"},
    )
    await new_contact(client, ws.headers, "b@example.com", custom_fields={"shoe size": 40})
    response = await client.post(f"{FIELDS}/scan", headers=ws.headers)
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert sorted(body["unaddressable"]) == ["shoe size", "zip-code"]
    assert body["added"] == []  # `fine` was registered when first written
    listed = await listing(client, ws.headers)
    assert {f["key"] for f in listed["fields"]} == {"fine"}
    assert sorted(listed["unaddressable"], key=lambda u: u["key"]) == [
        {"key": "shoe size", "uses": 2},
        {"key": "zip-code", "uses": 1},
    ]


async def test_scan_with_nothing_to_do(client, ws):
    response = await client.post(f"{FIELDS}/scan", headers=ws.headers)
    assert response.status_code == 200
    assert response.json() == {"ok": True, "added": [], "unaddressable": []}
