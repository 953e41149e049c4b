"""One-use grants for agents without a browser: who may create one and for what, how long it
lasts, that it exchanges once, and that its tokens refresh and revoke like OAuth ones."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from sqlalchemy import select, update

from mailroom.assistants.service import digest
from mailroom.core.auth import PERMISSIONS
from mailroom.core.clock import utcnow
from mailroom.models import AssistantGrant, AssistantToken
from tests.assistants.oauth_steps import REVOKE, bearer, refresh

GRANTS = "/api/v1/assistants/grants"
EXCHANGE = "/api/v1/assistants/grants/exchange"
RANGE = "expires_in must be between 60 and 3600"


async def _grant(client, headers, **body):
    body.setdefault("name", "Nightly agent")
    body.setdefault("permissions", ["contacts:read", "contacts:write"])
    return await client.post(GRANTS, headers=headers, json=body)


async def _code(client, headers, **body) -> str:
    created = await _grant(client, headers, **body)
    assert created.status_code == 201, created.text
    return str(created.json()["grant"]["code"])


async def _exchanged(client, headers, **body) -> dict:
    answer = await client.post(EXCHANGE, json={"grant": await _code(client, headers, **body)})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def test_the_grant_is_shown_once_with_ready_instructions(client, ws, db):
    created = await _grant(client, ws.headers, permissions=["campaigns:send", "contacts:read"])
    assert created.status_code == 201, created.text
    grant = created.json()["grant"]
    code = grant["code"]
    assert code.startswith("mr_grant_") and len(code) == 41 and code[9:].isalnum()
    assert grant["name"] == "Nightly agent"
    # Catalogue order, whatever order they were asked in.
    assert grant["permissions"] == ["contacts:read", "campaigns:send"]
    assert grant["requires_approval"] is True  # on by default when it may send
    assert grant["daily_recipient_budget"] is None
    lifetime = _at(grant["expires_at"]) - utcnow()
    assert timedelta(seconds=590) < lifetime <= timedelta(seconds=600)
    instructions = grant["instructions"]
    assert code in instructions
    assert "POST http://testserver/api/v1/assistants/grants/exchange" in instructions
    assert (
        "http://testserver/oauth/token" in instructions and "http://testserver/mcp" in instructions
    )
    async with db.session(write=False) as session:
        row = await session.scalar(select(AssistantGrant))
    assert row is not None and row.code_hash == digest(code)
    assert code not in repr(row.__dict__)


async def test_approval_is_off_by_default_without_campaigns_send(client, ws):
    grant = (await _grant(client, ws.headers)).json()["grant"]
    assert grant["requires_approval"] is False
    chosen = await _grant(client, ws.headers, requires_approval=True, daily_recipient_budget=50)
    assert chosen.json()["grant"]["requires_approval"] is True
    assert chosen.json()["grant"]["daily_recipient_budget"] == 50


async def test_a_grant_exchanges_once(client, ws):
    code = await _code(client, ws.headers)
    first = await client.post(EXCHANGE, json={"grant": code})
    assert first.status_code == 200, first.text
    tokens = first.json()
    assert set(tokens) == {
        "access_token",
        "token_type",
        "expires_in",
        "refresh_token",
        "scope",
        "workspace_id",
        "assistant_id",
    }
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 3600
    assert tokens["scope"] == "contacts:read contacts:write"
    assert tokens["workspace_id"] == ws.workspace_id
    second = await client.post(EXCHANGE, json={"grant": code})
    assert second.status_code == 400
    assert second.json() == {"error": "Grant already used"}
    # The first exchange's tokens are unharmed by the second attempt.
    assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 200


async def test_a_late_grant_is_expired(client, ws, db):
    code = await _code(client, ws.headers, expires_in=60)
    async with db.transaction() as session:
        await session.execute(
            update(AssistantGrant)
            .where(AssistantGrant.code_hash == digest(code))
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    late = await client.post(EXCHANGE, json={"grant": code})
    assert late.status_code == 400
    assert late.json() == {"error": "Grant expired"}
    listed = await client.get("/api/v1/assistants", headers=ws.headers)
    assert listed.json()["assistants"] == []


@pytest.mark.parametrize(
    "grant", ["mr_grant_" + "A" * 32, "mr_grant_", "mr_live_abcdefgh_" + "x" * 32, "anything"]
)
async def test_an_unknown_grant_is_invalid(client, ws, grant):
    await _code(client, ws.headers)  # a real one exists; these are not it
    answer = await client.post(EXCHANGE, json={"grant": grant})
    assert answer.status_code == 400
    assert answer.json() == {"error": "Invalid grant"}


async def test_the_exchange_needs_no_key_and_ignores_one(client, ws):
    code = await _code(client, ws.headers)
    answer = await client.post(EXCHANGE, json={"grant": code}, headers={"x-api-key": "wrong"})
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("expires_in", [59, 3601, 0, -60, "600", 600.5, True])
async def test_a_lifetime_outside_the_range_is_refused(client, ws, expires_in):
    refused = await _grant(client, ws.headers, expires_in=expires_in)
    assert refused.status_code == 400
    assert refused.json() == {"error": RANGE}


@pytest.mark.parametrize("expires_in", [60, 3600, 1800.0])
async def test_the_lifetime_bounds_are_allowed(client, ws, expires_in):
    created = await _grant(client, ws.headers, expires_in=expires_in)
    assert created.status_code == 201, created.text
    lifetime = _at(created.json()["grant"]["expires_at"]) - utcnow()
    assert timedelta(seconds=expires_in - 10) < lifetime <= timedelta(seconds=expires_in)


async def test_a_permission_the_key_lacks_is_refused_naming_the_first(client, ws, factory):
    narrow = await factory.key(ws, ["contacts:read", "tags:write"])
    refused = await _grant(
        client, narrow, permissions=["tags:write", "segments:write", "contacts:write"]
    )
    assert refused.status_code == 403
    # contacts:write comes before segments:write in the catalogue.
    assert refused.json() == {"error": "Forbidden: contacts:write permission required"}
    allowed = await _grant(client, narrow, permissions=["tags:write", "contacts:read"])
    assert allowed.status_code == 201, allowed.text


async def test_an_unknown_permission_is_refused(client, ws):
    refused = await _grant(client, ws.headers, permissions=["contacts:read", "contacts:delete"])
    assert refused.status_code == 400
    assert refused.json()["error"].startswith("Unknown permission(s): contacts:delete.")
    empty = await _grant(client, ws.headers, permissions=[])
    assert empty.status_code == 400


async def test_an_assistant_cannot_create_grants(client, ws):
    tokens = await _exchanged(client, ws.headers, permissions=list(PERMISSIONS))
    refused = await _grant(client, bearer(tokens))
    assert refused.status_code == 403
    assert refused.json() == {"error": "Forbidden: an assistant cannot connect other assistants"}


async def test_the_tokens_act_with_the_grants_permissions_only(client, ws):
    tokens = await _exchanged(client, ws.headers, permissions=["contacts:read"])
    assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 200
    refused = await client.post(
        "/api/v1/contacts", headers=bearer(tokens), json={"email": "a@example.com"}
    )
    assert refused.status_code == 403
    assert refused.json() == {"error": "Forbidden: contacts:write permission required"}


async def test_grant_tokens_refresh_once_each_and_reuse_revokes(client, ws):
    tokens = await _exchanged(client, ws.headers)
    rotated = await refresh(client, tokens["refresh_token"], None)
    assert rotated.status_code == 200, rotated.text
    fresh = rotated.json()
    assert set(fresh) == {"access_token", "token_type", "expires_in", "refresh_token", "scope"}
    assert fresh["scope"] == tokens["scope"]
    # The replaced access token still lives its hour; the refresh token is spent.
    assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 200
    reused = await refresh(client, tokens["refresh_token"], None)
    assert reused.status_code == 400
    assert reused.json() == {
        "error": "invalid_grant",
        "error_description": "refresh token does not exist",
    }
    for held in (tokens, fresh):
        assert (await client.get("/api/v1/contacts", headers=bearer(held))).status_code == 401
    listed = await client.get("/api/v1/assistants", headers=ws.headers)
    assert listed.json()["assistants"] == []


async def test_a_grant_refresh_token_is_not_an_oauth_clients(client, ws):
    tokens = await _exchanged(client, ws.headers)
    registered = await client.post(
        "/oauth/register",
        json={"redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "none"},
    )
    as_client = await refresh(client, tokens["refresh_token"], registered.json()["client_id"])
    assert as_client.status_code == 400 and as_client.json()["error"] == "invalid_grant"
    assert (await refresh(client, tokens["refresh_token"], None)).status_code == 200


async def test_a_refresh_without_a_token_is_an_invalid_request(client):
    answer = await client.post("/oauth/token", data={"grant_type": "refresh_token"})
    assert answer.status_code == 400
    assert answer.json() == {
        "error": "invalid_request",
        "error_description": "refresh_token is required",
    }


async def test_an_expired_refresh_token_does_not_refresh(client, ws, db):
    tokens = await _exchanged(client, ws.headers)
    async with db.transaction() as session:
        await session.execute(
            update(AssistantToken)
            .where(AssistantToken.token_hash == digest(tokens["refresh_token"]))
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    late = await refresh(client, tokens["refresh_token"], None)
    assert late.status_code == 400 and late.json()["error"] == "invalid_grant"


async def test_grant_tokens_are_revoked_by_the_token_alone(client, ws):
    tokens = await _exchanged(client, ws.headers)
    access = await client.post(REVOKE, data={"token": tokens["access_token"]})
    assert access.status_code == 200
    assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 401
    again = await refresh(client, tokens["refresh_token"], None)
    assert again.status_code == 200
    ended = await client.post(REVOKE, data={"token": again.json()["refresh_token"]})
    assert ended.status_code == 200
    assert (await client.get("/api/v1/contacts", headers=bearer(again.json()))).status_code == 401
    assert (await client.get("/api/v1/assistants", headers=ws.headers)).json()["assistants"] == []
    missing = await client.post(REVOKE, data={})
    assert missing.status_code == 400
    assert missing.json() == {"error": "invalid_request", "error_description": "token is required"}
