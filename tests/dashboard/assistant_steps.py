"""Steps the assistant page tests share: an MCP client registering itself and asking to be
authorized (as a desktop client does before the browser opens), and reading the grant code a
page shows."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from urllib.parse import urlsplit

import httpx

CALLBACK = "http://127.0.0.1:9999/cb"
EXCHANGE = "/api/v1/assistants/grants/exchange"


def pkce() -> tuple[str, str]:
    """(verifier, its S256 challenge)."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge.rstrip(b"=").decode()


async def register_client(client: httpx.AsyncClient, name: str = "Test Agent") -> str:
    registered = await client.post(
        "/oauth/register",
        json={
            "redirect_uris": [CALLBACK],
            "client_name": name,
            "token_endpoint_auth_method": "none",
        },
    )
    assert registered.status_code == 201, registered.text
    return str(registered.json()["client_id"])


def authorize_query(client_id: str, challenge: str) -> dict[str, str]:
    return {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CALLBACK,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "xyz",
    }


async def consent_path(client: httpx.AsyncClient, client_id: str, challenge: str) -> str:
    """The consent page's path the authorization request sends the browser to."""
    asked = await client.get("/oauth/authorize", params=authorize_query(client_id, challenge))
    assert asked.status_code == 302, asked.text
    path = urlsplit(asked.headers["location"]).path
    assert path.startswith("/oauth/consent/"), path
    return path


async def token_for_code(
    client: httpx.AsyncClient, client_id: str, code: str, verifier: str
) -> dict[str, str]:
    answer = await client.post(
        "/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": CALLBACK,
            "client_id": client_id,
            "code_verifier": verifier,
        },
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def shown_code(html: str) -> str:
    """The grant code in the connect page's textarea."""
    found = re.search(r'id="grant-code"[^>]*>(mr_grant_[A-Za-z0-9]{32})</textarea>', html)
    assert found, "no grant code on the page"
    return found.group(1)


def bearer(tokens: dict[str, str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens['access_token']}"}
