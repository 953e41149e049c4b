"""Accounts, workspaces and API keys: creating them, and turning a key into a principal."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import ColumnElement, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.core.auth import (
    PERMISSIONS,
    Principal,
    generate_key,
    key_lookup,
    key_matches,
    parse_permissions,
)
from mailroom.core.clock import utcnow
from mailroom.core.errors import ApiError
from mailroom.core.plans import get_plan
from mailroom.models import Account, ApiKey, SendingSettings, Workspace

# last_used_at is refreshed at most this often per key: exact to the minute is enough, and it
# keeps every read from turning into a write.
LAST_USED_RESOLUTION = timedelta(seconds=60)


@dataclass
class CreatedKey:
    key: ApiKey
    secret: str  # the full key: shown once, never stored


async def create_workspace(
    session: AsyncSession,
    *,
    plan: str | None = None,
    account_id: str | None = None,
    name: str = "",
) -> tuple[Account, Workspace]:
    """A new workspace in a new account (on `plan`), or in an existing account."""
    if account_id:
        account = await session.get(Account, account_id)
        if account is None:
            raise ApiError(404, "Account not found")
        if plan is not None and get_plan(plan).name != account.plan:
            raise ApiError(
                409,
                f"Account {account.id} is on the {account.plan} plan; "
                f"change it with `mailroom admin set-plan {account.id} {plan}`",
            )
    else:
        account = Account(plan=get_plan("free" if plan is None else plan).name, name=name)
        session.add(account)
        await session.flush()
    workspace = Workspace(account_id=account.id, name=name)
    session.add(workspace)
    await session.flush()
    return account, workspace


async def set_plan(session: AsyncSession, account_id: str, plan: str) -> Account:
    account = await session.get(Account, account_id)
    if account is None:
        raise ApiError(404, "Account not found")
    account.plan = get_plan(plan).name
    return account


async def create_key(
    session: AsyncSession,
    workspace_id: str,
    *,
    permissions: str | list[str] | None = "all",
    name: str = "",
    person_id: str | None = None,
) -> CreatedKey:
    checked = parse_permissions(permissions)
    if await session.get(Workspace, workspace_id) is None:
        raise ApiError(404, "Workspace not found")
    secret, lookup, digest = generate_key()
    key = ApiKey(
        workspace_id=workspace_id,
        name=name[:100],
        lookup=lookup,
        key_hash=digest,
        permissions=checked,
        created_by_person_id=person_id,
    )
    session.add(key)
    await session.flush()
    return CreatedKey(key, secret)


async def revoke_key(session: AsyncSession, key_id: str) -> ApiKey:
    key = await session.get(ApiKey, key_id)
    if key is None:
        raise ApiError(404, "API key not found")
    if key.revoked_at is None:
        key.revoked_at = utcnow()
    return key


@dataclass(frozen=True)
class KeyCheck:
    principal: Principal
    needs_touch: bool  # last_used_at is stale


async def authenticate_key(session: AsyncSession, key: str | None) -> KeyCheck | None:
    """The principal for a live, well-formed key; None for missing, malformed, unknown or
    revoked keys (all of them answer the same 401, so nothing leaks about which)."""
    lookup = key_lookup(key)
    if lookup is None or key is None:
        return None
    row = (
        await session.execute(
            select(ApiKey, Account.id, Account.plan)
            .join(Workspace, Workspace.id == ApiKey.workspace_id)
            .join(Account, Account.id == Workspace.account_id)
            .where(ApiKey.lookup == lookup)
        )
    ).first()
    if row is None:
        return None
    api_key, account_id, plan = row
    if api_key.revoked_at is not None or not key_matches(key, api_key.key_hash):
        return None
    principal = Principal(
        workspace_id=api_key.workspace_id,
        account_id=account_id,
        plan=get_plan(plan),
        permissions=frozenset(api_key.permissions),
        key_id=api_key.id,
    )
    now = utcnow()
    stale = api_key.last_used_at is None or now - api_key.last_used_at >= LAST_USED_RESOLUTION
    return KeyCheck(principal, stale)


async def touch_key(session: AsyncSession, key_id: str) -> None:
    """Record that the key was used now, unless another request already did this minute (many
    requests at once with a stale key write once, not once each)."""
    now = utcnow()
    await session.execute(
        update(ApiKey)
        .where(
            ApiKey.id == key_id,
            or_(
                ApiKey.last_used_at.is_(None),
                ApiKey.last_used_at <= now - LAST_USED_RESOLUTION,
            ),
        )
        .values(last_used_at=now)
    )


async def any_workspace(session: AsyncSession) -> bool:
    return (await session.scalar(select(Workspace.id).limit(1))) is not None


async def list_workspaces(session: AsyncSession) -> list[dict[str, str]]:
    """Every workspace of the installation with its account and plan, oldest first: the ids
    the operator's commands (set-plan, create-key, pause-sending) take."""
    rows = await session.execute(
        select(Account.id, Workspace.id, Workspace.name, Account.plan)
        .join(Account, Account.id == Workspace.account_id)
        .order_by(Workspace.created_at, Workspace.id)
    )
    return [
        {"account_id": account_id, "workspace_id": workspace_id, "name": name, "plan": plan}
        for account_id, workspace_id, name, plan in rows
    ]


def shown_name() -> ColumnElement[str]:
    """A workspace's name as subscribers see it (pages, system emails): its name, else its
    sender name, else its sender address, so a workspace made without a name still says who
    is writing. Use in a query whose FROM has `Workspace`."""
    sender = (
        select(
            func.coalesce(
                func.nullif(SendingSettings.from_name, ""),
                func.nullif(SendingSettings.from_email, ""),
            )
        )
        .where(SendingSettings.workspace_id == Workspace.id)
        .scalar_subquery()
    )
    return func.coalesce(func.nullif(Workspace.name, ""), sender, "")


async def principal_for_workspace(session: AsyncSession, workspace_id: str) -> Principal:
    """An all-permissions principal for operator tools (the CLI) acting on one workspace."""
    row = (
        await session.execute(
            select(Workspace.id, Account.id, Account.plan)
            .join(Account, Account.id == Workspace.account_id)
            .where(Workspace.id == workspace_id)
        )
    ).first()
    if row is None:
        raise ApiError(404, "Workspace not found")
    return Principal(
        workspace_id=row[0],
        account_id=row[1],
        plan=get_plan(row[2]),
        permissions=frozenset(PERMISSIONS),
    )
