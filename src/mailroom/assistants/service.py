"""Assistants: one-use grants, their tokens, turning a bearer token into a principal, and the
workspace's list of connected assistants.

An assistant holds no long-lived secret: an access token lives an hour, a refresh token 30
days and is replaced on every use. Presenting a replaced refresh token again means two parties
hold it, so the whole assistant is revoked (RFC 6819 5.2.2.3). Only SHA-256 digests are stored.
"""

from __future__ import annotations

import hashlib
import secrets
import string
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.core.auth import PERMISSIONS, Principal, parse_permissions
from mailroom.core.clock import utcnow
from mailroom.core.errors import ApiError
from mailroom.core.plans import get_plan
from mailroom.models import (
    Account,
    Assistant,
    AssistantGrant,
    AssistantToken,
    Workspace,
    WorkspaceMember,
)
from mailroom.named import clean_name

ACCESS_TTL = timedelta(hours=1)
REFRESH_TTL = timedelta(days=30)
GRANT_TTL_DEFAULT = 600
GRANT_TTL_MIN, GRANT_TTL_MAX = 60, 3600
MAX_BUDGET = 100_000_000
# last_used_at is refreshed at most this often, as for keys.
LAST_USED_RESOLUTION = timedelta(seconds=60)

GRANT_PREFIX = "mr_grant_"
ACCESS_PREFIX = "mr_at_"
REFRESH_PREFIX = "mr_rt_"
_ALPHABET = string.ascii_letters + string.digits

# What a member never holds, so never grants (people.service gives members the rest).
ADMIN_ONLY = frozenset({"webhooks:read", "webhooks:write", "audit:read"})
MANAGE_NEEDS_ALL = "Forbidden: managing assistants needs a key with every permission"
NOT_BY_ASSISTANT = "Forbidden: an assistant cannot connect other assistants"


def new_secret(prefix: str, length: int = 32) -> str:
    return prefix + "".join(secrets.choice(_ALPHABET) for _ in range(length))


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class TokenPair:
    access_token: str
    refresh_token: str
    expires_in: int
    scope: str
    assistant: Assistant

    def answer(self) -> dict[str, Any]:
        return {
            "access_token": self.access_token,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "refresh_token": self.refresh_token,
            "scope": self.scope,
        }


# ---------------------------------------------------------------- who may connect what


def check_can_manage(principal: Principal) -> None:
    """Listing, reading and revoking assistants: an admin person, or a key (or assistant)
    holding every permission (an assistant's view of the workspace is no narrower)."""
    if principal.person_id is not None and principal.assistant_id is None:
        principal.check_admin()
        return
    if not all(p in principal.permissions for p in PERMISSIONS):
        raise ApiError(403, MANAGE_NEEDS_ALL)


def grantable(principal: Principal, wanted: list[str]) -> list[str]:
    """`wanted` when the caller holds each of them; else 403 naming the first missing."""
    if principal.assistant_id is not None:
        raise ApiError(403, NOT_BY_ASSISTANT)
    for permission in wanted:
        principal.check(permission)
    return wanted


def role_allows(role: str) -> frozenset[str]:
    return frozenset(PERMISSIONS) if role == "admin" else frozenset(PERMISSIONS) - ADMIN_ONLY


def _whole(value: Any) -> int | None:
    """A JSON integer (600.0 is one to JSON Schema, as published); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) else None


def lifetime(value: Any) -> int:
    if value is None:
        return GRANT_TTL_DEFAULT
    seconds = _whole(value)
    if seconds is None or not GRANT_TTL_MIN <= seconds <= GRANT_TTL_MAX:
        raise ApiError(400, f"expires_in must be between {GRANT_TTL_MIN} and {GRANT_TTL_MAX}")
    return seconds


def budget(value: Any) -> int | None:
    if value is None:
        return None
    number = _whole(value)
    if number is None or not 0 <= number <= MAX_BUDGET:
        raise ApiError(
            400, f"daily_recipient_budget must be a whole number from 0 to {MAX_BUDGET:,}"
        )
    return number


def default_approval(permissions: list[str], requested: Any) -> bool:
    """Audience sends wait for an admin by default whenever the assistant may send."""
    if requested is None:
        return "campaigns:send" in permissions
    return bool(requested)


# ---------------------------------------------------------------- one-use grants


@dataclass(frozen=True)
class CreatedGrant:
    grant: AssistantGrant
    code: str  # shown once, never stored


async def create_grant(
    session: AsyncSession,
    principal: Principal,
    *,
    name: Any,
    permissions: Any,
    expires_in: Any = None,
    requires_approval: Any = None,
    daily_recipient_budget: Any = None,
) -> CreatedGrant:
    cleaned = clean_name(name, 200)
    if not isinstance(permissions, list) or not all(isinstance(p, str) for p in permissions):
        raise ApiError(400, "permissions must be a list of permission names")
    if requires_approval is not None and not isinstance(requires_approval, bool):
        raise ApiError(400, "requires_approval must be true or false")
    wanted = grantable(principal, parse_permissions(permissions))
    seconds = lifetime(expires_in)
    code = new_secret(GRANT_PREFIX)
    grant = AssistantGrant(
        workspace_id=principal.workspace_id,
        code_hash=digest(code),
        name=cleaned,
        permissions=wanted,
        requires_approval=default_approval(wanted, requires_approval),
        daily_recipient_budget=budget(daily_recipient_budget),
        created_by_person_id=principal.person_id,
        created_by_key_id=principal.key_id,
        expires_at=utcnow() + timedelta(seconds=seconds),
    )
    session.add(grant)
    await session.flush()
    return CreatedGrant(grant, code)


async def exchange_grant(session: AsyncSession, code: Any) -> TokenPair:
    """The grant's code for an assistant and its first tokens, once."""
    if not isinstance(code, str) or not code.startswith(GRANT_PREFIX):
        raise ApiError(400, "Invalid grant")
    grant = await session.scalar(
        select(AssistantGrant).where(AssistantGrant.code_hash == digest(code))
    )
    if grant is None:
        raise ApiError(400, "Invalid grant")
    if grant.used_at is not None:
        raise ApiError(400, "Grant already used")
    now = utcnow()
    if grant.expires_at <= now:
        raise ApiError(400, "Grant expired")
    # Claimed with a conditional update: of two exchanges at once, one wins.
    claimed = await session.execute(
        update(AssistantGrant)
        .where(AssistantGrant.id == grant.id, AssistantGrant.used_at.is_(None))
        .values(used_at=now)
        .execution_options(synchronize_session=False)
    )
    if not getattr(claimed, "rowcount", 0):
        raise ApiError(400, "Grant already used")
    assistant = Assistant(
        workspace_id=grant.workspace_id,
        name=grant.name,
        kind="grant",
        permissions=list(grant.permissions),
        requires_approval=grant.requires_approval,
        daily_recipient_budget=grant.daily_recipient_budget,
        connected_by_person_id=grant.created_by_person_id,
        connected_by_key_id=grant.created_by_key_id,
    )
    session.add(assistant)
    await session.flush()
    grant.assistant_id = assistant.id
    return await issue_tokens(session, assistant)


def instructions(public_url: str, code: str, expires_at: datetime) -> str:
    """What a person pastes to a headless agent: everything it needs, nothing it must look up."""
    base = public_url.rstrip("/")
    return (
        f"Connect to Mailroom with this one-use grant (valid until "
        f"{expires_at.strftime('%Y-%m-%d %H:%M UTC')}): POST {base}/api/v1/assistants/grants/"
        f'exchange with the JSON body {{"grant": "{code}"}} and no API key. Send the '
        f"access_token it answers as `Authorization: Bearer <access_token>` to {base}/api/v1 "
        f"or to the MCP server at {base}/mcp. It lasts an hour: before then, POST "
        f"grant_type=refresh_token&refresh_token=<refresh_token> (form-encoded) to "
        f"{base}/oauth/token for a new pair; each refresh token works once."
    )


# ---------------------------------------------------------------- tokens


async def issue_tokens(session: AsyncSession, assistant: Assistant) -> TokenPair:
    now = utcnow()
    access = new_secret(ACCESS_PREFIX, 40)
    refresh = new_secret(REFRESH_PREFIX, 40)
    session.add_all(
        [
            AssistantToken(
                token_hash=digest(access),
                assistant_id=assistant.id,
                kind="access",
                expires_at=now + ACCESS_TTL,
            ),
            AssistantToken(
                token_hash=digest(refresh),
                assistant_id=assistant.id,
                kind="refresh",
                expires_at=now + REFRESH_TTL,
            ),
        ]
    )
    await session.flush()
    return TokenPair(
        access_token=access,
        refresh_token=refresh,
        expires_in=int(ACCESS_TTL.total_seconds()),
        scope=" ".join(assistant.permissions),
        assistant=assistant,
    )


@dataclass(frozen=True)
class RefreshFound:
    token_hash: str
    assistant: Assistant
    expires_at: datetime


async def find_refresh(
    session: AsyncSession, token: Any, *, client_id: str | None
) -> RefreshFound | None:
    """A live refresh token of a live assistant connected through `client_id` (None: a grant).
    A replaced one presented again revokes its assistant (and answers None)."""
    if not isinstance(token, str) or not token.startswith(REFRESH_PREFIX):
        return None
    row = (
        await session.execute(
            select(AssistantToken, Assistant)
            .join(Assistant, Assistant.id == AssistantToken.assistant_id)
            .where(AssistantToken.token_hash == digest(token), AssistantToken.kind == "refresh")
        )
    ).first()
    if row is None:
        return None
    stored, assistant = row
    if assistant.revoked_at is not None or assistant.client_id != client_id:
        return None
    if stored.used_at is not None:
        await revoke(session, assistant)
        return None
    if stored.expires_at <= utcnow():
        return None
    return RefreshFound(stored.token_hash, assistant, stored.expires_at)


async def rotate(session: AsyncSession, found: RefreshFound) -> TokenPair | None:
    """Spend the refresh token and issue the next pair. Of two rotations at the same moment
    one loses: that is reuse, the assistant is revoked and None answered (the caller refuses
    after committing, so the revocation stays)."""
    spent = await session.execute(
        update(AssistantToken)
        .where(AssistantToken.token_hash == found.token_hash, AssistantToken.used_at.is_(None))
        .values(used_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if not getattr(spent, "rowcount", 0):
        await revoke(session, found.assistant)
        return None
    return await issue_tokens(session, found.assistant)


async def refresh_grant_tokens(session: AsyncSession, token: Any) -> TokenPair | None:
    """Refresh for an assistant connected by a one-use grant (no OAuth client); None for a
    token that does not refresh (after revoking its assistant on reuse: commit, then
    refuse)."""
    found = await find_refresh(session, token, client_id=None)
    return await rotate(session, found) if found is not None else None


async def revoke_token(session: AsyncSession, token: Any, *, client_id: str | None) -> None:
    """RFC 7009: an access token ends; a refresh token ends its whole assistant (the client
    is letting go of the connection). Only the tokens of assistants connected through
    `client_id` (None: a one-use grant's); others and unknown ones are ignored, as the RFC
    asks."""
    if not isinstance(token, str) or not token.startswith((ACCESS_PREFIX, REFRESH_PREFIX)):
        return
    row = (
        await session.execute(
            select(AssistantToken, Assistant)
            .join(Assistant, Assistant.id == AssistantToken.assistant_id)
            .where(AssistantToken.token_hash == digest(token))
        )
    ).first()
    if row is None:
        return
    stored, assistant = row
    if assistant.client_id != client_id:
        return
    if stored.kind == "refresh":
        await revoke(session, assistant)
    else:
        await session.delete(stored)


@dataclass(frozen=True)
class TokenCheck:
    principal: Principal
    needs_touch: bool


def bearer_of(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


async def authenticate_token(session: AsyncSession, token: str | None) -> TokenCheck | None:
    """The principal for a live access token; None for anything else (one 401 for all).

    The assistant acts for the person who connected it, within what that person's role in
    the workspace allows today: removed from the workspace, the assistant stops; demoted to
    member, it loses the admin's permissions."""
    if not token or not token.startswith(ACCESS_PREFIX) or len(token) > 100:
        return None
    row = (
        await session.execute(
            select(AssistantToken.expires_at, Assistant, Account.id, Account.plan)
            .join(Assistant, Assistant.id == AssistantToken.assistant_id)
            .join(Workspace, Workspace.id == Assistant.workspace_id)
            .join(Account, Account.id == Workspace.account_id)
            .where(AssistantToken.token_hash == digest(token), AssistantToken.kind == "access")
        )
    ).first()
    if row is None:
        return None
    expires_at, assistant, account_id, plan = row
    now = utcnow()
    if expires_at <= now or assistant.revoked_at is not None:
        return None
    role = "admin"
    if assistant.connected_by_person_id is not None:
        member_role = await session.scalar(
            select(WorkspaceMember.role).where(
                WorkspaceMember.workspace_id == assistant.workspace_id,
                WorkspaceMember.person_id == assistant.connected_by_person_id,
            )
        )
        if member_role is None:
            return None
        role = member_role
    allowed = role_allows(role)
    principal = Principal(
        workspace_id=assistant.workspace_id,
        account_id=account_id,
        plan=get_plan(plan),
        permissions=frozenset(p for p in assistant.permissions if p in allowed),
        person_id=assistant.connected_by_person_id,
        role=role,
        assistant_id=assistant.id,
        approval_required=assistant.requires_approval,
    )
    stale = assistant.last_used_at is None or now - assistant.last_used_at >= LAST_USED_RESOLUTION
    return TokenCheck(principal, stale)


async def touch(session: AsyncSession, assistant_id: str) -> None:
    now = utcnow()
    await session.execute(
        update(Assistant)
        .where(
            Assistant.id == assistant_id,
            (Assistant.last_used_at.is_(None))
            | (Assistant.last_used_at <= now - LAST_USED_RESOLUTION),
        )
        .values(last_used_at=now)
    )


# ---------------------------------------------------------------- the workspace's assistants


async def revoke(session: AsyncSession, assistant: Assistant) -> None:
    """Gone at once: its tokens are deleted, so the next call with them is a 401."""
    if assistant.revoked_at is None:
        assistant.revoked_at = utcnow()
    await session.execute(delete(AssistantToken).where(AssistantToken.assistant_id == assistant.id))
    await session.flush()
