"""Spec, CustomFieldDefinition, CustomFields rules 3-4 and Endpoints (Custom fields): response
shapes and value limits the existing custom-field tests leave unchecked."""

from __future__ import annotations

import pytest

from tests.spec_contacts.helpers import CONTACTS, FIELDS, create, get, patch

DEFINITION_FIELDS = {
    "id",
    "key",
    "label",
    "type",
    "options",
    "position",
    "created_at",
    "updated_at",
}


async def test_definition_shapes_and_uses_only_in_the_list(client, ws):
    created = await client.post(
        FIELDS, json={"key": "tier", "type": "dropdown", "options": ["A", "B"]}, headers=ws.headers
    )
    assert created.status_code == 201
    assert set(created.json()) == {"field"}
    field = created.json()["field"]
    assert set(field) >= DEFINITION_FIELDS
    assert "uses" not in field
    assert isinstance(field["position"], int)
    await create(client, ws.headers, "a@mailtest.io", custom_fields={"tier": "A", "x-y": "1"})
    patched = await client.patch(f"{FIELDS}/tier", json={"label": "Tier"}, headers=ws.headers)
    assert patched.status_code == 200
    assert set(patched.json()) == {"field", "violations"}
    assert "uses" not in patched.json()["field"]
    listed = await client.get(FIELDS, headers=ws.headers)
    assert listed.status_code == 200
    body = listed.json()
    assert set(body) == {"fields", "unregistered", "unaddressable", "usage_available"}
    assert body["usage_available"] is True
    [tier] = body["fields"]
    assert DEFINITION_FIELDS | {"uses"} <= set(tier)
    assert tier["uses"] == 1
    assert body["unaddressable"] == [{"key": "x-y", "uses": 1}]
    assert body["unregistered"] == []
    scanned = await client.post(f"{FIELDS}/scan", headers=ws.headers)
    assert scanned.status_code == 200
    assert set(scanned.json()) == {"ok", "added", "unaddressable"}
    assert scanned.json()["unaddressable"] == ["x-y"]
    deleted = await client.delete(f"{FIELDS}/tier", headers=ws.headers)
    assert deleted.status_code == 200
    assert deleted.json()["ok"] is True and deleted.json()["key"] == "tier"
    assert deleted.json()["contacts_cleared"] == 1


@pytest.mark.parametrize("char", ["é", "😀", "中"])
async def test_value_limit_counts_characters(client, ws, char):
    contact = await create(client, ws.headers, "len@mailtest.io", custom_fields={"bio": char * 200})
    assert (await get(client, ws.headers, contact["id"]))["custom_fields"] == {"bio": char * 200}
    response = await patch(
        client, ws.headers, contact["id"], {"custom_fields": {"bio": char * 201}}
    )
    assert response.status_code == 400
    assert response.json() == {"error": "custom_fields.bio must be 200 characters or fewer"}


async def test_nulls_do_not_count_toward_the_50_keys_on_create(client, ws):
    values = {f"k{i}": i for i in range(50)}
    values["dropped"] = None
    contact = await create(client, ws.headers, "fifty@mailtest.io", custom_fields=values)
    stored = (await get(client, ws.headers, contact["id"]))["custom_fields"]
    assert len(stored) == 50 and "dropped" not in stored


async def test_typed_value_refusal_stores_nothing(client, ws):
    await client.post(FIELDS, json={"key": "born", "type": "date"}, headers=ws.headers)
    response = await client.post(
        CONTACTS,
        json={"email": "d@mailtest.io", "custom_fields": {"born": "31/02/2000"}},
        headers=ws.headers,
    )
    assert response.status_code == 400
    assert response.json()["error"].startswith("custom_fields.born must be ")
    listed = await client.get(CONTACTS, headers=ws.headers)
    assert listed.json()["pagination"]["total"] == 0
