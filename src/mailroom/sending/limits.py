"""The plan's sending limits, kept in `send_meter` (models.sending.SendMeter):

- the monthly allowance, pooled per account like contacts: a message is reserved when it is
  queued (a campaign reserves its whole audience when it starts) and given back if it ends
  skipped or failed; a queue that does not fit what is left is refused (403) with nothing
  queued;
- the hourly ceiling, per account: messages sent in the current clock hour; a campaign's rows
  past it wait for the next hour, `/send` past it is a 429 with `Retry-After`.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.core.errors import ApiError
from mailroom.core.plans import Plan
from mailroom.db import serialise
from mailroom.models import SendMeter


def hour_period(moment: datetime) -> str:
    return f"h{moment:%Y%m%d%H}"


def month_period(moment: datetime) -> str:
    return f"m{moment:%Y%m}"


def next_hour(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)


def monthly_limit_reached(plan: Plan) -> ApiError:
    return ApiError(
        403, f"Monthly email limit reached ({plan.emails_per_month:,} on the {plan.label} plan)."
    )


_UPSERTS: dict[tuple[str, bool], Any] = {}


def _upsert(dialect: str, *, guarded: bool = False) -> Any:
    """The meter's upsert (add `count` to the period's row), built once per dialect: building
    `excluded` costs more than running it. `guarded`: add only while the total stays within
    `cap`, returning the new count (nothing when it would not)."""
    found = _UPSERTS.get((dialect, guarded))
    if found is None:
        make: Any = pg_insert if dialect == "postgresql" else sqlite_insert
        statement = make(SendMeter).values(
            account_id=bindparam("account_id"),
            period=bindparam("period"),
            count=bindparam("count"),
        )
        total = SendMeter.count + statement.excluded.count
        found = statement.on_conflict_do_update(
            index_elements=[SendMeter.account_id, SendMeter.period],
            set_={"count": total},
            where=(total <= bindparam("cap")) if guarded else None,
        )
        if guarded:
            found = found.returning(SendMeter.count)
        _UPSERTS[(dialect, guarded)] = found
    return found


async def _add(session: AsyncSession, account_id: str, period: str, count: int) -> None:
    if not count:
        return
    statement = _upsert(session.get_bind().dialect.name)
    await session.execute(statement, {"account_id": account_id, "period": period, "count": count})


async def _count(session: AsyncSession, account_id: str, period: str) -> int:
    found = await session.scalar(
        select(SendMeter.count).where(
            SendMeter.account_id == account_id, SendMeter.period == period
        )
    )
    return int(found or 0)


async def used_this_month(session: AsyncSession, account_id: str, now: datetime) -> int:
    return await _count(session, account_id, month_period(now))


async def sent_this_hour(session: AsyncSession, account_id: str, now: datetime) -> int:
    return await _count(session, account_id, hour_period(now))


async def reserve(
    session: AsyncSession, account_id: str, plan: Plan, count: int, now: datetime
) -> None:
    """Reserve `count` messages of this month's allowance, or refuse (403) reserving none.
    One reservation at a time per account, so two campaigns cannot both take the rest."""
    await serialise(session, f"send-allowance:{account_id}")
    if count > plan.emails_per_month:
        raise monthly_limit_reached(plan)
    # One statement: add to the meter only while it stays within the allowance.
    taken = await session.scalar(
        _upsert(session.get_bind().dialect.name, guarded=True),
        {
            "account_id": account_id,
            "period": month_period(now),
            "count": count,
            "cap": plan.emails_per_month,
        },
    )
    if taken is None:
        raise monthly_limit_reached(plan)


async def give_back(session: AsyncSession, returned: Counter[tuple[str, str]]) -> None:
    """Return reserved messages that were never sent: `(account id, month period) -> n`."""
    for (account_id, period), count in sorted(returned.items()):
        await _add(session, account_id, period, -count)


async def count_sent(session: AsyncSession, sent: Counter[str], now: datetime) -> None:
    """Messages the relay accepted this hour, per account."""
    for account_id, count in sorted(sent.items()):
        await _add(session, account_id, hour_period(now), count)


async def hourly_room(session: AsyncSession, account_id: str, plan: Plan, now: datetime) -> int:
    """How many more messages the account may send this hour."""
    return max(0, plan.hourly_send_ceiling - await sent_this_hour(session, account_id, now))


async def add_month(session: AsyncSession, account_id: str, count: int, now: datetime) -> None:
    """Count messages already sent (test sends) against the month, unchecked."""
    await _add(session, account_id, month_period(now), count)


async def prune(session: AsyncSession, now: datetime) -> None:
    """Hours are needed for an hour, months for a month: drop what is older than last month."""
    keep_from = now.replace(day=1) - timedelta(days=1)
    await session.execute(
        delete(SendMeter).where(
            (
                (SendMeter.period.like("h%"))
                & (SendMeter.period < hour_period(now - timedelta(days=2)))
            )
            | ((SendMeter.period.like("m%")) & (SendMeter.period < month_period(keep_from)))
        )
    )
