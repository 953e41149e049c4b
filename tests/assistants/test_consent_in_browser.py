"""The consent step in a real browser (Chromium through Playwright): a person who is not signed
in follows an MCP client's authorization link, signs in, is brought back to the consent page,
clicks Allow, and the browser itself goes on to the client's loopback address with the code
(the page's Content-Security-Policy lets the form's answer redirect there)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlencode

import httpx

from tests.assistants.oauth_steps import pkce_pair, query_of
from tests.browser import browser, live_server, page  # noqa: F401
from tests.dashboard.browsing import choose_password, sign_in, submit
from tests.dashboard.helpers import PASSWORD, make_person


@asynccontextmanager
async def loopback_listener() -> AsyncIterator[tuple[str, list[str]]]:
    """What a native client runs to receive the redirect: an HTTP listener on a free loopback
    port. Yields its callback URL and the request targets it received."""
    received: list[str] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request_line = (await reader.readline()).decode()
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        received.append(request_line.split(" ")[1])
        body = b"<!doctype html><title>Connected</title><p>Connected</p>"
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nconnection: close\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/callback", received
    finally:
        server.close()
        await server.wait_closed()


async def test_sign_in_then_consent_then_back_to_the_client(
    live_server,  # noqa: F811
    page,  # noqa: F811
    browser,  # noqa: F811
    db,
    settings,
    ws,
):
    await choose_password(page, live_server, await make_person(db, settings, ws, "ada@example.com"))
    async with (
        loopback_listener() as (callback, received),
        httpx.AsyncClient(base_url=live_server, timeout=60) as api,
    ):
        registered = await api.post(
            "/oauth/register",
            json={
                "client_name": "Desk Agent",
                "redirect_uris": [callback],
                "token_endpoint_auth_method": "none",
            },
        )
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]
        verifier, challenge = pkce_pair()
        query = urlencode(
            {
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": callback,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "state": "s-123",
                "scope": "contacts:read contacts:write",
                "resource": f"{live_server}/mcp",
            }
        )

        # Another browser, nobody signed in: sign-in first, then the consent page.
        context = await browser.new_context()
        visitor = await context.new_page()
        errors: list[str] = []
        visitor.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        try:
            await visitor.goto(f"{live_server}/oauth/authorize?{query}")
            assert visitor.url.startswith(f"{live_server}/app/sign-in")
            answer = await sign_in(visitor, "ada@example.com", PASSWORD)
            assert answer.url.startswith(f"{live_server}/oauth/consent/"), answer.url
            assert await visitor.inner_text("h1") == "Connect Desk Agent?"
            await visitor.get_by_label("contacts:write").uncheck()
            await submit(visitor, "Allow")
            assert visitor.url.startswith(f"{callback}?"), visitor.url
            assert await visitor.inner_text("p") == "Connected"
        finally:
            await context.close()
        assert errors == []
        (reached,) = [target for target in received if target != "/favicon.ico"]
        assert reached.startswith("/callback?")
        back = query_of(reached)
        assert back["state"] == "s-123"

        tokens = await api.post(
            "/oauth/token",
            data={
                "grant_type": "authorization_code",
                "code": back["code"],
                "redirect_uri": callback,
                "client_id": client_id,
                "code_verifier": verifier,
            },
        )
        assert tokens.status_code == 200, tokens.text
        assert tokens.json()["scope"] == "contacts:read"
