"""Rolling-window limits kept in the database, so they hold across server processes.

`hit()` counts one action under a key if the window still has room. The check and the insert
are one serialised step: PostgreSQL takes a transaction-scoped advisory lock on the key,
SQLite's write transaction is already exclusive (`BEGIN IMMEDIATE`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.core.clock import utcnow
from mailroom.db import serialise
from mailroom.models import RateLimitHit

# The longest window any limit uses; older rows can go.
LONGEST_WINDOW = timedelta(days=1)


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    limit: int
    remaining: int
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
    in_window = (RateLimitHit.key == key) & (RateLimitHit.at > since)
    used = int(await session.scalar(select(func.count()).where(in_window)) or 0)
    if used >= limit:
        # The next action fits once enough of the oldest hits have left the window.
        leaving = await session.scalar(
            select(RateLimitHit.at)
            .where(in_window)
            .order_by(RateLimitHit.at)
            .offset(used - limit)
            .limit(1)
        )
        wait = (leaving + timedelta(seconds=window_seconds) - now).total_seconds() if leaving else 1
        return RateDecision(False, limit, 0, max(1, math.ceil(wait)))
    await session.execute(insert(RateLimitHit).values(key=key, at=now))
    return RateDecision(True, limit, limit - used - 1, 0)


async def prune(session: AsyncSession, *, now: datetime | None = None) -> int:
    cutoff = (now or utcnow()) - LONGEST_WINDOW
    result = await session.execute(delete(RateLimitHit).where(RateLimitHit.at < cutoff))
    return int(getattr(result, "rowcount", 0) or 0)
