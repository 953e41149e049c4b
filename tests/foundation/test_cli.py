"""The `mailroom` command's contract (DESIGN.md): --json outputs parsed as a tool would."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli


def _json(result):
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


async def test_create_workspace_key_and_revoke_through_the_api(cli_env, client):
    created = _json(
        run_cli("admin", "create-workspace", "--plan", "starter", "--json", env=cli_env)
    )
    assert set(created) == {"account_id", "workspace_id", "key_id", "api_key"}
    headers = {"x-api-key": created["api_key"]}
    account = (await client.get("/api/v1/account", headers=headers)).json()
    assert account["workspace_id"] == created["workspace_id"]
    assert account["plan"]["name"] == "starter"
    assert len(account["permissions"]) == 24

    second = _json(
        run_cli(
            "admin",
            "create-key",
            "--workspace",
            created["workspace_id"],
            "--permissions",
            "contacts:read,audit:read",
            "--json",
            env=cli_env,
        )
    )
    assert set(second) == {"key_id", "api_key"}
    limited = (await client.get("/api/v1/account", headers={"x-api-key": second["api_key"]})).json()
    assert limited["permissions"] == ["contacts:read", "audit:read"]

    revoked = run_cli("admin", "revoke-key", second["key_id"], "--json", env=cli_env)
    assert json.loads(revoked.stdout)["key_id"] == second["key_id"]
    after = await client.get("/api/v1/account", headers={"x-api-key": second["api_key"]})
    assert after.status_code == 401
    assert (await client.get("/api/v1/account", headers=headers)).status_code == 200


async def test_workspaces_can_share_an_account(cli_env, client):
    first = _json(run_cli("admin", "create-workspace", "--plan", "pro", "--json", env=cli_env))
    second = _json(
        run_cli(
            "admin", "create-workspace", "--account", first["account_id"], "--json", env=cli_env
        )
    )
    assert second["account_id"] == first["account_id"]
    assert second["workspace_id"] != first["workspace_id"]
    body = (await client.get("/api/v1/account", headers={"x-api-key": second["api_key"]})).json()
    assert body["plan"]["name"] == "pro"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("admin", "create-workspace", "--plan", "platinum"), "Unknown plan: platinum"),
        (("admin", "create-workspace", "--plan", ""), "Unknown plan: ."),
        (
            ("admin", "create-workspace", "--permissions", "contacts:read,foo:bar"),
            "Unknown permission(s): foo:bar",
        ),
        (("admin", "create-workspace", "--account", "no-such-account"), "Account not found"),
        (("admin", "create-key", "--workspace", "nope"), "Workspace not found"),
        (("admin", "revoke-key", "nope"), "API key not found"),
    ],
)
async def test_bad_input_is_a_clear_error_and_creates_nothing(cli_env, db, args, message):
    from sqlalchemy import func, select

    from mailroom.models import Account, ApiKey, Workspace

    result = run_cli(*args, "--json", env=cli_env)
    assert result.returncode == 1
    assert message in " ".join(result.stderr.split())
    async with db.session() as session:
        for model in (Account, Workspace, ApiKey):
            assert await session.scalar(select(func.count()).select_from(model)) == 0


def test_every_command_has_help():
    from typer.testing import CliRunner

    from mailroom.cli import app

    runner = CliRunner()
    for args in (
        (),
        ("serve",),
        ("worker",),
        ("db",),
        ("db", "upgrade"),
        ("admin",),
        ("admin", "create-workspace"),
        ("admin", "create-key"),
        ("admin", "revoke-key"),
    ):
        result = runner.invoke(app, [*args, "--help"])
        assert result.exit_code == 0, (args, result.output)
        assert "Usage" in result.output


def test_db_upgrade_is_idempotent(cli_env):
    for _ in range(2):
        result = run_cli("db", "upgrade", env=cli_env)
        assert result.returncode == 0, result.stderr
