"""End to end with the MCP SDK's own OAuth client (`mcp.client.auth`) against a real uvicorn on
127.0.0.1: the 401 from /mcp leads it to the metadata, it registers, a signed-in person
approves it on the consent page, it lists and calls tools, refreshes, and is revoked."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from sqlalchemy import select, update

from mailroom.assistants.service import digest
from mailroom.models import AssistantToken
from mailroom.settings import Settings
from tests.assistants.oauth_steps import consent, query_of
from tests.dashboard.helpers import make_person, use_link
from tests.mcp.helpers import tool_text

CALLBACK = "http://127.0.0.1:33419/callback"


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """The socket the server will answer on, bound first so the app's public URL names it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    yield sock
    sock.close()


@pytest.fixture
def settings(database_url: str, tmp_path: Path, listener: socket.socket) -> Settings:
    port = listener.getsockname()[1]
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "var",
        secret_key="test-secret-key",
        public_url=f"http://127.0.0.1:{port}",
        worker_poll_interval=0.05,
    )


@pytest.fixture
async def served(app: Any, settings: Settings, listener: socket.socket) -> AsyncIterator[str]:
    """The app on a real uvicorn at its public URL (see tests/conftest.py `serve`)."""
    import uvicorn

    config = uvicorn.Config(app, lifespan="on", log_level="warning", timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        for _ in range(500):
            if server.started or task.done():
                break
            await asyncio.sleep(0.01)
        assert server.started, "uvicorn did not start"
        yield settings.public_url
    finally:
        server.should_exit = True
        await task


class MemoryStorage:
    """The SDK's TokenStorage, kept in memory as a short-lived client would."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Person:
    """A signed-in person's browser: opens the authorization URL the client hands it, follows
    Mailroom to the consent page, allows, and lands on the client's loopback address (nobody
    listens there in the test: the address is read, as the client's listener would)."""

    def __init__(self, browser: httpx.AsyncClient) -> None:
        self.browser = browser
        self.landed: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.visits: list[str] = []

    async def open(self, authorization_url: str) -> None:
        self.visits.append(authorization_url)
        sent = await self.browser.get(authorization_url)
        assert sent.status_code == 302, sent.text
        answered = await consent(self.browser, sent.headers["location"])
        assert answered.status_code == 303, answered.text
        self.landed.set_result(answered.headers["location"])

    async def callback(self) -> AuthorizationCodeResult:
        location = await self.landed
        assert location.startswith(CALLBACK + "?")
        back = query_of(location)
        return AuthorizationCodeResult(code=back["code"], state=back.get("state"))


async def test_the_sdk_client_connects_through_consent_refreshes_and_is_revoked(
    served, ws, db, settings, client
):
    url = served
    async with httpx.AsyncClient(base_url=url, timeout=60) as browser:
        link = await make_person(db, settings, ws, "ada@example.com", role="admin")
        signed = await use_link(browser, link)
        assert signed.status_code == 303, signed.text
        person = Person(browser)
        storage = MemoryStorage()
        oauth = OAuthClientProvider(
            server_url=f"{url}/mcp",
            client_metadata=OAuthClientMetadata(
                client_name="Desk Agent",
                redirect_uris=[CALLBACK],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
            ),
            storage=storage,
            redirect_handler=person.open,
            callback_handler=person.callback,
        )
        async with (
            httpx2.AsyncClient(auth=oauth, timeout=60) as http,
            streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            # It was sent to the authorization endpoint the metadata named, with PKCE S256 and
            # the MCP URL as the resource.
            (visit,) = person.visits
            asked = query_of(visit)
            assert visit.startswith(f"{url}/oauth/authorize?")
            assert asked["code_challenge_method"] == "S256"
            assert asked["resource"] == f"{url}/mcp"
            assert storage.client_info is not None and storage.tokens is not None
            first = storage.tokens
            assert first.expires_in == 3600
            assert set(first.scope.split()) == set(asked["scope"].split())

            tools = {tool.name for tool in (await session.list_tools()).tools}
            assert {"create_contact", "list_contacts", "list_assistants"} <= tools
            made = await session.call_tool("create_contact", {"email": "grace@example.com"})
            assert not made.is_error, tool_text(made)
            listed = await session.call_tool("list_contacts", {})
            assert [c["email"] for c in listed.structured_content["contacts"]] == [
                "grace@example.com"
            ]

            # The hour is up: the server no longer takes the access token, and the client,
            # seeing its own clock past expires_in, refreshes before its next call.
            async with db.transaction() as session_db:
                await session_db.execute(
                    update(AssistantToken)
                    .where(AssistantToken.token_hash == digest(first.access_token))
                    .values(expires_at=AssistantToken.created_at)
                )
            stale = await client.get("/api/v1/contacts", headers=_bearer(first.access_token))
            assert stale.status_code == 401
            oauth.context.token_expiry_time = time.time() - 1
            again = await session.call_tool("list_contacts", {})
            assert not again.is_error, tool_text(again)
            refreshed = storage.tokens
            assert refreshed.access_token != first.access_token
            assert refreshed.refresh_token != first.refresh_token
            assert len(person.visits) == 1  # refreshed, not sent back to the person
            async with db.session(write=False) as session_db:
                spent = await session_db.scalar(
                    select(AssistantToken.used_at).where(
                        AssistantToken.token_hash == digest(first.refresh_token or "")
                    )
                )
            assert spent is not None

            assistants = (await client.get("/api/v1/assistants", headers=ws.headers)).json()
            (assistant,) = assistants["assistants"]
            assert assistant["kind"] == "oauth" and assistant["client_name"] == "Desk Agent"
            assert assistant["connected_by"]["email"] == "ada@example.com"
            revoked = await client.delete(
                f"/api/v1/assistants/{assistant['id']}", headers=ws.headers
            )
            assert revoked.json() == {"success": True, "id": assistant["id"]}

    async with httpx.AsyncClient(timeout=60) as raw:
        refused = await raw.post(
            f"{url}/mcp",
            headers={
                **_bearer(refreshed.access_token),
                "accept": "application/json, text/event-stream",
            },
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{url}/.well-known/oauth-protected-resource/mcp"'
    )
    assert (await client.get("/api/v1/assistants", headers=ws.headers)).json()["assistants"] == []


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
