"""An assistant's daily recipient budget: how many people it may mail directly (transactional
sends, which are never held for approval) per UTC day, set when it was connected.

Each recipient is one counted row under `assistant-recipients:<assistant>:<day>` in the rate
limits' table, written in the transaction of the send it pays for: a refused or failed send
takes its count back with it. The count and the insert are one serialised step, so two sends
at once cannot both take the last one. The rows are pruned with the other limits' after a day.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, insert, select

from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.db import serialise
from mailroom.models import Assistant, RateLimitHit


def key_of(assistant_id: str, now: datetime) -> str:
    return f"assistant-recipients:{assistant_id}:{now.date().isoformat()}"


def spent(allowed: int) -> ApiError:
    return ApiError(
        403,
        f"Forbidden: this assistant's daily recipient budget ({allowed:,}) is spent; it "
        "renews at 00:00 UTC",
    )


async def spend(ctx: Context, recipients: int = 1) -> None:
    """Count `recipients` against the calling assistant's budget for today, or refuse (403)
    when they do not fit. Keys, people and assistants without a budget pass."""
    assistant_id = ctx.principal.assistant_id
    if assistant_id is None:
        return
    allowed = await ctx.session.scalar(
        select(Assistant.daily_recipient_budget).where(Assistant.id == assistant_id)
    )
    if allowed is None:
        return
    now = utcnow()
    key = key_of(assistant_id, now)
    await serialise(ctx.session, key)
    used = int(await ctx.session.scalar(select(func.count()).where(RateLimitHit.key == key)) or 0)
    if used + recipients > allowed:
        raise spent(allowed)
    await ctx.session.execute(
        insert(RateLimitHit), [{"key": key, "at": now} for _ in range(recipients)]
    )
