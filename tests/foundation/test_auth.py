"""Spec, Authentication 1-9: keys, 401, permissions and their 403 text."""

from __future__ import annotations

import pytest

from mailroom.core.auth import PERMISSIONS, generate_key, key_lookup
from tests.foundation.probe import router as probe_router


@pytest.fixture
def probe(app):
    app.include_router(probe_router)
    return app


def test_key_shape_and_hash():
    key, lookup, digest = generate_key()
    assert key.startswith("mr_live_")
    assert len(key) == len("mr_live_") + 8 + 1 + 32
    assert key_lookup(key) == lookup
    assert len(digest) == 64 and key not in digest


def test_all_24_permissions():
    assert len(PERMISSIONS) == 24
    assert len(set(PERMISSIONS)) == 24


async def test_stored_hashed_never_plain(ws, db):
    from sqlalchemy import select

    from mailroom.models import ApiKey

    async with db.session() as session:
        row = (await session.scalars(select(ApiKey).where(ApiKey.id == ws.key_id))).one()
    assert ws.api_key not in (row.key_hash, row.lookup)
    assert row.lookup == ws.api_key.split("_")[2]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"x-api-key": ""},
        {"x-api-key": "nonsense"},
        {"x-api-key": "mr_live_abc_def"},
        {"x-api-key": "mr_test_abcdefgh_" + "a" * 32},
        {"x-api-key": "mr_live_abcdefgh_" + "a" * 31},
        {"x-api-key": "mr_live_zzzzzzzz_" + "a" * 32},  # well-formed, unknown
        {"authorization": "Bearer mr_live_abcdefgh_" + "a" * 32},
    ],
)
async def test_missing_malformed_unknown_keys_are_401(client, ws, headers):
    response = await client.get("/api/v1/account", headers=headers)
    assert response.status_code == 401
    assert response.json() == {"error": "Unauthorized"}


async def test_wrong_secret_for_known_lookup_is_401(client, ws):
    lookup = ws.api_key.split("_")[2]
    forged = f"mr_live_{lookup}_{'X' * 32}"
    response = await client.get("/api/v1/account", headers={"x-api-key": forged})
    assert response.status_code == 401
    assert response.json() == {"error": "Unauthorized"}


async def test_unknown_api_path_without_key_is_401_not_404(client):
    response = await client.post("/api/v1/nothing-here", content=b"{not json")
    assert response.status_code == 401
    assert response.json() == {"error": "Unauthorized"}


async def test_revoked_key_is_401(client, ws, db):
    from mailroom.accounts import service

    assert (await client.get("/api/v1/account", headers=ws.headers)).status_code == 200
    async with db.transaction() as session:
        await service.revoke_key(session, ws.key_id)
    response = await client.get("/api/v1/account", headers=ws.headers)
    assert response.status_code == 401
    assert response.json() == {"error": "Unauthorized"}


async def test_missing_permission_is_403_with_spec_text(client, probe, factory):
    workspace = await factory.workspace(permissions="contacts:read")
    response = await client.post(
        "/api/v1/probe/jobs", json={"name": "x"}, headers=workspace.headers
    )
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: contacts:write permission required"}
    ok = await client.get("/api/v1/probe/contacts", headers=workspace.headers)
    assert ok.status_code == 200


async def test_read_does_not_grant_export(client, probe, factory):
    reader = await factory.workspace(permissions="contacts:read")
    response = await client.get("/api/v1/probe/export", headers=reader.headers)
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: contacts:export permission required"}
    exporter = await factory.workspace(permissions="contacts:read,contacts:export")
    assert (await client.get("/api/v1/probe/export", headers=exporter.headers)).status_code == 200


async def test_forms_accept_legacy_automations_write(client, probe, factory):
    legacy = await factory.workspace(permissions="automations:write")
    assert (await client.get("/api/v1/probe/forms", headers=legacy.headers)).status_code == 200
    other = await factory.workspace(permissions="automations:read")
    response = await client.get("/api/v1/probe/forms", headers=other.headers)
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: forms:write permission required"}


async def test_key_is_bound_to_its_workspace(client, probe, factory):
    first = await factory.workspace()
    second = await factory.workspace()
    one = await client.get("/api/v1/probe/contacts", headers=first.headers)
    two = await client.get("/api/v1/probe/contacts", headers=second.headers)
    assert one.json()["workspace_id"] == first.workspace_id
    assert two.json()["workspace_id"] == second.workspace_id
    account = await client.get("/api/v1/account", headers=second.headers)
    assert account.json()["workspace_id"] == second.workspace_id


async def test_account_describes_key_and_plan(client, factory):
    workspace = await factory.workspace("starter", permissions="contacts:read,audit:read")
    body = (await client.get("/api/v1/account", headers=workspace.headers)).json()
    assert body["permissions"] == ["contacts:read", "audit:read"]
    assert body["plan"]["name"] == "starter"
    assert body["plan"]["writes_per_hour"] == 600
    assert body["plan"]["contacts"] == 2500


async def test_last_used_at_recorded(client, ws, db):
    from mailroom.models import ApiKey

    await client.get("/api/v1/account", headers=ws.headers)
    async with db.session() as session:
        key = await session.get(ApiKey, ws.key_id)
    assert key is not None and key.last_used_at is not None
