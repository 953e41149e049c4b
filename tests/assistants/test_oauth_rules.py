"""The OAuth 2.1 rules Mailroom keeps as an authorization server for MCP clients: metadata,
registration, PKCE, resource indicators, one-use short-lived codes, rotating refresh tokens
with reuse detection, revocation, client authentication, and only digests stored."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select, text, update

from mailroom.assistants.service import digest
from mailroom.core.auth import PERMISSIONS
from mailroom.core.clock import utcnow
from mailroom.models import OAuthClient, OAuthCode
from tests.assistants.oauth_steps import (
    LOOPBACK,
    REVOKE,
    ask,
    bearer,
    browser_fixture,  # noqa: F401 (the `browser` fixture)
    code_for,
    connected,
    public_client,
    query_of,
    redeem,
    refresh,
    register,
)
from tests.dashboard.helpers import csrf_of

BASE = "http://testserver"


# ---------------------------------------------------------------- metadata


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]
)
async def test_protected_resource_metadata(client, path):
    answer = await client.get(path)
    assert answer.status_code == 200
    assert answer.json() == {
        "resource": f"{BASE}/mcp",
        "authorization_servers": [BASE],
        "scopes_supported": list(PERMISSIONS),
        "bearer_methods_supported": ["header"],
        "resource_name": "Mailroom",
    }
    assert len(answer.json()["scopes_supported"]) == 24


async def test_authorization_server_metadata(client):
    answer = await client.get("/.well-known/oauth-authorization-server")
    assert answer.status_code == 200
    assert answer.json() == {
        "issuer": BASE,
        "authorization_endpoint": f"{BASE}/oauth/authorize",
        "token_endpoint": f"{BASE}/oauth/token",
        "registration_endpoint": f"{BASE}/oauth/register",
        "revocation_endpoint": f"{BASE}/oauth/revoke",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["none", "client_secret_post"],
        "scopes_supported": list(PERMISSIONS),
    }


async def test_browser_clients_may_read_the_metadata_cross_origin(client):
    answer = await client.get(
        "/.well-known/oauth-authorization-server", headers={"Origin": "http://localhost:6274"}
    )
    assert answer.headers["access-control-allow-origin"] == "*"


# ---------------------------------------------------------------- registration


@pytest.mark.parametrize(
    "uri",
    [
        "https://agent.example.com/oauth/callback",
        "http://127.0.0.1/callback",
        "http://127.0.0.1:49152/callback",
        "http://[::1]/callback",
        "http://[::1]:8080/callback",
        "http://localhost/callback",
        "http://localhost:3000/callback",
    ],
)
async def test_redirect_uris_that_register(client, uri):
    registered = await register(client, [uri])
    assert registered.status_code == 201, registered.text
    assert registered.json()["redirect_uris"] == [uri]


@pytest.mark.parametrize(
    "uri",
    [
        "http://example.com/callback",
        "http://127.0.0.1.example.com/callback",
        "http://10.0.0.1/callback",
        "ftp://127.0.0.1/callback",
        "https://agent.example.com/callback#fragment",
    ],
)
async def test_redirect_uris_that_are_refused(client, db, uri):
    refused = await register(client, [LOOPBACK, uri])
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_redirect_uri"
    assert uri in refused.json()["error_description"]
    async with db.session(write=False) as session:
        assert (await session.scalars(select(OAuthClient))).all() == []


async def test_registration_is_limited_per_address(app, client):
    for _ in range(20):
        assert (await register(client)).status_code == 201
    refused = await register(client)
    assert refused.status_code == 429
    assert refused.json()["error"] == "invalid_request"
    assert refused.json()["error_description"].startswith(
        "Too many client registrations from this address."
    )
    assert int(refused.headers["retry-after"]) > 0
    elsewhere = httpx.ASGITransport(app=app, client=("192.0.2.7", 50000))
    async with httpx.AsyncClient(transport=elsewhere, base_url=BASE) as other:
        assert (await register(other)).status_code == 201


async def test_only_the_advertised_client_authentication_methods_register(client):
    refused = await register(client, token_endpoint_auth_method="client_secret_basic")
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_client_metadata"


# ---------------------------------------------------------------- /oauth/authorize


async def test_a_request_without_pkce_is_sent_back_refused(client):
    registered = await public_client(client)
    asked = await ask(client, registered, code_challenge=None, code_challenge_method=None)
    assert asked.response.status_code == 302
    location = asked.response.headers["location"]
    assert location.startswith(LOOPBACK + "?")
    assert query_of(location)["error"] == "invalid_request"
    assert query_of(location)["state"] == asked.state


async def test_plain_pkce_is_sent_back_refused(client):
    registered = await public_client(client)
    asked = await ask(client, registered, code_challenge_method="plain")
    assert asked.response.status_code == 302
    back = query_of(asked.response.headers["location"])
    assert back["error"] == "invalid_request" and back["state"] == asked.state


async def test_a_resource_other_than_the_mcp_url_is_sent_back_refused(client):
    registered = await public_client(client)
    asked = await ask(client, registered, resource="https://elsewhere.example/mcp")
    assert asked.response.status_code == 302
    back = query_of(asked.response.headers["location"])
    assert back["error"] == "invalid_request"
    assert back["error_description"] == f"resource must be {BASE}/mcp"


async def test_without_a_resource_the_request_goes_on_to_consent(client):
    registered = await public_client(client)
    asked = await ask(client, registered, resource=None)
    assert asked.response.status_code == 302
    assert asked.response.headers["location"].startswith(f"{BASE}/oauth/consent/")


async def test_an_unknown_client_gets_a_page_not_a_redirect(client):
    unknown = {"client_id": "not-a-client", "redirect_uris": [LOOPBACK]}
    asked = await ask(client, unknown)
    assert asked.response.status_code == 400
    assert "location" not in asked.response.headers
    assert asked.response.headers["content-type"].startswith("text/html")
    assert "This connection request is not valid" in asked.response.text


async def test_an_unregistered_redirect_uri_gets_a_page_not_a_redirect(client):
    registered = await public_client(client)
    asked = await ask(client, registered, redirect_uri="http://127.0.0.1:9999/elsewhere")
    assert asked.response.status_code == 400
    assert "location" not in asked.response.headers
    assert "This connection request is not valid" in asked.response.text


async def test_the_consent_page_needs_a_signed_in_person(client):
    registered = await public_client(client)
    asked = await ask(client, registered)
    consent_page = asked.response.headers["location"]
    page = await client.get(consent_page)
    assert page.status_code == 303
    assert page.headers["location"].startswith("/app/sign-in?next=")
    assert query_of(page.headers["location"])["next"] == consent_page.removeprefix(BASE)


async def test_declining_sends_access_denied_back(client, browser):
    registered = await public_client(client)
    asked = await ask(client, registered)
    page = await browser.get(asked.response.headers["location"])
    answered = await browser.post(
        asked.response.headers["location"], data={"csrf": csrf_of(page.text), "decision": "deny"}
    )
    assert answered.status_code == 303
    back = query_of(answered.headers["location"])
    assert back["error"] == "access_denied" and back["state"] == asked.state


# ---------------------------------------------------------------- codes


async def test_a_code_works_once_and_its_reuse_revokes_what_it_gave(client, browser):
    registered = await public_client(client)
    asked, code = await code_for(client, browser, registered)
    first = await redeem(client, asked, code)
    assert first.status_code == 200, first.text
    tokens = first.json()
    assert set(tokens) == {"access_token", "token_type", "expires_in", "refresh_token", "scope"}
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 3600
    assert tokens["scope"] == " ".join(PERMISSIONS)
    assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 200

    again = await redeem(client, asked, code)
    assert again.status_code == 400
    assert again.json() == {
        "error": "invalid_grant",
        "error_description": "authorization code does not exist",
    }
    assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 401
    dead = await refresh(client, tokens["refresh_token"], asked.client_id)
    assert dead.status_code == 400 and dead.json()["error"] == "invalid_grant"


async def test_a_code_lives_sixty_seconds(client, browser, db):
    registered = await public_client(client)
    asked, code = await code_for(client, browser, registered)
    async with db.session(write=False) as session:
        row = await session.get(OAuthCode, digest(code))
        assert row is not None
        lifetime = row.expires_at - row.created_at
        assert timedelta(seconds=59) < lifetime <= timedelta(seconds=60)
    async with db.transaction() as session:
        await session.execute(
            update(OAuthCode)
            .where(OAuthCode.code_hash == digest(code))
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    late = await redeem(client, asked, code)
    assert late.status_code == 400
    assert late.json() == {
        "error": "invalid_grant",
        "error_description": "authorization code has expired",
    }


async def test_the_code_needs_its_verifier_and_redirect_uri(client, browser):
    registered = await public_client(client)
    asked, code = await code_for(client, browser, registered)
    wrong = await redeem(client, asked, code, code_verifier="x" * 64)
    assert wrong.status_code == 400
    assert wrong.json() == {
        "error": "invalid_grant",
        "error_description": "incorrect code_verifier",
    }
    moved = await redeem(client, asked, code, redirect_uri="http://127.0.0.1:1/other")
    assert moved.status_code == 400 and moved.json()["error"] == "invalid_request"
    missing = await client.post(
        "/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "client_id": asked.client_id},
    )
    assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"
    assert set(missing.json()) == {"error", "error_description"}
    # None of those spent it.
    assert (await redeem(client, asked, code)).status_code == 200


async def test_a_code_is_only_its_own_clients(client, browser):
    ours = await public_client(client)
    theirs = await public_client(client)
    asked, code = await code_for(client, browser, ours)
    stolen = await client.post(
        "/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": asked.redirect_uri,
            "client_id": theirs["client_id"],
            "code_verifier": asked.verifier,
        },
    )
    assert stolen.status_code == 400 and stolen.json()["error"] == "invalid_grant"


# ---------------------------------------------------------------- refresh


async def test_refresh_rotates_and_a_reused_refresh_token_revokes_the_grant(client, browser):
    tokens = await connected(client, browser)
    rotated = await refresh(client, tokens["refresh_token"], tokens["client_id"])
    assert rotated.status_code == 200, rotated.text
    fresh = rotated.json()
    assert fresh["refresh_token"] != tokens["refresh_token"]
    assert fresh["access_token"] != tokens["access_token"]
    assert fresh["scope"] == tokens["scope"] and fresh["expires_in"] == 3600
    assert (await client.get("/api/v1/contacts", headers=bearer(fresh))).status_code == 200

    reused = await refresh(client, tokens["refresh_token"], tokens["client_id"])
    assert reused.status_code == 400
    assert reused.json() == {
        "error": "invalid_grant",
        "error_description": "refresh token does not exist",
    }
    # Two parties held it: the whole grant ends, the newest tokens with it.
    assert (await client.get("/api/v1/contacts", headers=bearer(fresh))).status_code == 401
    latest = await refresh(client, fresh["refresh_token"], tokens["client_id"])
    assert latest.status_code == 400 and latest.json()["error"] == "invalid_grant"


async def test_a_refresh_token_is_only_its_own_clients(client, browser):
    tokens = await connected(client, browser)
    other = await public_client(client)
    stolen = await refresh(client, tokens["refresh_token"], other["client_id"])
    assert stolen.status_code == 400 and stolen.json()["error"] == "invalid_grant"
    assert (await refresh(client, tokens["refresh_token"], tokens["client_id"])).status_code == 200


# ---------------------------------------------------------------- client authentication


async def test_token_endpoint_client_errors_are_401_invalid_client(client):
    missing = await client.post(
        "/oauth/token", data={"grant_type": "authorization_code", "code": "x"}
    )
    assert missing.status_code == 401
    assert missing.json() == {"error": "invalid_client", "error_description": "Missing client_id"}
    unknown = await client.post(
        "/oauth/token",
        data={"grant_type": "authorization_code", "code": "x", "client_id": "nobody"},
    )
    assert unknown.status_code == 401
    assert unknown.json() == {"error": "invalid_client", "error_description": "Invalid client_id"}


async def test_a_confidential_client_must_send_its_secret(client, browser, db):
    registered = await public_client(client, token_endpoint_auth_method="client_secret_post")
    secret = registered["client_secret"]
    assert secret
    asked, code = await code_for(client, browser, registered)
    without = await redeem(client, asked, code)
    assert without.status_code == 401
    assert without.json() == {
        "error": "invalid_client",
        "error_description": "Client secret is required",
    }
    wrong = await redeem(client, asked, code, client_secret="not-the-secret")
    assert wrong.status_code == 401
    assert wrong.json() == {"error": "invalid_client", "error_description": "Invalid client_secret"}
    tokens = await redeem(client, asked, code, client_secret=secret)
    assert tokens.status_code == 200, tokens.text
    unauthenticated = await refresh(client, tokens.json()["refresh_token"], asked.client_id)
    assert unauthenticated.status_code == 401
    assert unauthenticated.json()["error"] == "invalid_client"
    rotated = await refresh(
        client, tokens.json()["refresh_token"], asked.client_id, client_secret=secret
    )
    assert rotated.status_code == 200, rotated.text

    async with db.session(write=False) as session:
        row = await session.get(OAuthClient, registered["client_id"])
    assert row is not None and row.secret_hash == digest(secret)
    assert secret not in str(row.registration)


# ---------------------------------------------------------------- revocation (RFC 7009)


async def test_revoking_an_access_token_ends_it(client, browser):
    tokens = await connected(client, browser)
    revoked = await client.post(
        REVOKE, data={"token": tokens["access_token"], "client_id": tokens["client_id"]}
    )
    assert revoked.status_code == 200
    assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 401
    # The connection itself goes on: its refresh token still gives a new pair.
    again = await refresh(client, tokens["refresh_token"], tokens["client_id"])
    assert again.status_code == 200


async def test_revoking_a_refresh_token_ends_the_connection(client, browser, ws):
    tokens = await connected(client, browser)
    revoked = await client.post(
        REVOKE,
        data={
            "token": tokens["refresh_token"],
            "token_type_hint": "refresh_token",
            "client_id": tokens["client_id"],
        },
    )
    assert revoked.status_code == 200
    assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 401
    dead = await refresh(client, tokens["refresh_token"], tokens["client_id"])
    assert dead.status_code == 400
    listed = await client.get("/api/v1/assistants", headers=ws.headers)
    assert listed.json()["assistants"] == []


async def test_revocation_ignores_unknown_and_other_clients_tokens(client, browser):
    tokens = await connected(client, browser)
    other = await public_client(client)
    unknown = await client.post(REVOKE, data={"token": "nonsense", "client_id": other["client_id"]})
    assert unknown.status_code == 200
    theirs = await client.post(
        REVOKE, data={"token": tokens["access_token"], "client_id": other["client_id"]}
    )
    assert theirs.status_code == 200
    assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 200
    # Without a client: only a one-use grant's tokens are revoked so (test_grant_rules).
    nobody = await client.post(REVOKE, data={"token": tokens["access_token"]})
    assert nobody.status_code == 200
    assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 200


async def test_a_confidential_client_revokes_with_its_secret(client, browser):
    registered = await public_client(client, token_endpoint_auth_method="client_secret_post")
    tokens = await connected(client, browser, registered, secret=registered["client_secret"])
    data = {"token": tokens["access_token"], "client_id": registered["client_id"]}
    unauthenticated = await client.post(REVOKE, data=data)
    assert unauthenticated.status_code == 401
    assert unauthenticated.json() == {
        "error": "invalid_client",
        "error_description": "Client secret is required",
    }
    assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 200
    done = await client.post(REVOKE, data={**data, "client_secret": registered["client_secret"]})
    assert done.status_code == 200
    assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 401


# ---------------------------------------------------------------- only digests stored


async def test_secrets_codes_and_tokens_are_stored_only_as_digests(client, browser, db):
    registered = await public_client(client, token_endpoint_auth_method="client_secret_post")
    asked, code = await code_for(client, browser, registered)
    tokens = (await redeem(client, asked, code, client_secret=registered["client_secret"])).json()
    rotated = (
        await refresh(
            client,
            tokens["refresh_token"],
            asked.client_id,
            client_secret=registered["client_secret"],
        )
    ).json()
    raw = [
        registered["client_secret"],
        code,
        tokens["access_token"],
        tokens["refresh_token"],
        rotated["access_token"],
        rotated["refresh_token"],
    ]
    tables = ["oauth_clients", "oauth_requests", "oauth_codes", "assistants", "assistant_tokens"]
    async with db.session(write=False) as session:
        stored = {
            table: [tuple(row) for row in (await session.execute(text(f"SELECT * FROM {table}")))]
            for table in tables
        }
        hashes = set((await session.scalars(text("SELECT token_hash FROM assistant_tokens"))).all())
    dump = repr(stored)
    for value in raw:
        assert value not in dump
    assert {digest(rotated["access_token"]), digest(rotated["refresh_token"])} <= hashes
    assert digest(code) in dump and digest(registered["client_secret"]) in dump
