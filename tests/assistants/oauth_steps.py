"""An MCP client's OAuth steps and a signed-in person's consent, done over HTTP as each would:
register, send the person to /oauth/authorize, the person answers the consent page, the
client redeems the code at /oauth/token."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.dashboard.helpers import csrf_of, signed_in

REGISTER = "/oauth/register"
AUTHORIZE = "/oauth/authorize"
TOKEN = "/oauth/token"
REVOKE = "/oauth/revoke"
LOOPBACK = "http://127.0.0.1:33418/callback"
ADMIN_ONLY = ["webhooks:read", "webhooks:write", "audit:read"]


def pkce_pair() -> tuple[str, str]:
    """(verifier, S256 challenge), as RFC 7636 4.1-4.2."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode()
    return verifier, challenge.rstrip("=")


async def register(
    client: httpx.AsyncClient, redirect_uris: list[str] | None = None, **metadata: Any
) -> httpx.Response:
    body = {
        "client_name": "Desk Agent",
        "redirect_uris": redirect_uris or [LOOPBACK],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        **metadata,
    }
    return await client.post(REGISTER, json=body)


async def public_client(client: httpx.AsyncClient, **metadata: Any) -> dict[str, Any]:
    registered = await register(client, **metadata)
    assert registered.status_code == 201, registered.text
    answer: dict[str, Any] = registered.json()
    return answer


@dataclass
class Asked:
    """An authorization request a client started: what it must send again at /oauth/token."""

    client_id: str
    verifier: str
    state: str
    redirect_uri: str
    response: httpx.Response


async def ask(
    client: httpx.AsyncClient,
    registered: dict[str, Any],
    *,
    scope: str | None = None,
    resource: str | None = "http://testserver/mcp",
    **overrides: str | None,
) -> Asked:
    """GET /oauth/authorize as the client's browser tab would; `overrides` replace (or, given
    None, leave out) any parameter."""
    verifier, challenge = pkce_pair()
    state = secrets.token_urlsafe(12)
    redirect_uri = str(registered["redirect_uris"][0])
    params: dict[str, str | None] = {
        "response_type": "code",
        "client_id": registered["client_id"],
        "redirect_uri": redirect_uri,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": state,
        "scope": scope,
        "resource": resource,
        **overrides,
    }
    sent = {name: value for name, value in params.items() if value is not None}
    response = await client.get(AUTHORIZE, params=sent)
    return Asked(
        registered["client_id"], verifier, state, str(sent.get("redirect_uri", "")), response
    )


def query_of(location: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}


def ticked_permissions(page: str) -> list[str]:
    return re.findall(r'name="permission" value="([^"]+)" checked', page)


async def consent(
    browser: httpx.AsyncClient,
    consent_url: str,
    *,
    decision: str = "allow",
    permissions: list[str] | None = None,
    workspace_id: str | None = None,
    **fields: str,
) -> httpx.Response:
    """The person opens the consent page and answers it: by default with what the page has
    ticked, in the workspace it has chosen."""
    page = await browser.get(consent_url)
    assert page.status_code == 200, page.text
    chosen = re.search(r'<option value="([^"]+)" selected', page.text)
    form: dict[str, Any] = {
        "csrf": csrf_of(page.text),
        "decision": decision,
        "name": "",
        "workspace_id": workspace_id or (chosen.group(1) if chosen else ""),
        "permission": ticked_permissions(page.text) if permissions is None else permissions,
        **fields,
    }
    return await browser.post(consent_url, data=form)


async def code_for(
    client: httpx.AsyncClient,
    browser: httpx.AsyncClient,
    registered: dict[str, Any],
    *,
    scope: str | None = None,
    permissions: list[str] | None = None,
    workspace_id: str | None = None,
) -> tuple[Asked, str]:
    """A code the person's consent issued, with the request that asked for it."""
    asked = await ask(client, registered, scope=scope)
    assert asked.response.status_code == 302, asked.response.text
    answered = await consent(
        browser,
        asked.response.headers["location"],
        permissions=permissions,
        workspace_id=workspace_id,
    )
    assert answered.status_code == 303, answered.text
    back = query_of(answered.headers["location"])
    assert answered.headers["location"].startswith(asked.redirect_uri + "?")
    assert back["state"] == asked.state
    return asked, back["code"]


async def redeem(
    client: httpx.AsyncClient, asked: Asked, code: str, **extra: str
) -> httpx.Response:
    return await client.post(
        TOKEN,
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": asked.redirect_uri,
            "client_id": asked.client_id,
            "code_verifier": asked.verifier,
            **extra,
        },
    )


async def connected(
    client: httpx.AsyncClient,
    browser: httpx.AsyncClient,
    registered: dict[str, Any] | None = None,
    *,
    secret: str | None = None,
    **choices: Any,
) -> dict[str, Any]:
    """A client registered (unless given), authorized by the person and holding tokens."""
    registered = registered or await public_client(client)
    asked, code = await code_for(client, browser, registered, **choices)
    tokens = await redeem(client, asked, code, **({"client_secret": secret} if secret else {}))
    assert tokens.status_code == 200, tokens.text
    answer: dict[str, Any] = tokens.json()
    answer["client_id"] = registered["client_id"]
    return answer


async def refresh(
    client: httpx.AsyncClient, refresh_token: str, client_id: str | None, **extra: str
) -> httpx.Response:
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, **extra}
    if client_id is not None:
        data["client_id"] = client_id
    return await client.post(TOKEN, data=data)


def bearer(tokens: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens['access_token']}"}


@pytest.fixture(name="browser")
async def browser_fixture(
    app: Any, db: Any, settings: Any, ws: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """`browser`: an admin of `ws` ("ada@example.com") signed in to the dashboard (modules
    that use it import this)."""
    person = await signed_in(app, db, settings, ws, "ada@example.com")
    yield person
    await person.aclose()
