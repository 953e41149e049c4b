"""The `mailroom` command's contract (DESIGN.md): --json outputs parsed as a tool would."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

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
        ("doctor",),
        ("backup",),
        ("restore",),
    ):
        result = runner.invoke(app, [*args, "--help"])
        assert result.exit_code == 0, (args, result.output)
        assert "Usage" in result.output


def test_db_upgrade_is_idempotent(cli_env):
    for _ in range(2):
        result = run_cli("db", "upgrade", env=cli_env)
        assert result.returncode == 0, result.stderr


# What a command that needs neither the web app nor the database must not load (issue 25:
# every command paid 1.5-2.9 s for FastAPI). Asserted on imports, never on time.
WEB_STACK = ("fastapi", "starlette", "uvicorn", "mailroom.app")
DATABASE_STACK = ("sqlalchemy", "alembic", "mailroom.db", "mailroom.models")


def _imported(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules `mailroom <args>` imports, from `python -X importtime`'s report."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mailroom", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("import time:")]
    return {line.rsplit("|", 1)[1].strip() for line in lines[1:]}


def _loaded(modules: set[str], roots: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == r or m.startswith(r + ".") for r in roots))


def test_help_loads_neither_the_web_app_nor_the_database():
    for args in ((), ("admin",), ("import",), ("admin", "set-plan")):
        modules = _imported(*args, "--help")
        assert "typer" in modules  # the report was read
        assert _loaded(modules, WEB_STACK + DATABASE_STACK) == [], args


def test_an_admin_command_does_not_load_the_web_app(cli_env):
    created = _json(run_cli("admin", "create-workspace", "--json", env=cli_env))
    modules = _imported("admin", "set-plan", created["account_id"], "pro", env=cli_env)
    assert "mailroom.accounts.service" in modules
    assert _loaded(modules, WEB_STACK) == []
    assert _loaded(_imported("admin", "list-workspaces", env=cli_env), WEB_STACK) == []


async def test_list_workspaces_prints_the_ids_the_other_commands_take(cli_env, client):
    assert _json(run_cli("admin", "list-workspaces", "--json", env=cli_env)) == []
    empty = run_cli("admin", "list-workspaces", env=cli_env)
    assert "No workspace yet" in empty.stdout
    first = _json(
        run_cli(
            "admin", "create-workspace", "--plan", "pro", "--name", "Shop", "--json", env=cli_env
        )
    )
    second = _json(run_cli("admin", "create-workspace", "--json", env=cli_env))
    listed = _json(run_cli("admin", "list-workspaces", "--json", env=cli_env))
    assert listed == [
        {
            "account_id": first["account_id"],
            "workspace_id": first["workspace_id"],
            "name": "Shop",
            "plan": "pro",
        },
        {
            "account_id": second["account_id"],
            "workspace_id": second["workspace_id"],
            "name": "",
            "plan": "free",
        },
    ]
    table = run_cli("admin", "list-workspaces", env=cli_env).stdout
    row = next(line for line in table.splitlines() if first["workspace_id"] in line)
    assert row.split() == [first["account_id"], first["workspace_id"], "pro", "Shop"]
    # The account id it printed is the one set-plan takes.
    moved = run_cli("admin", "set-plan", first["account_id"], "business", env=cli_env)
    assert moved.returncode == 0, moved.stderr
    body = (await client.get("/api/v1/account", headers={"x-api-key": first["api_key"]})).json()
    assert body["plan"]["name"] == "business"
    helped = " ".join(run_cli("admin", "set-plan", "--help", env=cli_env).stdout.split())
    assert "mailroom admin list-workspaces" in helped


async def test_demo_is_on_the_business_plan_with_a_dashboard_admin(cli_env, client):
    result = run_cli("admin", "demo", env=cli_env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    links = [line for line in lines if "/app/link/" in line]
    assert len(links) == 1
    assert re.fullmatch(r"http://\S+/app/link/\S+", links[0]), links[0]  # alone on its line
    key = re.search(r"mr_live_\w+", result.stdout)
    assert key is not None
    account = (await client.get("/api/v1/account", headers={"x-api-key": key.group(0)})).json()
    assert account["plan"]["name"] == "business"
    [listed] = _json(run_cli("admin", "list-workspaces", "--json", env=cli_env))
    assert listed["plan"] == "business"
    assert listed["account_id"] in result.stdout and listed["workspace_id"] in result.stdout

    # The link opens the page where the demo admin chooses a password, then the dashboard.
    path = "/app/link/" + links[0].split("/app/link/")[1]
    page = await client.get(path)
    assert page.status_code == 200
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    form = {"password": "correct horse battery"} | ({"csrf": token.group(1)} if token else {})
    assert (await client.post(path, data=form)).status_code == 303
    overview = await client.get("/app")
    assert overview.status_code == 200 and "admin@example.com" in overview.text

    again = run_cli("admin", "demo", env=cli_env)
    assert again.returncode == 0
    assert "mailroom admin sign-in-link --email" in again.stdout
    assert len(_json(run_cli("admin", "list-workspaces", "--json", env=cli_env))) == 1
