"""`mailroom admin create-workspace --blueprint ID`: a new workspace set up from a blueprint."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import run_cli


async def test_create_workspace_from_a_starter(client: Any, cli_env: Any) -> None:
    made = run_cli(
        "admin",
        "create-workspace",
        "--plan",
        "pro",
        "--blueprint",
        "starter-newsletter",
        "--json",
        env=cli_env,
    )
    assert made.returncode == 0, made.stderr
    body = json.loads(made.stdout)
    assert {row["action"] for row in body["blueprint"]["plan"]} == {"create"}
    headers = {"x-api-key": body["api_key"]}
    lists = (await client.get("/api/v1/lists", headers=headers)).json()["lists"]
    assert [li["name"] for li in lists] == ["Newsletter"]
    automations = (await client.get("/api/v1/automations", headers=headers)).json()["automations"]
    assert [a["status"] for a in automations] == ["paused"]


async def test_an_unknown_blueprint_says_the_workspace_exists(cli_env: Any) -> None:
    made = run_cli("admin", "create-workspace", "--blueprint", "nope", env=cli_env)
    assert made.returncode == 1
    said = " ".join(made.stderr.split())  # the terminal wraps long lines
    assert "was created, but the blueprint was not applied: Blueprint not found" in said
