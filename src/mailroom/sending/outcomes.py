"""Writing what became of a batch of messages, in one transaction: the send-log rows, the plan
meter, hard bounces, the `email.*` / `contact.bounced` events and a campaign's completion
(`campaign.sent`, exactly once, by whichever worker writes its last row).

A row is `sent` only once the relay said 250. A 4xx or no answer is tried again later with
backoff (up to 3 days, then `failed`); a 5xx naming the recipient is a hard bounce.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, exists, func, literal, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.accounts import service as accounts
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.db import chunks
from mailroom.events import service as events
from mailroom.models import Campaign, Contact, SendLog
from mailroom.sending import limits, warmup
from mailroom.sending import service as sending
from mailroom.settings import Settings
from mailroom.suppressions import service as suppressions
from mailroom.webhooks import fanout

RETRY_DELAYS = (60, 300, 900, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 24 * 3600)
GIVE_UP_AFTER = timedelta(days=3)


@dataclass(frozen=True)
class Claimed:
    """What the engine keeps of a claimed row (plain values: no session is open meanwhile)."""

    id: str
    workspace_id: str
    account_id: str
    kind: str
    campaign_id: str | None
    contact_id: str | None
    email: str
    attempts: int
    payload: dict[str, Any] | None
    created_at: datetime
    request_id: str | None = None  # the request that queued it: on its log lines
    variant_id: str | None = None  # an A/B test's variant (campaigns.ab_test)
    # The sending domain whose warm-up allowance counted it, and that UTC day (given back
    # when the message does not go out).
    warmup_domain: str | None = None
    warmup_day: str | None = None


@dataclass(frozen=True)
class Outcome:
    row: Claimed
    # sent | retry | failed | skipped | bounced, or, never a failure of the message:
    # held (not tried: its provider is resting or paced; due again at `until`) and
    # blocked (its provider refused the workspace's mail for policy; due at `until`)
    state: str
    detail: str = ""  # the relay's answer or why
    message_id: str | None = None
    email: str | None = None  # the address it went to, when it changed since queueing
    provider: str | None = None  # the recipient's mailbox provider (sending.providers)
    deferred: bool = False  # the answer was a deferral ("try later"), counted per provider
    until: datetime | None = None  # held or blocked: when it is due again


def retry_at(row: Claimed, now: datetime) -> datetime | None:
    """When to try again after a temporary failure, or None: give up (failed)."""
    if now - row.created_at >= GIVE_UP_AFTER:
        return None
    delay = RETRY_DELAYS[min(row.attempts, len(RETRY_DELAYS) - 1)]
    return now + timedelta(seconds=delay * random.uniform(0.9, 1.1))


_TABLE: Any = SendLog.__table__
_FINAL = (
    update(_TABLE)
    .where(_TABLE.c.id == bindparam("r_id"))
    .values(
        status=bindparam("r_status"),
        attempts=bindparam("r_attempts"),
        run_at=bindparam("r_run_at"),
        email=bindparam("r_email"),
        message_id=bindparam("r_message_id"),
        smtp_response=bindparam("r_response"),
        error=bindparam("r_error"),
        sent_at=bindparam("r_sent_at"),
        bounced_at=bindparam("r_bounced_at"),
        provider=func.coalesce(
            bindparam("r_provider", type_=_TABLE.c.provider.type), _TABLE.c.provider
        ),
        deferrals=_TABLE.c.deferrals + bindparam("r_deferred"),
        updated_at=bindparam("r_now"),
        locked_until=None,
        locked_by=None,
    )
)


def _params(outcome: Outcome, now: datetime) -> dict[str, Any]:
    row = outcome.row
    status = outcome.state
    attempts = row.attempts + (0 if status in ("skipped", "held") else 1)
    run_at = now
    if status == "retry":
        when = retry_at(row, now)
        status, run_at = ("pending", when) if when is not None else ("failed", now)
    elif status in ("held", "blocked"):
        given_up = status == "blocked" and now - row.created_at >= GIVE_UP_AFTER
        status, run_at = ("failed", now) if given_up else ("pending", outcome.until or now)
    sent = outcome.state in ("sent", "bounced")
    return {
        "r_id": row.id,
        "r_status": status,
        "r_attempts": attempts,
        "r_run_at": run_at,
        "r_email": outcome.email or row.email,
        "r_message_id": outcome.message_id,
        "r_response": outcome.detail[:500] if sent else None,
        "r_error": None if outcome.state == "sent" else outcome.detail[:500] or None,
        "r_sent_at": now if outcome.state == "sent" else None,
        "r_bounced_at": now if outcome.state == "bounced" else None,
        "r_provider": outcome.provider,
        "r_deferred": 1 if outcome.deferred else 0,
        "r_now": now,
    }


class Contexts:
    """One service Context per workspace for the batch's transaction (events, suppressions)."""

    def __init__(self, session: AsyncSession, settings: Settings) -> None:
        self.session = session
        self.settings = settings
        self._found: dict[str, Context] = {}

    async def __call__(self, workspace_id: str) -> Context:
        ctx = self._found.get(workspace_id)
        if ctx is None:
            principal = await accounts.principal_for_workspace(self.session, workspace_id)
            ctx = Context(self.session, principal, self.settings)
            self._found[workspace_id] = ctx
        return ctx


def message_data(
    *,
    row_id: str,
    message_id: str | None,
    kind: str,
    campaign_id: str | None,
    email: str,
    contact_id: str | None,
) -> dict[str, Any]:
    """The `message` / `recipient` part of every `email.*` event."""
    return {
        "message": {
            "id": row_id,
            "message_id": message_id,
            "kind": kind,
            "campaign_id": campaign_id,
        },
        "recipient": {"email": email, "contact_id": contact_id},
    }


def message_data_of(row: Any) -> dict[str, Any]:
    """`message_data` of a send-log row (or a row of its columns)."""
    return message_data(
        row_id=row.id,
        message_id=row.message_id,
        kind=row.kind,
        campaign_id=row.campaign_id,
        email=row.email,
        contact_id=row.contact_id,
    )


def _message(outcome: Outcome) -> dict[str, Any]:
    row = outcome.row
    return message_data(
        row_id=row.id,
        message_id=outcome.message_id,
        kind=row.kind,
        campaign_id=row.campaign_id,
        email=outcome.email or row.email,
        contact_id=row.contact_id,
    )


async def contact_blocked(
    ctx: Context, contact_id: str | None, email: str, *, reason: str, source: str
) -> None:
    await contacts_blocked(ctx, [(contact_id, email)], reason=reason, source=source)


async def contacts_blocked(
    ctx: Context, blocked: list[tuple[str | None, str]], *, reason: str, source: str
) -> None:
    """Hard bounces (`reason="bounced"`) or complaints (`"complained"`) of (contact id,
    address) pairs: each address is suppressed for that reason (never weakening a stronger
    one), and each contact takes the status with `contact.bounced` / `contact.complained`. A
    complaint outranks a bounce; a bounce changes only a subscribed contact."""
    await suppressions.suppress_many(
        ctx, [email for _, email in blocked], reason=reason, source=source
    )
    ids = sorted({contact_id for contact_id, _ in blocked if contact_id})
    now = utcnow()
    allowed = Contact.status == "subscribed" if reason == "bounced" else Contact.status != reason
    changed: list[str] = []
    for part in chunks(ctx.session, ids):
        done = await ctx.session.execute(
            update(Contact)
            .where(Contact.workspace_id == ctx.workspace_id, Contact.id.in_(part), allowed)
            .values(
                status=reason,
                updated_at=now,
                unsubscribed_at=func.coalesce(
                    Contact.unsubscribed_at, literal(now, Contact.unsubscribed_at.type)
                ),
            )
            .returning(Contact.id)
            .execution_options(synchronize_session=False)
        )
        changed.extend(done.scalars().all())
    event = f"contact.{reason}"
    if not changed or not await fanout.subscribers(ctx, event, {}):
        return
    contacts = await ctx.session.scalars(
        select(Contact)
        .where(Contact.id.in_(sorted(changed)))
        .order_by(Contact.id)
        .execution_options(populate_existing=True)
    )
    for contact in contacts.all():
        await events.emit_contact_event(ctx, event, contact)


async def hard_bounce(ctx: Context, outcome: Outcome) -> None:
    """A 5xx for the recipient: the address is suppressed as bounced, a subscribed contact
    becomes `bounced` (`contact.bounced`), and the message has `email.bounced`."""
    row = outcome.row
    email = outcome.email or row.email
    await contact_blocked(ctx, row.contact_id, email, reason="bounced", source="smtp")
    data = {**_message(outcome), "bounce": {"type": "hard", "response": outcome.detail[:500]}}
    await events.emit(ctx, "email.bounced", data, campaign_id=row.campaign_id)


async def record(session: AsyncSession, settings: Settings, outcomes: list[Outcome]) -> None:
    if not outcomes:
        return
    now = utcnow()
    params = [_params(o, now) for o in outcomes]
    connection = await session.connection()
    await connection.execute(_FINAL, params)

    sent: Counter[str] = Counter()
    returned: Counter[tuple[str, str]] = Counter()
    for outcome, values in zip(outcomes, params, strict=True):
        if outcome.state == "sent":
            sent[outcome.row.account_id] += 1
        elif values["r_status"] in ("failed", "skipped") and (
            # Operator mail queued before it was counted took nothing.
            (payload := outcome.row.payload or {}).get("counted") or not payload.get("operator")
        ):
            returned[(outcome.row.account_id, limits.month_period(outcome.row.created_at))] += 1
    await limits.count_sent(session, sent, now)
    await limits.give_back(session, returned)
    unsent = [
        o.row
        for o in outcomes
        if o.row.warmup_domain and o.row.warmup_day and o.state not in ("sent", "bounced")
    ]
    if unsent:
        await warmup.give_back(
            session,
            Counter((r.warmup_domain or "", r.warmup_day or "") for r in unsent),
            {r.campaign_id for r in unsent if r.campaign_id},
            now,
        )

    contexts = Contexts(session, settings)
    for outcome in outcomes:
        if outcome.state == "sent":
            ctx = await contexts(outcome.row.workspace_id)
            await events.emit(
                ctx, "email.sent", _message(outcome), campaign_id=outcome.row.campaign_id
            )
        elif outcome.state == "bounced":
            await hard_bounce(await contexts(outcome.row.workspace_id), outcome)
    for workspace_id in sorted({o.row.workspace_id for o in outcomes if o.state == "bounced"}):
        await sending.check_health(await contexts(workspace_id))
    blocks = {(o.row.workspace_id, o.provider): o for o in outcomes if o.state == "blocked"}
    for (workspace_id, provider), outcome in sorted(
        blocks.items(), key=lambda b: (b[0][0], b[0][1] or "")
    ):
        if provider and outcome.until:
            ctx = await contexts(workspace_id)
            await sending.block_provider(ctx, provider, outcome.detail, outcome.until)
    for campaign_id, workspace_id in sorted(
        {(o.row.campaign_id, o.row.workspace_id) for o in outcomes if o.row.campaign_id}
    ):
        await finish_campaign(await contexts(workspace_id), campaign_id, now)


async def finish_campaign(ctx: Context, campaign_id: str, now: datetime) -> bool:
    """`sent` and `campaign.sent` once no row of the campaign is due any more; the guarded
    UPDATE makes it happen once whichever worker gets there."""
    # A row waiting for an A/B test's winner is due later: not finished.
    pending = exists().where(
        SendLog.campaign_id == campaign_id, SendLog.status.in_(("pending", "waiting"))
    )
    finished = await ctx.session.scalar(
        update(Campaign)
        .where(Campaign.id == campaign_id, Campaign.status == "sending", ~pending)
        .values(status="sent", finished_at=now, updated_at=now)
        .returning(Campaign.id)
    )
    if finished is None:
        return False
    campaign = await ctx.session.scalar(select(Campaign).where(Campaign.id == campaign_id))
    assert campaign is not None
    counts = dict(
        (
            await ctx.session.execute(
                select(SendLog.status, func.count())
                .where(SendLog.campaign_id == campaign_id)
                .group_by(SendLog.status)
            )
        ).all()
    )
    data = {
        "campaign": {
            "id": campaign.id,
            "name": campaign.name,
            "subject": campaign.subject,
            "recipients": campaign.recipients,
            "sent": int(counts.get("sent", 0)),
            "failed": int(counts.get("failed", 0)),
            "skipped": int(counts.get("skipped", 0)),
            "bounced": int(counts.get("bounced", 0)),
            "started_at": events.iso(campaign.started_at),
            "finished_at": events.iso(now),
        }
    }
    await events.emit(ctx, "campaign.sent", data, campaign_id=campaign.id)
    return True
