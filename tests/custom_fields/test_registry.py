"""Spec, CustomFieldDefinition and Custom fields: the registry endpoints (create, list, update,
delete), their validation, the 100-field limit and workspace isolation."""

from __future__ import annotations

import pytest

from tests.custom_fields.helpers import (
    FIELDS,
    create_field,
    fields_by_key,
    listing,
    new_contact,
    patch_contact,
    stored,
)

TYPES_MESSAGE = "type must be one of text, number, boolean, date, dropdown"
KEY_FORMAT = "key must be 1-64 letters, digits or underscores"

# ---------------------------------------------------------------- create


async def test_create_defaults_text_with_label_from_key(client, ws):
    response = await client.post(FIELDS, json={"key": "favourite_colour"}, headers=ws.headers)
    assert response.status_code == 201
    field = response.json()["field"]
    assert field["key"] == "favourite_colour"
    assert field["label"] == "Favourite colour"
    assert field["type"] == "text"
    assert field["options"] is None
    assert isinstance(field["id"], str) and field["id"]
    assert isinstance(field["position"], int)
    assert field["created_at"] and field["updated_at"]
    listed = await fields_by_key(client, ws.headers)
    assert listed["favourite_colour"]["label"] == "Favourite colour"
    assert listed["favourite_colour"]["uses"] == 0


@pytest.mark.parametrize(
    ("key", "label"),
    [
        ("plan", "Plan"),
        ("first_purchase_date", "First purchase date"),
        ("lifetime_value_2024", "Lifetime value 2024"),
        ("Zip_Code", "Zip Code"),
    ],
)
async def test_default_label_is_key_with_spaces_capitalised(client, ws, key, label):
    field = await create_field(client, ws.headers, key=key)
    assert field["label"] == label


async def test_explicit_label_is_kept(client, ws):
    field = await create_field(client, ws.headers, key="ltv", label="Lifetime value (EUR)")
    assert field["label"] == "Lifetime value (EUR)"
    assert (await fields_by_key(client, ws.headers))["ltv"]["label"] == "Lifetime value (EUR)"


@pytest.mark.parametrize("field_type", ["text", "number", "boolean", "date"])
async def test_create_each_plain_type(client, ws, field_type):
    field = await create_field(client, ws.headers, key=f"f_{field_type}", type=field_type)
    assert field["type"] == field_type
    assert field["options"] is None
    assert (await fields_by_key(client, ws.headers))[f"f_{field_type}"]["type"] == field_type


async def test_create_dropdown_with_options(client, ws):
    field = await create_field(
        client, ws.headers, key="tier", type="dropdown", options=["Gold", "Silver", "Bronze"]
    )
    assert field["type"] == "dropdown"
    assert field["options"] == ["Gold", "Silver", "Bronze"]
    listed = (await fields_by_key(client, ws.headers))["tier"]
    assert listed["options"] == ["Gold", "Silver", "Bronze"]


async def test_positions_follow_creation_order(client, ws):
    for key in ("alpha", "beta", "gamma"):
        await create_field(client, ws.headers, key=key)
    fields = (await listing(client, ws.headers))["fields"]
    assert [f["key"] for f in fields] == ["alpha", "beta", "gamma"]
    positions = [f["position"] for f in fields]
    assert positions == sorted(positions) and len(set(positions)) == 3


async def test_key_is_required(client, ws):
    for body in ({}, {"key": ""}, {"label": "No key"}):
        response = await client.post(FIELDS, json=body, headers=ws.headers)
        assert response.status_code == 400
        assert response.json() == {"error": "key is required"}
    assert (await listing(client, ws.headers))["fields"] == []


@pytest.mark.parametrize(
    "key", ["has space", "has-dash", "dotted.key", "émoji", "k" * 65, "semi;colon", "a/b"]
)
async def test_key_format_is_refused(client, ws, key):
    response = await client.post(FIELDS, json={"key": key}, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": KEY_FORMAT}
    assert (await listing(client, ws.headers))["fields"] == []


@pytest.mark.parametrize("key", ["a", "A1", "_", "k" * 64, "snake_case_9"])
async def test_key_format_accepted(client, ws, key):
    field = await create_field(client, ws.headers, key=key)
    assert field["key"] == key


async def test_duplicate_key_is_409(client, ws):
    await create_field(client, ws.headers, key="plan")
    response = await client.post(FIELDS, json={"key": "plan"}, headers=ws.headers)
    assert response.status_code == 409
    assert response.json()["error"].startswith("A custom field with this key already exists")
    assert len((await listing(client, ws.headers))["fields"]) == 1


async def test_label_max_80(client, ws):
    ok = await create_field(client, ws.headers, key="long_ok", label="L" * 80)
    assert ok["label"] == "L" * 80
    response = await client.post(
        FIELDS, json={"key": "too_long", "label": "L" * 81}, headers=ws.headers
    )
    assert response.status_code == 400
    assert response.json() == {"error": "label must be 80 characters or fewer"}
    assert "too_long" not in await fields_by_key(client, ws.headers)


@pytest.mark.parametrize("field_type", ["color", "TEXT", "integer", "", "multi_select"])
async def test_invalid_type(client, ws, field_type):
    response = await client.post(FIELDS, json={"key": "k", "type": field_type}, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": TYPES_MESSAGE}


@pytest.mark.parametrize("body", [{}, {"options": []}, {"options": None}])
async def test_dropdown_needs_an_option(client, ws, body):
    response = await client.post(
        FIELDS, json={"key": "tier", "type": "dropdown", **body}, headers=ws.headers
    )
    assert response.status_code == 400
    assert response.json() == {"error": "dropdown fields need at least one option"}
    assert (await listing(client, ws.headers))["fields"] == []


async def test_dropdown_option_count_limits(client, ws):
    hundred = [f"opt{i}" for i in range(100)]
    field = await create_field(client, ws.headers, key="many", type="dropdown", options=hundred)
    assert field["options"] == hundred
    one = await create_field(client, ws.headers, key="one", type="dropdown", options=["Only"])
    assert one["options"] == ["Only"]
    response = await client.post(
        FIELDS,
        json={"key": "too_many", "type": "dropdown", "options": [*hundred, "opt100"]},
        headers=ws.headers,
    )
    assert response.status_code == 400
    assert response.json() == {"error": "dropdown fields may have at most 100 options"}
    assert "too_many" not in await fields_by_key(client, ws.headers)


async def test_dropdown_option_length_max_200(client, ws):
    field = await create_field(
        client, ws.headers, key="long_opt", type="dropdown", options=["x" * 200]
    )
    assert field["options"] == ["x" * 200]
    response = await client.post(
        FIELDS,
        json={"key": "too_long_opt", "type": "dropdown", "options": ["ok", "x" * 201]},
        headers=ws.headers,
    )
    assert response.status_code == 400
    assert response.json() == {"error": "each option must be 200 characters or fewer"}
    assert "too_long_opt" not in await fields_by_key(client, ws.headers)


async def test_at_most_100_fields(client, ws):
    for i in range(100):
        response = await client.post(FIELDS, json={"key": f"field_{i:03d}"}, headers=ws.headers)
        assert response.status_code == 201, (i, response.text)
    response = await client.post(FIELDS, json={"key": "field_100"}, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": "A workspace can have at most 100 custom fields"}
    fields = (await listing(client, ws.headers))["fields"]
    assert len(fields) == 100
    assert "field_100" not in {f["key"] for f in fields}
    # Deleting one makes room again.
    deleted = await client.delete(f"{FIELDS}/field_000", headers=ws.headers)
    assert deleted.status_code == 200
    again = await client.post(FIELDS, json={"key": "field_100"}, headers=ws.headers)
    assert again.status_code == 201


# ---------------------------------------------------------------- update


async def test_patch_label(client, ws):
    await create_field(client, ws.headers, key="plan")
    response = await client.patch(f"{FIELDS}/plan", json={"label": "Plan name"}, headers=ws.headers)
    assert response.status_code == 200
    body = response.json()
    assert body["field"]["label"] == "Plan name"
    assert body["field"]["key"] == "plan"
    assert body["violations"] is None
    assert (await fields_by_key(client, ws.headers))["plan"]["label"] == "Plan name"


async def test_patch_label_over_80(client, ws):
    await create_field(client, ws.headers, key="plan")
    response = await client.patch(f"{FIELDS}/plan", json={"label": "L" * 81}, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": "label must be 80 characters or fewer"}
    assert (await fields_by_key(client, ws.headers))["plan"]["label"] == "Plan"


async def test_patch_type_without_stored_values(client, ws):
    await create_field(client, ws.headers, key="score")
    response = await client.patch(f"{FIELDS}/score", json={"type": "number"}, headers=ws.headers)
    assert response.status_code == 200
    assert response.json()["field"]["type"] == "number"
    assert response.json()["violations"] is None
    assert (await fields_by_key(client, ws.headers))["score"]["type"] == "number"


async def test_patch_invalid_type(client, ws):
    await create_field(client, ws.headers, key="score")
    response = await client.patch(f"{FIELDS}/score", json={"type": "float"}, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": TYPES_MESSAGE}
    assert (await fields_by_key(client, ws.headers))["score"]["type"] == "text"


async def test_patch_to_dropdown_needs_options(client, ws):
    await create_field(client, ws.headers, key="tier")
    response = await client.patch(f"{FIELDS}/tier", json={"type": "dropdown"}, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": "dropdown fields need at least one option"}
    response = await client.patch(
        f"{FIELDS}/tier", json={"type": "dropdown", "options": ["A", "B"]}, headers=ws.headers
    )
    assert response.status_code == 200
    assert response.json()["field"]["options"] == ["A", "B"]


async def test_patch_dropdown_options(client, ws):
    await create_field(client, ws.headers, key="tier", type="dropdown", options=["A"])
    response = await client.patch(
        f"{FIELDS}/tier", json={"options": ["A", "B", "C"]}, headers=ws.headers
    )
    assert response.status_code == 200
    assert response.json()["field"]["options"] == ["A", "B", "C"]
    assert (await fields_by_key(client, ws.headers))["tier"]["options"] == ["A", "B", "C"]
    too_many = await client.patch(
        f"{FIELDS}/tier", json={"options": [f"o{i}" for i in range(101)]}, headers=ws.headers
    )
    assert too_many.status_code == 400
    assert too_many.json() == {"error": "dropdown fields may have at most 100 options"}
    empty = await client.patch(f"{FIELDS}/tier", json={"options": []}, headers=ws.headers)
    assert empty.status_code == 400
    assert empty.json() == {"error": "dropdown fields need at least one option"}
    too_long = await client.patch(
        f"{FIELDS}/tier", json={"options": ["y" * 201]}, headers=ws.headers
    )
    assert too_long.status_code == 400
    assert too_long.json() == {"error": "each option must be 200 characters or fewer"}
    assert (await fields_by_key(client, ws.headers))["tier"]["options"] == ["A", "B", "C"]


async def test_key_cannot_be_changed(client, ws):
    await create_field(client, ws.headers, key="plan")
    response = await client.patch(
        f"{FIELDS}/plan", json={"key": "plan_name", "label": "Plan name"}, headers=ws.headers
    )
    assert response.status_code == 400
    assert response.json() == {"error": "key cannot be changed"}
    fields = await fields_by_key(client, ws.headers)
    assert set(fields) == {"plan"}
    assert fields["plan"]["label"] == "Plan"


async def test_sending_the_same_key_is_not_a_change(client, ws):
    await create_field(client, ws.headers, key="plan")
    response = await client.patch(
        f"{FIELDS}/plan", json={"key": "plan", "label": "Plan name"}, headers=ws.headers
    )
    assert response.status_code == 200
    assert response.json()["field"]["label"] == "Plan name"


@pytest.mark.parametrize("body", [{}, {"confirm_violations": True}, {"key": "plan"}])
async def test_nothing_to_update(client, ws, body):
    await create_field(client, ws.headers, key="plan")
    response = await client.patch(f"{FIELDS}/plan", json=body, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": "Nothing to update: send label, type or options"}


async def test_unknown_key_is_404(client, ws):
    patched = await client.patch(f"{FIELDS}/nope", json={"label": "X"}, headers=ws.headers)
    assert patched.status_code == 404
    assert patched.json() == {"error": "Custom field not found"}
    deleted = await client.delete(f"{FIELDS}/nope", headers=ws.headers)
    assert deleted.status_code == 404
    assert deleted.json() == {"error": "Custom field not found"}


# ---------------------------------------------------------------- delete


async def test_delete_removes_value_from_every_contact(client, ws):
    await create_field(client, ws.headers, key="plan_tier")
    a = await new_contact(
        client, ws.headers, "a@example.com", custom_fields={"plan_tier": "gold", "city": "Oslo"}
    )
    b = await new_contact(client, ws.headers, "b@example.com", custom_fields={"plan_tier": "free"})
    c = await new_contact(client, ws.headers, "c@example.com", custom_fields={"city": "Rome"})
    response = await client.delete(f"{FIELDS}/plan_tier", headers=ws.headers)
    assert response.status_code == 200
    assert response.json() == {
        "ok": True,
        "key": "plan_tier",
        "contacts_cleared": 2,
        "forms_updated": 0,
    }
    assert await stored(client, ws.headers, a["id"]) == {"city": "Oslo"}
    assert await stored(client, ws.headers, b["id"]) == {}
    assert await stored(client, ws.headers, c["id"]) == {"city": "Rome"}
    listed = await client.get("/api/v1/contacts", headers=ws.headers)
    assert all("plan_tier" not in row["custom_fields"] for row in listed.json()["contacts"])
    body = await listing(client, ws.headers)
    assert "plan_tier" not in {f["key"] for f in body["fields"]}
    assert "plan_tier" not in {u["key"] for u in body["unregistered"]}
    again = await client.delete(f"{FIELDS}/plan_tier", headers=ws.headers)
    assert again.status_code == 404


async def test_delete_leaves_other_workspaces_alone(client, ws, factory):
    other = await factory.workspace("pro")
    await create_field(client, ws.headers, key="plan_tier")
    await create_field(client, other.headers, key="plan_tier")
    mine = await new_contact(client, ws.headers, "a@example.com", custom_fields={"plan_tier": "x"})
    theirs = await new_contact(
        client, other.headers, "a@example.com", custom_fields={"plan_tier": "y"}
    )
    response = await client.delete(f"{FIELDS}/plan_tier", headers=ws.headers)
    assert response.json()["contacts_cleared"] == 1
    assert await stored(client, ws.headers, mine["id"]) == {}
    assert await stored(client, other.headers, theirs["id"]) == {"plan_tier": "y"}
    assert "plan_tier" in await fields_by_key(client, other.headers)


async def test_deleted_key_sent_again_is_registered_as_text(client, ws):
    await create_field(client, ws.headers, key="score", type="number")
    contact = await new_contact(client, ws.headers, "a@example.com", custom_fields={"score": 5})
    assert (await client.delete(f"{FIELDS}/score", headers=ws.headers)).status_code == 200
    # No longer typed: a value that did not fit `number` is accepted now.
    response = await patch_contact(
        client, ws.headers, contact["id"], {"custom_fields": {"score": "high"}}
    )
    assert response.status_code == 200
    assert await stored(client, ws.headers, contact["id"]) == {"score": "high"}
    field = (await fields_by_key(client, ws.headers))["score"]
    assert field["type"] == "text"
    assert field["label"] == "Score"


# ---------------------------------------------------------------- workspaces and permissions


async def test_other_workspace_cannot_see_or_change_fields(client, ws, factory):
    await create_field(client, ws.headers, key="plan", type="dropdown", options=["A", "B"])
    await new_contact(client, ws.headers, "a@example.com", custom_fields={"plan": "A", "x y": "1"})
    other = await factory.workspace("pro")

    theirs = await listing(client, other.headers)
    assert theirs["fields"] == []
    assert theirs["unregistered"] == []
    assert theirs["unaddressable"] == []

    patched = await client.patch(f"{FIELDS}/plan", json={"label": "Hijack"}, headers=other.headers)
    assert patched.status_code == 404
    assert patched.json() == {"error": "Custom field not found"}
    deleted = await client.delete(f"{FIELDS}/plan", headers=other.headers)
    assert deleted.status_code == 404
    scanned = await client.post(f"{FIELDS}/scan", headers=other.headers)
    assert scanned.status_code == 200
    assert scanned.json()["added"] == []
    assert scanned.json()["unaddressable"] == []

    mine = await fields_by_key(client, ws.headers)
    assert mine["plan"]["label"] == "Plan"
    assert mine["plan"]["options"] == ["A", "B"]
    assert mine["plan"]["uses"] == 1

    # Keys are unique per workspace, not globally; typing is per workspace too.
    created = await client.post(
        FIELDS, json={"key": "plan", "type": "number"}, headers=other.headers
    )
    assert created.status_code == 201
    contact = await client.post(
        "/api/v1/contacts",
        json={"email": "b@example.com", "custom_fields": {"plan": "C"}},
        headers=ws.headers,
    )
    assert contact.status_code == 400
    assert contact.json() == {"error": "custom_fields.plan must be one of A, B"}
    other_contact = await client.post(
        "/api/v1/contacts",
        json={"email": "b@example.com", "custom_fields": {"plan": "12"}},
        headers=other.headers,
    )
    assert other_contact.status_code == 201
    assert (await fields_by_key(client, ws.headers))["plan"]["type"] == "dropdown"


async def test_permissions(client, ws, factory):
    reader = await factory.key(ws, "contacts:read")
    writer = await factory.key(ws, "contacts:write")
    assert (await client.get(FIELDS, headers=reader)).status_code == 200
    forbidden = "Forbidden: contacts:write permission required"
    for response in (
        await client.post(FIELDS, json={"key": "plan"}, headers=reader),
        await client.patch(f"{FIELDS}/plan", json={"label": "x"}, headers=reader),
        await client.delete(f"{FIELDS}/plan", headers=reader),
        await client.post(f"{FIELDS}/scan", headers=reader),
    ):
        assert response.status_code == 403
        assert response.json() == {"error": forbidden}
    assert (await client.post(FIELDS, json={"key": "plan"}, headers=writer)).status_code == 201
    read_denied = await client.get(FIELDS, headers=writer)
    assert read_denied.status_code == 403
    assert read_denied.json() == {"error": "Forbidden: contacts:read permission required"}
    unauth = await client.get(FIELDS)
    assert unauth.status_code == 401
    assert unauth.json() == {"error": "Unauthorized"}


async def test_options_only_for_dropdown_on_patch(client, ws):
    await create_field(client, ws.headers, key="plan")
    response = await client.patch(f"{FIELDS}/plan", json={"options": ["A"]}, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": "options are only for dropdown fields"}
    assert (await fields_by_key(client, ws.headers))["plan"]["options"] is None


async def test_options_are_not_kept_on_a_non_dropdown_create(client, ws):
    response = await client.post(
        FIELDS, json={"key": "plan", "type": "text", "options": ["A"]}, headers=ws.headers
    )
    # Either refused or created without options: `options` is dropdown only.
    assert response.status_code in (201, 400)
    if response.status_code == 201:
        assert response.json()["field"]["options"] is None
        assert (await fields_by_key(client, ws.headers))["plan"]["options"] is None


async def test_leaving_dropdown_drops_options(client, ws):
    await create_field(client, ws.headers, key="tier", type="dropdown", options=["A", "B"])
    response = await client.patch(f"{FIELDS}/tier", json={"type": "text"}, headers=ws.headers)
    assert response.status_code == 200
    assert response.json()["field"]["type"] == "text"
    assert response.json()["field"]["options"] is None
    assert (await fields_by_key(client, ws.headers))["tier"]["options"] is None


async def test_registry_never_exceeds_100_fields(client, ws):
    """At the limit neither a contact write nor a scan adds a 101st field."""
    for i in range(100):
        assert (
            await client.post(FIELDS, json={"key": f"f{i:03d}"}, headers=ws.headers)
        ).status_code == 201
    response = await client.post(
        "/api/v1/contacts",
        json={"email": "a@example.com", "custom_fields": {"one_more": "x"}},
        headers=ws.headers,
    )
    assert response.status_code in (201, 400), response.text
    body = await listing(client, ws.headers)
    assert len(body["fields"]) == 100
    if response.status_code == 201:
        assert body["unregistered"] == [{"key": "one_more", "uses": 1}]
        scanned = await client.post(f"{FIELDS}/scan", headers=ws.headers)
        assert scanned.status_code == 200
        assert scanned.json()["added"] == []
        assert len((await listing(client, ws.headers))["fields"]) == 100
