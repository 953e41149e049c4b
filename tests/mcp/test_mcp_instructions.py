"""The MCP server's `instructions` (sent at initialize, before any tool is listed) name every
group of tools the server offers: each OpenAPI tag of a key-callable operation."""

from __future__ import annotations

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from mailroom.mcp.tools import key_callable


async def test_instructions_name_every_group_of_tools(server_url, ws, client):
    document = (await client.get("/openapi.json")).json()
    groups = {
        tag
        for path, item in document["paths"].items()
        for operation in item.values()
        if key_callable(path, operation)
        for tag in operation.get("tags", [])
    }
    # Not vacuous: the groups are the API's resources.
    assert {"Contacts", "Campaigns", "Automations", "Templates", "Forms", "Audit log"} <= groups

    async with (
        httpx2.AsyncClient(headers=ws.headers, timeout=60) as http,
        streamable_http_client(f"{server_url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        result = await session.initialize()

    instructions = (result.instructions or "").lower()
    missing = sorted(group for group in groups if group.lower() not in instructions)
    assert not missing, f"instructions do not name: {missing}\n{result.instructions}"
