"""The consent side of OAuth: the authorization request a person sees on the consent page
(`dashboard.consent_pages`), and their answer, a one-use code for the client or its refusal.
(`assistants.oauth` holds the protocol side.)"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.provider import construct_redirect_uri
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.assistants import service
from mailroom.core.auth import PERMISSIONS, Principal
from mailroom.core.clock import utcnow
from mailroom.core.errors import ApiError
from mailroom.models import OAuthClient, OAuthCode, OAuthRequest

CONSENT_PATH = "/oauth/consent"
CODE_TTL = timedelta(seconds=60)


def form_target_source(redirect_uri: str) -> str:
    """The CSP source the consent page's `form-action` must also allow: browsers check it on
    the redirect that follows the form (Allow or Decline goes on to the client). The
    redirect URI's origin; its scheme alone when the host cannot be written as a CSP source
    (an IPv6 literal)."""
    parts = urlsplit(redirect_uri)
    host = parts.hostname or ""
    if not host or not all(c.isalnum() or c in ".-" for c in host) or not host.isascii():
        return f"{parts.scheme}:"
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")


@dataclass(frozen=True)
class Pending:
    """An authorization request waiting for the person: what the consent page shows."""

    id: str
    client_id: str
    client_name: str
    redirect_uri: str
    redirect_host: str
    scopes: list[str]  # what the client asked for (all when it named none)
    state: str | None
    params: dict[str, Any]


async def pending(session: AsyncSession, request_id: str) -> Pending | None:
    row = await session.get(OAuthRequest, request_id[:64])
    if row is None or row.expires_at <= utcnow():
        return None
    client = await session.get(OAuthClient, row.client_id)
    if client is None:
        return None
    params: dict[str, Any] = dict(row.params)
    redirect_uri = str(params.get("redirect_uri") or "")
    scopes = params.get("scopes") or list(PERMISSIONS)
    return Pending(
        id=row.id,
        client_id=row.client_id,
        client_name=client.client_name or "An unnamed application",
        redirect_uri=redirect_uri,
        redirect_host=urlsplit(redirect_uri).netloc,
        scopes=[p for p in PERMISSIONS if p in scopes],
        state=params.get("state"),
        params=params,
    )


async def approve(
    session: AsyncSession,
    request: Pending,
    principal: Principal,
    *,
    permissions: list[str],
    requires_approval: bool,
    daily_recipient_budget: int | None,
    name: str,
) -> str:
    """The person's consent for one of their workspaces: a one-use code (60 s) for what they
    ticked, within what the client asked and their role allows. Answers where the browser
    goes next (the client's redirect URI with the code)."""
    granted = [p for p in permissions if p in request.scopes and p in principal.permissions]
    if not granted:
        raise ApiError(400, "Choose at least one permission to grant.")
    code = secrets.token_urlsafe(32)
    session.add(
        OAuthCode(
            code_hash=service.digest(code),
            client_id=request.client_id,
            workspace_id=principal.workspace_id,
            person_id=principal.person_id,
            name=name[:200] or request.client_name[:200],
            permissions=granted,
            requires_approval=requires_approval,
            daily_recipient_budget=daily_recipient_budget,
            code_challenge=str(request.params.get("code_challenge") or ""),
            redirect_uri=request.redirect_uri,
            redirect_uri_explicit=bool(request.params.get("redirect_uri_provided_explicitly")),
            resource=request.params.get("resource"),
            expires_at=utcnow() + CODE_TTL,
        )
    )
    await session.execute(delete(OAuthRequest).where(OAuthRequest.id == request.id))
    return construct_redirect_uri(request.redirect_uri, code=code, state=request.state)


async def deny(session: AsyncSession, request: Pending) -> str:
    await session.execute(delete(OAuthRequest).where(OAuthRequest.id == request.id))
    return construct_redirect_uri(
        request.redirect_uri,
        error="access_denied",
        error_description="The person declined the connection",
        state=request.state,
    )
