"""The MCP server: the generated tools over streamable HTTP (mounted at /mcp) and over stdio.

HTTP: each request must carry a valid `x-api-key` or an assistant's `Authorization: Bearer`
token (401 otherwise, listing tools included, with the OAuth discovery hint an MCP client
follows to connect); a tool call runs with that credential and no other. Stdio (`mailroom mcp`):
the key comes from `MAILROOM_API_KEY`, for desktop agent clients that start the server as a
child process.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx
import mcp_types as types
from fastapi import FastAPI
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from mailroom import __version__
from mailroom.core.auth import UNAUTHORIZED
from mailroom.core.errors import ApiError
from mailroom.db import Database
from mailroom.mcp.calls import call_tool, tool_error
from mailroom.mcp.tools import Operation, build_operations
from mailroom.web.middleware import authenticate, check_key

log = logging.getLogger("mailroom.mcp")

MCP_PATH = "/mcp"
# Names every group (OpenAPI tag) of the tools, so an agent knows what it can do before listing
# them: tests/mcp/test_mcp_instructions.py checks it against the app's tool set.
INSTRUCTIONS = """\
Mailroom's API as tools, for one workspace (the one your API key or assistant connection
belongs to): contacts (import, export, bulk actions), platform imports (move from
Mailchimp, listmonk, Brevo, Kit or Mautic: an export file or an API pull, as a job), tags, lists, segments, custom fields,
suppressions, templates, campaigns (send, schedule, test, report), RSS feeds (a blog's new posts
as campaigns: check, activate, run), sending (transactional send,
the sender identity, pause and resume), automations, signup forms, media (hosted images),
webhooks, sending domains, connected assistants, e-commerce (stores, products, orders, carts),
workspace blueprints (a workspace's set-up captured as a document and applied to
another, plan first), the account and its audit log. Each tool is one API operation and answers its JSON; errors come back as the API's {"error": ...} text.
Writes count toward the plan's hourly write limit. When you are connected as an assistant
whose sends need approval, sending or scheduling a campaign answers status
"awaiting_approval": a workspace admin approves it in the dashboard before anything is mailed.
"""

# The headers that carry a request's credential (`x-api-key`, or `authorization`), forwarded
# as they came to the in-process API call a tool makes.
Credentials = dict[str, str]
CredentialsOf = Callable[[ServerRequestContext[Any, Any]], Credentials | None]
CREDENTIAL_HEADERS = ("x-api-key", "authorization")


class ToolBridge:
    """The app's key-callable operations as tools, each call sent to the app in-process."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self._operations: dict[str, Operation] | None = None
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, raise_app_exceptions=False),
            base_url="http://mailroom.mcp",
            timeout=httpx.Timeout(600.0),  # in-process; a 50k-row import takes seconds
        )

    @property
    def operations(self) -> dict[str, Operation]:
        # Built on first use: by then every router is included in the app.
        if self._operations is None:
            self._operations = build_operations(self.app.openapi())
        return self._operations

    def tools(self) -> list[types.Tool]:
        return [op.tool for op in self.operations.values() if op.tool is not None]

    async def call(
        self, name: str, arguments: dict[str, Any] | None, credentials: Credentials | None
    ) -> types.CallToolResult:
        op = self.operations.get(name)
        if op is None:
            return tool_error(f"Unknown tool: {name}")
        if not credentials:
            return tool_error(UNAUTHORIZED)
        return await call_tool(self.client, op, arguments, credentials)

    async def aclose(self) -> None:
        await self.client.aclose()


def build_server(bridge: ToolBridge, credentials_of: CredentialsOf) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=bridge.tools())

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await bridge.call(params.name, params.arguments, credentials_of(ctx))

    return Server(
        "mailroom",
        version=__version__,
        title="Mailroom",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=on_call_tool,
    )


def _request_credentials(ctx: ServerRequestContext[Any, Any]) -> Credentials | None:
    """Only the credential this HTTP request carried: never a default one (a key wins over a
    token, as in the API's own check)."""
    headers = getattr(ctx.request, "headers", None)
    if headers is None:
        return None
    for name in CREDENTIAL_HEADERS:
        value = headers.get(name)
        if value:
            return {name: value}
    return None


def resource_metadata_url(public_url: str) -> str:
    """RFC 9728: where a client learns how to get a token for /mcp."""
    return f"{public_url.rstrip('/')}/.well-known/oauth-protected-resource{MCP_PATH}"


def transport_security(public_url: str) -> TransportSecuritySettings:
    """Host/Origin checks against DNS rebinding: the public host plus loopback names."""
    parts = urlsplit(public_url)
    host = parts.hostname or "127.0.0.1"
    netloc = parts.netloc.rsplit("@", 1)[-1]
    hosts = {netloc, host, f"{host}:*", "127.0.0.1:*", "localhost:*", "[::1]:*"}
    hosts |= {"127.0.0.1", "localhost", "[::1]"}
    origins = {f"{parts.scheme}://{netloc}", "http://127.0.0.1:*", "http://localhost:*"}
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted(hosts),
        allowed_origins=sorted(origins),
    )


class McpHttpEndpoint:
    """ASGI endpoint at /mcp: the key check, then the SDK's stateless streamable HTTP."""

    def __init__(self, app: FastAPI, public_url: str) -> None:
        self.bridge = ToolBridge(app)
        self.server = build_server(self.bridge, _request_credentials)
        self.challenge = f'Bearer resource_metadata="{resource_metadata_url(public_url)}"'
        self.manager = StreamableHTTPSessionManager(
            app=self.server,
            json_response=True,
            stateless=True,
            security_settings=transport_security(public_url),
        )

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run inside the parent app's lifespan (a mounted app's own lifespan never runs)."""
        async with self.manager.run():
            try:
                yield
            finally:
                await self.bridge.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            check = await authenticate(scope["app"].state.db, Headers(scope=scope))
        except ApiError as busy:
            await JSONResponse(busy.body(), busy.status, headers=busy.headers or None)(
                scope, receive, send
            )
            return
        if check is None:
            # The hint an MCP client follows to connect by OAuth (MCP authorization, RFC 9728).
            headers = {"WWW-Authenticate": self.challenge}
            await JSONResponse({"error": UNAUTHORIZED}, status_code=401, headers=headers)(
                scope, receive, send
            )
            return
        if scope["method"] != "POST":
            # Stateless with JSON answers: no session to end (DELETE) and nothing the server
            # would ever push on a GET stream, which would only hold a connection open.
            await JSONResponse(
                {"error": "Method Not Allowed"}, status_code=405, headers={"Allow": "POST"}
            )(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)


async def serve_stdio(app: FastAPI, api_key: str) -> None:
    """Serve the tools over stdin/stdout with one key (from MAILROOM_API_KEY)."""
    from mcp.server.stdio import stdio_server

    bridge = ToolBridge(app)
    server = build_server(bridge, lambda _ctx: {"x-api-key": api_key})
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await bridge.aclose()


async def key_is_valid(db: Database, api_key: str) -> bool:
    return await check_key(db, api_key) is not None
