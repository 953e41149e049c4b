"""Dashboard sessions: a random token in an HttpOnly cookie, its SHA-256 in
`dashboard_sessions`. A session ends after `MAILROOM_SESSION_IDLE_MINUTES` without a request,
after 30 days in any case, on signing out, or when the person signs out everywhere. Each
session has its CSRF token (every form carries it) and its flash messages.

Reading a session never writes (pages that only read run in a read session): an ended one
is refused, and its row is removed when its person next signs in. What a visit changes on the
row (`load`'s last-seen time, `take_flash`) is only set on the object; the dashboard's frame
writes it, in the form's write transaction or, after a read-only page, in a short one of its
own."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.core.clock import utcnow
from mailroom.models import DashboardSession, Person

COOKIE = "mailroom_session"
MAX_AGE = timedelta(days=30)
TOUCH_EVERY = timedelta(minutes=1)  # last_seen_at is written at most this often


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def start(
    session: AsyncSession, person: Person, workspace_id: str | None, *, pending: bool = False
) -> tuple[str, DashboardSession]:
    """(the cookie's token, the row). `pending`: the password was right, the second factor
    is still to come."""
    token = secrets.token_urlsafe(32)
    now = utcnow()
    await session.execute(  # this person's sessions that can only have ended
        delete(DashboardSession).where(
            DashboardSession.person_id == person.id, DashboardSession.created_at < now - MAX_AGE
        )
    )
    row = DashboardSession(
        id=_digest(token),
        person_id=person.id,
        workspace_id=workspace_id,
        csrf_token=secrets.token_urlsafe(24),
        needs_second_factor=pending,
        flash=[],
        created_at=now,
        last_seen_at=now,
    )
    session.add(row)
    await session.flush()
    return token, row


async def load(
    session: AsyncSession, token: str | None, idle: timedelta
) -> tuple[DashboardSession, Person] | None:
    """The live session of a cookie and its person (an idle or old one is ended). A session
    last seen more than `TOUCH_EVERY` ago gets `last_seen_at` set to now, on the object only
    (see the module's docstring)."""
    if not token or len(token) > 100:
        return None
    found = (
        await session.execute(
            select(DashboardSession, Person)
            .join(Person, Person.id == DashboardSession.person_id)
            .where(DashboardSession.id == _digest(token))
        )
    ).first()
    if found is None:
        return None
    row, person = found
    now = utcnow()
    if now - row.last_seen_at > idle or now - row.created_at > MAX_AGE:
        return None
    if now - row.last_seen_at > TOUCH_EVERY:
        row.last_seen_at = now
    return row, person


async def end(session: AsyncSession, token: str | None) -> None:
    if token:
        await session.execute(delete(DashboardSession).where(DashboardSession.id == _digest(token)))


async def end_everywhere(session: AsyncSession, person_id: str) -> None:
    await session.execute(delete(DashboardSession).where(DashboardSession.person_id == person_id))


def flash(row: DashboardSession, kind: str, text: str) -> None:
    row.flash = [*(row.flash or []), {"kind": kind, "text": text}][-5:]


def take_flash(row: DashboardSession) -> list[dict[str, str]]:
    """The flashes to show now; cleared on the object (written as `load`'s change is)."""
    shown = list(row.flash or [])
    if shown:
        row.flash = []
    return shown
