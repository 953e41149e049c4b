"""The audit trail of authenticated writes, and its 12-month retention."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import and_, delete, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.core.auth import Principal
from mailroom.core.clock import utcnow
from mailroom.core.errors import ApiError
from mailroom.models import AuditEntry

RETENTION = timedelta(days=365)


def new_entry(
    principal: Principal,
    *,
    operation: str,
    method: str,
    path: str,
    target_id: str | None,
    status: int,
) -> AuditEntry:
    return AuditEntry(
        workspace_id=principal.workspace_id,
        key_id=principal.key_id,
        person_id=principal.person_id,
        assistant_id=principal.assistant_id,
        operation=operation[:100],
        method=method,
        path=path[:500],
        target_id=target_id[:200] if target_id else None,
        status=status,
        created_at=utcnow(),
    )


@dataclass
class AuditPage:
    entries: list[AuditEntry]
    next_cursor: str | None


# `<microseconds since 1970>_<entry id>`: every string of this shape names a position in the
# log (17 digits stay within datetime's range), so the published pattern is the whole rule.
CURSOR_PATTERN = r"^[0-9]{1,17}_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
_CURSOR = re.compile(CURSOR_PATTERN)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _encode_cursor(entry: AuditEntry) -> str:
    micros = (entry.created_at - _EPOCH) // timedelta(microseconds=1)
    return f"{micros}_{entry.id}"


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    if not _CURSOR.match(cursor):
        raise ApiError(400, "Invalid cursor")
    micros, entry_id = cursor.split("_", 1)
    return _EPOCH + timedelta(microseconds=int(micros)), entry_id


@dataclass(frozen=True)
class AuditFilter:
    """The dashboard's narrowing of the log (each optional)."""

    person_id: str | None = None
    key_id: str | None = None
    assistant_id: str | None = None
    operation: str | None = None
    since: datetime | None = None
    before: datetime | None = None


async def list_entries(
    session: AsyncSession,
    principal: Principal,
    *,
    cursor: str | None,
    limit: int,
    only: AuditFilter | None = None,
) -> AuditPage:
    """Newest first; `next_cursor` continues after the last entry returned."""
    query = select(AuditEntry).where(AuditEntry.workspace_id == principal.workspace_id)
    if only is not None:
        for column, value in (
            (AuditEntry.person_id, only.person_id),
            (AuditEntry.key_id, only.key_id),
            (AuditEntry.assistant_id, only.assistant_id),
            (AuditEntry.operation, only.operation),
        ):
            if value:
                query = query.where(column == value)
        if only.since is not None:
            query = query.where(AuditEntry.created_at >= only.since)
        if only.before is not None:
            query = query.where(AuditEntry.created_at < only.before)
    if cursor is not None:  # an empty cursor is malformed, as the pattern says
        stamp, entry_id = _decode_cursor(cursor)
        query = query.where(
            or_(
                AuditEntry.created_at < stamp,
                and_(AuditEntry.created_at == stamp, AuditEntry.id < entry_id),
            )
        )
    query = query.order_by(AuditEntry.created_at.desc(), AuditEntry.id.desc()).limit(limit + 1)
    rows = list((await session.scalars(query)).all())
    more = len(rows) > limit
    rows = rows[:limit]
    return AuditPage(rows, _encode_cursor(rows[-1]) if more and rows else None)


async def prune(session: AsyncSession, *, now: datetime | None = None) -> int:
    cutoff = (now or utcnow()) - RETENTION
    result = await session.execute(delete(AuditEntry).where(AuditEntry.created_at < cutoff))
    return int(getattr(result, "rowcount", 0) or 0)
