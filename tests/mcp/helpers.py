"""An MCP client session against a served app (see the `server_url` fixture in conftest)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def mcp_session(url: str, api_key: str | None) -> AsyncIterator[ClientSession]:
    headers = {"x-api-key": api_key} if api_key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def tool_text(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)
