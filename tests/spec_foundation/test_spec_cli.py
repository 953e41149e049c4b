"""The `mailroom admin` commands as a new operator would use them, checked through the API."""

from __future__ import annotations

from datetime import datetime

import pytest
from sqlalchemy import func, select

from mailroom.models import Account, ApiKey, Workspace
from tests.conftest import run_cli
from tests.spec_foundation.helpers import KEY_SHAPE, cli_json


async def _counts(db) -> tuple[int, ...]:
    async with db.session() as session:
        return tuple(
            [
                int(await session.scalar(select(func.count()).select_from(model)) or 0)
                for model in (Account, Workspace, ApiKey)
            ]
        )


@pytest.mark.parametrize(
    ("plan", "writes", "contacts"),
    [("free", 120, 500), ("business", None, 50_000)],
)
async def test_create_workspace_on_each_plan(cli_env, client, plan, writes, contacts):
    created = cli_json(run_cli("admin", "create-workspace", "--plan", plan, "--json", env=cli_env))
    assert set(created) == {"account_id", "workspace_id", "key_id", "api_key"}
    assert KEY_SHAPE.match(created["api_key"])
    body = (await client.get("/api/v1/account", headers={"x-api-key": created["api_key"]})).json()
    assert body["plan"]["name"] == plan
    assert body["plan"]["writes_per_hour"] == writes
    assert body["plan"]["contacts"] == contacts
    assert body["workspace_id"] == created["workspace_id"]
    assert body["account_id"] == created["account_id"]


async def test_create_workspace_with_chosen_permissions(cli_env, client):
    created = cli_json(
        run_cli(
            "admin",
            "create-workspace",
            "--plan",
            "pro",
            "--permissions",
            "contacts:read,audit:read",
            "--json",
            env=cli_env,
        )
    )
    headers = {"x-api-key": created["api_key"]}
    assert (await client.get("/api/v1/contacts", headers=headers)).status_code == 200
    refused = await client.post("/api/v1/contacts", json={"email": "a@shop.io"}, headers=headers)
    assert refused.status_code == 403
    assert refused.json() == {"error": "Forbidden: contacts:write permission required"}


async def test_empty_permission_list_is_refused_and_creates_nothing(cli_env, db, ws):
    before = await _counts(db)
    result = run_cli(
        "admin",
        "create-key",
        "--workspace",
        ws.workspace_id,
        "--permissions",
        "",
        "--json",
        env=cli_env,
    )
    assert result.returncode != 0
    assert result.stdout.strip() == ""
    assert result.stderr.strip()
    assert await _counts(db) == before


async def test_unknown_permission_on_create_workspace_creates_no_account(cli_env, db):
    before = await _counts(db)
    result = run_cli(
        "admin",
        "create-workspace",
        "--plan",
        "pro",
        "--permissions",
        "contacts:read,lists:delete",
        "--json",
        env=cli_env,
    )
    assert result.returncode != 0
    assert "lists:delete" in " ".join(result.stderr.split())
    assert await _counts(db) == before


async def test_revoke_key_json_and_the_key_stops_at_once(cli_env, client, ws):
    created = cli_json(
        run_cli("admin", "create-key", "--workspace", ws.workspace_id, "--json", env=cli_env)
    )
    headers = {"x-api-key": created["api_key"]}
    assert (await client.get("/api/v1/suppressions", headers=headers)).status_code == 200
    revoked = cli_json(run_cli("admin", "revoke-key", created["key_id"], "--json", env=cli_env))
    assert revoked["key_id"] == created["key_id"]
    datetime.fromisoformat(revoked["revoked_at"].replace("Z", "+00:00"))
    response = await client.get("/api/v1/suppressions", headers=headers)
    assert response.status_code == 401
    assert response.json() == {"error": "Unauthorized"}
    assert (await client.get("/api/v1/suppressions", headers=ws.headers)).status_code == 200


async def test_workspaces_sharing_an_account_share_its_plan(cli_env, client):
    first = cli_json(
        run_cli("admin", "create-workspace", "--plan", "starter", "--json", env=cli_env)
    )
    second = cli_json(
        run_cli(
            "admin", "create-workspace", "--account", first["account_id"], "--json", env=cli_env
        )
    )
    assert second["account_id"] == first["account_id"]
    for created in (first, second):
        body = (
            await client.get("/api/v1/account", headers={"x-api-key": created["api_key"]})
        ).json()
        assert body["plan"]["name"] == "starter"
        assert body["workspace_id"] == created["workspace_id"]
    # The keys are bound to their own workspace.
    contact = await client.post(
        "/api/v1/contacts", json={"email": "one@shop.io"}, headers={"x-api-key": first["api_key"]}
    )
    assert contact.status_code == 201
    other = await client.get(
        f"/api/v1/contacts/{contact.json()['contact']['id']}",
        headers={"x-api-key": second["api_key"]},
    )
    assert other.status_code == 404
    assert other.json() == {"error": "Contact not found"}
