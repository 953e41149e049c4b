"""Rolling-window limits kept in the database, so they hold across server processes.

`hit()` counts one action under a key if the window still has room. The check and the insert
are one statement (a refusal then reads when the next action fits), and one serialised step:
PostgreSQL takes a transaction-scoped advisory lock on the key, SQLite's write transaction is
already exclusive (`BEGIN IMMEDIATE`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import String, Table, bindparam, delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import UTCDateTime
from mailroom.db import serialise
from mailroom.models import RateLimitHit

# The longest window any limit uses; older rows can go.
LONGEST_WINDOW = timedelta(days=1)


def _add() -> Any:
    """One statement (built once): the hit goes in only while its window has room."""
    key = bindparam("hit_key", type_=String())
    in_window = (RateLimitHit.key == key) & (
        RateLimitHit.at > bindparam("hit_since", type_=UTCDateTime())
    )
    room = select(func.count()).where(in_window).scalar_subquery() < bindparam("hit_limit")
    source = select(key, bindparam("hit_at", type_=UTCDateTime())).where(room)
    # The table, not the class: an ORM insert given parameters would be a bulk insert.
    return insert(cast(Table, RateLimitHit.__table__)).from_select(["key", "at"], source)


_ADD = _add()


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    limit: int
    remaining: int | None  # 0 when refused; None when allowed (not counted: no one asks)
    retry_after: int  # whole seconds until one more action fits; 0 when allowed


async def hit(
    session: AsyncSession,
    key: str,
    *,
    limit: int,
    window_seconds: int,
    now: datetime | None = None,
) -> RateDecision:
    """Count one action under `key` unless `limit` actions already fall in the last window."""
    now = now or utcnow()
    since = now - timedelta(seconds=window_seconds)
    await serialise(session, key)
    values = {"hit_key": key, "hit_at": now, "hit_since": since, "hit_limit": limit}
    added = await session.execute(_ADD, values)
    if int(getattr(added, "rowcount", 0) or 0):
        return RateDecision(True, limit, None, 0)
    in_window = (RateLimitHit.key == key) & (RateLimitHit.at > since)
    used = int(await session.scalar(select(func.count()).where(in_window)) or 0)
    # The next action fits once enough of the oldest hits have left the window.
    leaving = await session.scalar(
        select(RateLimitHit.at)
        .where(in_window)
        .order_by(RateLimitHit.at)
        .offset(max(0, used - limit))
        .limit(1)
    )
    wait = (leaving + timedelta(seconds=window_seconds) - now).total_seconds() if leaving else 1
    return RateDecision(False, limit, 0, max(1, math.ceil(wait)))


async def prune(session: AsyncSession, *, now: datetime | None = None) -> int:
    cutoff = (now or utcnow()) - LONGEST_WINDOW
    result = await session.execute(delete(RateLimitHit).where(RateLimitHit.at < cutoff))
    return int(getattr(result, "rowcount", 0) or 0)
