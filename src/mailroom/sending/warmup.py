"""Warm-up: a newly verified sending domain's campaign mail grows day by day, as mailbox
providers expect of a sender they do not know yet.

Stage n allows `STAGES[n-1]` campaign messages a UTC day; the next UTC day moves up one
stage when the day before carried at least half its allowance (the domain did send) and the
workspace's bounce and complaint rates are under the health warning levels. Warm-up is over
(no daily limit) once a stage reaches what the plan allows in a day anyway. An admin may skip
it for a domain that already has a reputation.

The count is taken when the engine claims rows (in the claim's transaction, the domain's row
locked, so two workers cannot both take the last of a day) and given back for a message that
ended skipped, failed or to be tried again, so it counts what went out. Rows past the day's
allowance wait for the next UTC midnight, as the hourly ceiling's wait for the next hour.
Transactional, automation and test mail is never held (it is counted nowhere here).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.core.emails import email_domain
from mailroom.core.plans import Plan
from mailroom.models import Campaign, SendingDomain, SendingSettings, SendLog
from mailroom.sending import addresses, health
from mailroom.settings import Settings

STAGES = (200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000)


def day_of(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d}"


def next_day(moment: datetime) -> datetime:
    """The next UTC midnight: when what today could not carry is due."""
    return moment.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)


def daily_limit(stage: int, plan: Plan) -> int | None:
    """Campaign messages a day at `stage`; None once warm-up is over."""
    if stage > len(STAGES):
        return None
    limit = STAGES[stage - 1]
    if limit >= min(plan.hourly_send_ceiling * 24, plan.emails_per_month):
        return None
    return limit


def advanced(stage: int, sent: int, plan: Plan, healthy: bool) -> int:
    """The stage of a new day after a day at `stage` that carried `sent`."""
    limit = daily_limit(stage, plan)
    if limit is not None and healthy and sent * 2 >= limit:
        return stage + 1
    return stage


def state_of(domain: SendingDomain, plan: Plan, now: datetime, healthy: bool) -> dict[str, Any]:
    """`{stage, daily_limit, sent_today, skipped}` as the API shows it today."""
    today = day_of(now)
    stage = domain.warmup_stage
    sent = domain.warmup_sent if domain.warmup_day == today else 0
    if domain.warmup_day is not None and domain.warmup_day != today:
        stage = advanced(stage, domain.warmup_sent, plan, healthy)
    if domain.warmup_skipped:
        return {"stage": stage, "daily_limit": None, "sent_today": sent, "skipped": True}
    return {
        "stage": stage,
        "daily_limit": daily_limit(stage, plan),
        "sent_today": sent,
        "skipped": False,
    }


async def workspace_healthy(session: AsyncSession, settings: Settings, workspace_id: str) -> bool:
    resumed_at = await session.scalar(
        select(SendingSettings.resumed_at).where(SendingSettings.workspace_id == workspace_id)
    )
    found = await health.rates_of(session, workspace_id, resumed_at)
    return health.healthy(settings, found)


@dataclass
class Admission:
    """What the day's allowances let through: row id -> the domain that counted it; the rows
    that wait for tomorrow; the campaigns with no room left today."""

    counted: dict[str, str] = field(default_factory=dict)
    later: list[str] = field(default_factory=list)
    full: set[str] = field(default_factory=set)


async def admit(
    session: AsyncSession,
    settings: Settings,
    rows: Sequence[Any],
    plans: dict[str, Plan],
    now: datetime,
) -> Admission:
    """Count `rows` (claimed campaign rows: id, workspace_id, kind, campaign_id) against
    their sending domain's allowance today; `plans`: workspace id -> its account's plan."""
    admission = Admission()
    campaign_rows = [r for r in rows if r.kind == "campaign" and r.campaign_id]
    if not campaign_rows:
        return admission
    senders = dict(
        (
            await session.execute(
                select(Campaign.id, Campaign.from_email).where(
                    Campaign.id.in_({r.campaign_id for r in campaign_rows})
                )
            )
        ).all()
    )
    by_domain: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for row in campaign_rows:
        try:
            name = addresses.wire_domain(email_domain(senders.get(row.campaign_id) or ""))
        except (addresses.Unwritable, ValueError):
            continue
        by_domain[(row.workspace_id, name)].append(row)
    if not by_domain:
        return admission
    domains = (
        await session.scalars(
            select(SendingDomain)
            .where(
                SendingDomain.workspace_id.in_({w for w, _ in by_domain}),
                SendingDomain.domain.in_({d for _, d in by_domain}),
                SendingDomain.status == "verified",
                SendingDomain.warmup_skipped.is_(False),
            )
            .order_by(SendingDomain.id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
    ).all()
    today = day_of(now)
    verdicts: dict[str, bool] = {}
    for domain in domains:
        plan = plans[domain.workspace_id]
        if domain.warmup_day != today:
            if domain.warmup_day is not None:
                if domain.workspace_id not in verdicts:
                    verdicts[domain.workspace_id] = await workspace_healthy(
                        session, settings, domain.workspace_id
                    )
                healthy = verdicts[domain.workspace_id]
                domain.warmup_stage = advanced(
                    domain.warmup_stage, domain.warmup_sent, plan, healthy
                )
            domain.warmup_day = today
            domain.warmup_sent = 0
        limit = daily_limit(domain.warmup_stage, plan)
        if limit is None:
            continue
        room = limit - domain.warmup_sent
        taken = 0
        for row in by_domain.get((domain.workspace_id, domain.domain), ()):
            if taken < room:
                taken += 1
                admission.counted[row.id] = domain.id
            else:
                admission.later.append(row.id)
                admission.full.add(row.campaign_id)
        domain.warmup_sent += taken
    return admission


async def defer(session: AsyncSession, admission: Admission, now: datetime) -> None:
    """Rows past today's allowance wait for the next UTC midnight, and so does the rest of
    their campaigns' due rows (one statement, not a claim each to learn there is no room)."""
    tomorrow = next_day(now)
    if admission.later:
        await session.execute(
            update(SendLog)
            .where(SendLog.id.in_(admission.later))
            .values(run_at=tomorrow, locked_until=None, locked_by=None)
        )
    if admission.full:
        await session.execute(
            update(SendLog)
            .where(
                SendLog.campaign_id.in_(sorted(admission.full)),
                SendLog.status == "pending",
                SendLog.run_at < tomorrow,
                SendLog.locked_until.is_(None) | (SendLog.locked_until < now),
            )
            .values(run_at=tomorrow)
            .execution_options(synchronize_session=False)
        )


async def give_back(
    session: AsyncSession,
    returned: Counter[tuple[str, str]],
    campaign_ids: set[str],
    now: datetime,
) -> None:
    """Messages counted at claim that did not go out: `(domain id, day) -> n`. The room they
    free is today's again: their campaigns' rows held for tomorrow are due now (claimed, and
    held again at once if another worker took the room meanwhile). The domain's row first:
    on PostgreSQL its lock waits for a claim holding it, and the release's own statement then
    sees the rows that claim held."""
    for (domain_id, day), count in sorted(returned.items()):
        await session.execute(
            update(SendingDomain)
            .where(SendingDomain.id == domain_id, SendingDomain.warmup_day == day)
            .values(
                warmup_sent=case(
                    (SendingDomain.warmup_sent > count, SendingDomain.warmup_sent - count),
                    else_=0,
                )
            )
            .execution_options(synchronize_session=False)
        )
    if campaign_ids:
        await session.execute(
            update(SendLog)
            .where(
                SendLog.campaign_id.in_(sorted(campaign_ids)),
                SendLog.status == "pending",
                SendLog.run_at == next_day(now),
            )
            .values(run_at=now)
            .execution_options(synchronize_session=False)
        )


async def release(session: AsyncSession, workspace_id: str, now: datetime) -> int:
    """After a skip: the workspace's campaign rows waiting for tomorrow's allowance are due
    now (rows held for the hourly ceiling at the same hour go back to it at their claim)."""
    done = await session.execute(
        update(SendLog)
        .where(
            SendLog.workspace_id == workspace_id,
            SendLog.kind == "campaign",
            SendLog.status == "pending",
            SendLog.run_at == next_day(now),
        )
        .values(run_at=now)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(done, "rowcount", 0) or 0)
