"""`mailroom mcp`: the same tools over stdio, as a desktop agent client starts it (a child
process with MAILROOM_API_KEY), driven by the real `mcp` stdio client."""

from __future__ import annotations

import json
import sys

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from mailroom.mcp.tools import key_callable
from tests.conftest import run_cli
from tests.mcp.helpers import tool_text


def _params(cli_env: dict[str, str], api_key: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "mailroom", "mcp"],
        env={**cli_env, "MAILROOM_API_KEY": api_key},
    )


async def test_stdio_lists_every_operation_and_calls_the_api(cli_env, ws, factory, client):
    document = (await client.get("/openapi.json")).json()
    expected = {
        operation["operationId"]
        for path, item in document["paths"].items()
        for operation in item.values()
        if key_callable(path, operation)
    }
    reader = await factory.key(ws, "contacts:read")

    async with (
        stdio_client(_params(cli_env, ws.api_key)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = (await session.list_tools()).tools
        created = await session.call_tool("create_contact", {"email": "grace@navy.mil"})
        listed = await session.call_tool("list_contacts", {})

    assert {tool.name for tool in tools} == expected
    assert not created.is_error, tool_text(created)
    assert [c["email"] for c in listed.structured_content["contacts"]] == ["grace@navy.mil"]
    seen = (await client.get("/api/v1/contacts", headers=ws.headers)).json()
    assert [c["email"] for c in seen["contacts"]] == ["grace@navy.mil"]

    async with (
        stdio_client(_params(cli_env, reader["x-api-key"])) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        refused = await session.call_tool("create_contact", {"email": "x@navy.mil"})
    assert refused.is_error
    assert json.loads(tool_text(refused)) == {
        "error": "Forbidden: contacts:write permission required"
    }


def test_stdio_without_a_valid_key_exits_with_a_message(cli_env):
    missing = run_cli("mcp", env={**cli_env, "MAILROOM_API_KEY": ""})
    assert missing.returncode == 1
    assert "MAILROOM_API_KEY" in missing.stderr
    wrong = run_cli("mcp", env={**cli_env, "MAILROOM_API_KEY": "mr_live_abcdefgh_" + "x" * 32})
    assert wrong.returncode == 1
    assert "not a valid" in wrong.stderr
    assert wrong.stdout == ""
