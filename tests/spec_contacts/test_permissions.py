"""Spec, Endpoints (Contacts, Custom fields) permission column and Authentication: every
contact and custom-field route refuses a key without its permission with the exact message."""

from __future__ import annotations

import pytest

from tests.spec_contacts.helpers import create

ALL_BUT = {
    "contacts:read": ["contacts:write", "contacts:export", "tags:read", "tags:write"],
    "contacts:write": ["contacts:read", "contacts:export", "tags:read", "tags:write"],
    "tags:read": ["contacts:read", "contacts:write", "tags:write"],
    "tags:write": ["contacts:read", "contacts:write", "tags:read"],
}

ROUTES = [
    ("GET", "/api/v1/contacts", None, "contacts:read"),
    ("POST", "/api/v1/contacts", {"email": "n@mailtest.io"}, "contacts:write"),
    ("GET", "/api/v1/contacts/{c}", None, "contacts:read"),
    ("PATCH", "/api/v1/contacts/{c}", {"first_name": "X"}, "contacts:write"),
    ("DELETE", "/api/v1/contacts/{c}", None, "contacts:write"),
    ("DELETE", "/api/v1/contacts/{c}?mode=erase", None, "contacts:write"),
    ("GET", "/api/v1/contacts/{c}/tags", None, "tags:read"),
    ("POST", "/api/v1/contacts/{c}/tags", {"tag_id": "{t}"}, "tags:write"),
    ("DELETE", "/api/v1/contacts/{c}/tags/{t}", None, "tags:write"),
    ("GET", "/api/v1/custom-fields", None, "contacts:read"),
    ("POST", "/api/v1/custom-fields", {"key": "k"}, "contacts:write"),
    ("PATCH", "/api/v1/custom-fields/plan", {"label": "P"}, "contacts:write"),
    ("DELETE", "/api/v1/custom-fields/plan", None, "contacts:write"),
    ("POST", "/api/v1/custom-fields/scan", None, "contacts:write"),
]


@pytest.fixture
async def target(client, ws):
    contact = await create(client, ws.headers, "p@mailtest.io", first_name="Orig")
    tag = (await client.post("/api/v1/tags", json={"name": "t"}, headers=ws.headers)).json()["tag"]
    await client.post(
        f"/api/v1/contacts/{contact['id']}/tags", json={"tag_id": tag["id"]}, headers=ws.headers
    )
    await client.post("/api/v1/custom-fields", json={"key": "plan"}, headers=ws.headers)
    return contact["id"], tag["id"]


def _fill(value, c, t):
    if isinstance(value, str):
        return value.replace("{c}", c).replace("{t}", t)
    if isinstance(value, dict):
        return {k: _fill(v, c, t) for k, v in value.items()}
    return value


@pytest.mark.parametrize(("method", "path", "body", "permission"), ROUTES)
async def test_missing_permission_is_403_with_its_name(
    client, ws, factory, target, method, path, body, permission
):
    c, t = target
    headers = await factory.key(ws, ALL_BUT[permission])
    response = await client.request(
        method, _fill(path, c, t), json=_fill(body, c, t), headers=headers
    )
    assert response.status_code == 403
    assert response.json() == {"error": f"Forbidden: {permission} permission required"}
    contact = await client.get(f"/api/v1/contacts/{c}", headers=ws.headers)
    assert contact.status_code == 200
    assert contact.json()["contact"]["first_name"] == "Orig"
    assert len(contact.json()["contact"]["tags"]) == 1


@pytest.mark.parametrize(("method", "path", "body", "permission"), ROUTES)
@pytest.mark.parametrize("key", [None, "", "not-a-key", "mr_live_abcdefgh_" + "x" * 32])
async def test_missing_or_bad_key_is_401(client, target, method, path, body, permission, key):
    c, t = target
    headers = {} if key is None else {"x-api-key": key}
    response = await client.request(
        method, _fill(path, c, t), json=_fill(body, c, t), headers=headers
    )
    assert response.status_code == 401
    assert response.json() == {"error": "Unauthorized"}
