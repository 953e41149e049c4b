"""`date_anniversary` automations: each day, at the trigger's time in the automation's time
zone, contacts whose date field (plus `days`: negative is before) falls on that day enter.

A worker loop. Each automation remembers the last local day it enrolled
(`anniversaries_through`), so a day is worked exactly once however many workers run (the
automation's row is serialised while its day is worked) and a worker that was down catches
up, at most `CATCH_UP_DAYS` back. Activating starts from the current day: the days it was
paused or a draft are not made up. 29 February anniversaries fall on 1 March in other
years, as segments read them. It is a yearly occasion: a contact who finished last year's
run enters again this year.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import or_, select

from mailroom.accounts import service as accounts
from mailroom.automations.enrol import start
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.db import serialise
from mailroom.models import Automation, Contact
from mailroom.segments.compile import anniversary_window, stored_day

CATCH_UP_DAYS = 7


def latest_due_day(trigger: dict[str, Any], zone: str, now: datetime) -> date:
    """The last local day whose sending moment (the trigger's `time`) has come."""
    local = now.astimezone(ZoneInfo(zone))
    hours, minutes = (int(part) for part in str(trigger.get("time") or "09:00").split(":"))
    moment = time(hours, minutes)
    return local.date() if local.time() >= moment else local.date() - timedelta(days=1)


def days_to_work(through: str | None, latest: date) -> list[date]:
    if through is None:
        return [latest]
    first = max(date.fromisoformat(through) + timedelta(days=1), latest - timedelta(CATCH_UP_DAYS))
    return [first + timedelta(days=n) for n in range((latest - first).days + 1)]


def _on(day_text: Any, anniversary: date) -> Any:
    """The stored `YYYY-MM-DD` date's month and day make `anniversary` (29 February counts
    on 1 March in a year without it)."""
    ranges, leap_day = anniversary_window(anniversary, 0)
    assert ranges is not None
    parts = [day_text.like(f"%-{low}") for low, _high in ranges]
    if leap_day:
        parts.append(day_text.like("%-02-29"))
    return or_(*parts)


async def tick(worker: Any) -> int:
    """Contacts enrolled across the due automations."""
    now = utcnow()
    async with worker.db.session(write=False) as session:
        candidates = list(
            (
                await session.execute(
                    select(Automation.id, Automation.trigger, Automation.time_zone).where(
                        Automation.status == "active",
                        Automation.trigger_type == "date_anniversary",
                    )
                )
            ).all()
        )
    enrolled = 0
    for automation_id, trigger, zone in candidates:
        latest = latest_due_day(trigger, zone, now)
        enrolled += await _work(worker.db, worker.settings, automation_id, latest)
    return enrolled


async def _work(db: Any, settings: Any, automation_id: str, latest: date) -> int:
    async with db.transaction() as session:
        await serialise(session, f"anniversaries:{automation_id}")
        automation = await session.scalar(
            select(Automation).where(
                Automation.id == automation_id,
                Automation.status == "active",
                Automation.trigger_type == "date_anniversary",
            )
        )
        if automation is None:
            return 0
        days = days_to_work(automation.anniversaries_through, latest)
        if not days:
            return 0
        principal = await accounts.principal_for_workspace(session, automation.workspace_id)
        ctx = Context(session, principal, settings)
        enrolled = await enrol_on(ctx, automation, days)
        automation.anniversaries_through = latest.isoformat()
        return enrolled


async def enrol_on(ctx: Context, automation: Automation, days: list[date]) -> int:
    """Enrol the subscribed contacts whose anniversary (+ the trigger's days) is one of
    `days`, in one statement."""
    offset = int(automation.trigger.get("days") or 0)
    day_text = stored_day(ctx.dialect, str(automation.trigger["field"]))
    matching = (
        select(Contact.id)
        .where(
            Contact.workspace_id == ctx.workspace_id,
            Contact.status == "subscribed",
            day_text.is_not(None),
            or_(*(_on(day_text, d - timedelta(days=offset)) for d in days)),
        )
        .correlate(None)  # its own scan of contacts, not the enrolling query's row
    )
    return await start(ctx, [automation], matching, again=True)
