"""Recording an open or a click: one short transaction per request.

Every request is stored as a `TrackingHit`. A person's (see `agents`) also counts on the send
log (`open_count` / `click_count`); the first one sets `first_opened_at` / `first_clicked_at`
with a guarded UPDATE, so `email.opened` / `email.clicked` fire once however many requests
race. A click also counts as an open (a reader who clicked saw the message, images or not).
A token that does not verify, or names a row that no longer exists, records nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.accounts import service as accounts
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.db import Database
from mailroom.events import service as events
from mailroom.models import SendLog, TrackingHit
from mailroom.settings import Settings
from mailroom.tracking import links
from mailroom.tracking.agents import is_automated

MAX_AGENT = 300


def hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


async def record_open(db: Database, settings: Settings, token: str, user_agent: str) -> bool:
    """Whether the token named a message (the pixel is answered either way)."""
    row_id = links.read_open(settings.resolved_secret_key, token)
    if row_id is None:
        return False
    async with db.transaction() as session:
        row = await _row(session, row_id)
        if row is None:
            return False
        automated = is_automated(user_agent)
        now = utcnow()
        _hit(session, row, "open", user_agent, automated, now)
        if not automated:
            await _opened(session, settings, row, now)
    return True


async def record_click(db: Database, settings: Settings, token: str, user_agent: str) -> str | None:
    """The URL to redirect to, or None when the token is not one of ours."""
    found = links.read_click(settings.resolved_secret_key, token)
    if found is None:
        return None
    row_id, index, url = found
    async with db.transaction() as session:
        row = await _row(session, row_id)
        if row is None:
            # The message's row is gone (its workspace was deleted): still take the reader
            # where the signed link says, record nothing.
            return url
        automated = is_automated(user_agent)
        now = utcnow()
        _hit(session, row, "click", user_agent, automated, now, index=index, url=url)
        if not automated:
            await session.execute(
                update(SendLog)
                .where(SendLog.id == row.id)
                .values(click_count=SendLog.click_count + 1)
            )
            first = await _first(session, SendLog.first_clicked_at, row.id, now)
            await _opened(session, settings, row, now, counted=False)
            if first:
                data = {**_message(row), "link": {"url": url, "index": index}}
                ctx = await _context(session, settings, row.workspace_id)
                await events.emit(ctx, "email.clicked", data, campaign_id=row.campaign_id)
    return url


async def _row(session: AsyncSession, row_id: str) -> Any:
    return (
        await session.execute(
            select(
                SendLog.id,
                SendLog.workspace_id,
                SendLog.campaign_id,
                SendLog.contact_id,
                SendLog.email,
                SendLog.kind,
                SendLog.message_id,
            ).where(SendLog.id == row_id, SendLog.sent_at.is_not(None))
        )
    ).first()


def _hit(
    session: AsyncSession,
    row: Any,
    kind: str,
    user_agent: str,
    automated: bool,
    now: datetime,
    *,
    index: int | None = None,
    url: str | None = None,
) -> None:
    session.add(
        TrackingHit(
            workspace_id=row.workspace_id,
            send_log_id=row.id,
            campaign_id=row.campaign_id,
            kind=kind,
            link_index=index,
            url=url,
            user_agent=user_agent[:MAX_AGENT],
            automated=automated,
            hour=hour_of(now),
            created_at=now,
        )
    )


async def _first(session: AsyncSession, column: Any, row_id: str, now: datetime) -> bool:
    """Set a `first_*_at` column if it is unset; whether this request was the one to set it."""
    done = await session.execute(
        update(SendLog).where(SendLog.id == row_id, column.is_(None)).values({column.key: now})
    )
    return bool(getattr(done, "rowcount", 0))


async def _opened(
    session: AsyncSession, settings: Settings, row: Any, now: datetime, *, counted: bool = True
) -> None:
    if counted:
        await session.execute(
            update(SendLog).where(SendLog.id == row.id).values(open_count=SendLog.open_count + 1)
        )
    if await _first(session, SendLog.first_opened_at, row.id, now):
        ctx = await _context(session, settings, row.workspace_id)
        await events.emit(ctx, "email.opened", _message(row), campaign_id=row.campaign_id)


async def _context(session: AsyncSession, settings: Settings, workspace_id: str) -> Context:
    principal = await accounts.principal_for_workspace(session, workspace_id)
    return Context(session, principal, settings)


def _message(row: Any) -> dict[str, Any]:
    """The same `message` / `recipient` shape as `email.sent`."""
    return {
        "message": {
            "id": row.id,
            "message_id": row.message_id,
            "kind": row.kind,
            "campaign_id": row.campaign_id,
        },
        "recipient": {"email": row.email, "contact_id": row.contact_id},
    }
