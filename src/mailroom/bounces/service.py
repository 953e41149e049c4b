"""Acting on what came back: map a report to its message, then bounce, soft-bounce, complain
or mark delivered, in one transaction per report.

Mapping (the contract): a report is acted on only through the VERP token of the address it
was sent to (`bounces+<token>@...`), which must verify; a report to the domain's generic
`bounces@` address is mapped by the original Message-ID it quotes. A token that fails
verification changes nothing, whatever message it quotes. A mail to `unsubscribe+<token>@...`
(the List-Unsubscribe mailto) unsubscribes that message's contact.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, update

from mailroom.accounts import service as accounts
from mailroom.bounces.reports import Outcome, Report, read
from mailroom.core import tokens
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.db import Database
from mailroom.events import service as events
from mailroom.models import Contact, DeliveryReport, SendLog
from mailroom.pages import service as unsubscribe_page
from mailroom.sending import health
from mailroom.sending.addresses import BOUNCE, MAIL_UNSUBSCRIBE
from mailroom.sending.outcomes import contact_blocked, message_data_of
from mailroom.settings import Settings

log = logging.getLogger("mailroom.bounces")

SOFT_LIMIT = 3  # soft bounces of different messages ...
SOFT_WINDOW = timedelta(days=15)  # ... within this, with no delivery between: a hard bounce


@dataclass(frozen=True)
class Target:
    kind: str  # bounce | generic | unsubscribe
    row_id: str | None = None


def target_of(settings: Settings, address: str) -> Target | None:
    """What an inbound recipient address names, or None (unknown, or a forged token)."""
    local = address.strip().strip("<>").rpartition("@")[0].lower()
    prefix, plus, token = local.partition("+")
    secret = settings.resolved_secret_key
    if prefix == "bounces" and not plus:
        return Target("generic")
    if prefix == "bounces":
        row_id = tokens.read_short(secret, BOUNCE, token)
        return Target("bounce", row_id) if row_id else None
    if prefix == "unsubscribe" and plus:
        row_id = tokens.read_short(secret, MAIL_UNSUBSCRIBE, token)
        return Target("unsubscribe", row_id) if row_id else None
    return None


async def handle(db: Database, settings: Settings, recipients: list[str], data: bytes) -> str:
    """Act on one inbound mail; a word saying what happened (for the log and the tests)."""
    targets = [t for t in (target_of(settings, r) for r in recipients) if t is not None]
    if not targets:
        log.warning("dropped a report to %s: no verifiable token", ", ".join(recipients)[:200])
        return "dropped"
    target = targets[0]
    if target.kind == "unsubscribe":
        return await _unsubscribe(db, settings, target.row_id or "")
    report = read(data)
    if not report.outcomes:
        return "ignored"
    async with db.transaction() as session:
        row = await _row_of(session, target, report)
        if row is None:
            log.warning("dropped a %s report: its message is unknown", report.kind)
            return "dropped"
        principal = await accounts.principal_for_workspace(session, row.workspace_id)
        ctx = Context(session, principal, settings)
        outcome = _outcome_for(report, row.email)
        return await _apply(ctx, row, outcome)


async def _row_of(session: Any, target: Target, report: Report) -> SendLog | None:
    if target.kind == "bounce":
        found: SendLog | None = await session.scalar(
            select(SendLog).where(SendLog.id == target.row_id)
        )
        return found
    message_id = (report.original_message_id or "").strip().strip("<>")
    if not message_id:
        return None
    found = await session.scalar(select(SendLog).where(SendLog.message_id == message_id))
    return found


def _outcome_for(report: Report, email: str) -> Outcome:
    for outcome in report.outcomes:
        if outcome.recipient == email:
            return outcome
    return report.outcomes[0]


async def _apply(ctx: Context, row: SendLog, outcome: Outcome) -> str:
    now = utcnow()
    ctx.session.add(
        DeliveryReport(
            workspace_id=row.workspace_id,
            send_log_id=row.id,
            contact_id=row.contact_id,
            kind=outcome.kind,
            status=outcome.status,
            diagnostic=outcome.diagnostic[:500],
            created_at=now,
        )
    )
    await ctx.session.flush()
    if outcome.kind == "delivered":
        first = await _set_first(ctx, row, SendLog.delivered_at, now)
        if first:
            await events.emit(
                ctx, "email.delivered", message_data_of(row), campaign_id=row.campaign_id
            )
        return "delivered"
    if outcome.kind == "complaint":
        first = await _set_first(ctx, row, SendLog.complained_at, now, status="complained")
        await contact_blocked(ctx, row.contact_id, row.email, reason="complained", source="fbl")
        if first:
            data = {
                **message_data_of(row),
                "complaint": {"feedback_type": outcome.diagnostic or "abuse"},
            }
            await events.emit(ctx, "email.complained", data, campaign_id=row.campaign_id)
            await health.check(ctx)
        return "complaint"
    if outcome.kind == "soft" and not await _soft_limit_reached(ctx, row, now):
        return "soft"
    detail = outcome.diagnostic or outcome.status
    if outcome.kind == "soft":
        detail = f"{SOFT_LIMIT} soft bounces within {SOFT_WINDOW.days} days: {detail}"
    await _hard(ctx, row, detail, now)
    return "hard"


async def _hard(ctx: Context, row: SendLog, detail: str, now: Any) -> None:
    first = await _set_first(ctx, row, SendLog.bounced_at, now, status="bounced")
    await contact_blocked(ctx, row.contact_id, row.email, reason="bounced", source="dsn")
    if first:
        data = {**message_data_of(row), "bounce": {"type": "hard", "response": detail[:500]}}
        await events.emit(ctx, "email.bounced", data, campaign_id=row.campaign_id)
        await health.check(ctx)


async def _set_first(
    ctx: Context, row: SendLog, column: Any, now: Any, *, status: str | None = None
) -> bool:
    """Set the row's `column` once (a guarded UPDATE: a report repeated or racing acts once)."""
    values: dict[str, Any] = {column.key: now, "updated_at": now}
    if status:
        values["status"] = status
    done = await ctx.session.execute(
        update(SendLog).where(SendLog.id == row.id, column.is_(None)).values(values)
    )
    return bool(getattr(done, "rowcount", 0))


async def _soft_limit_reached(ctx: Context, row: SendLog, now: Any) -> bool:
    """Three soft bounces of different messages for this contact within 15 days, with no
    delivery report since the first of them."""
    if not row.contact_id:
        return False
    since = now - SOFT_WINDOW
    delivered = await ctx.session.scalar(
        select(func.max(DeliveryReport.created_at)).where(
            DeliveryReport.contact_id == row.contact_id, DeliveryReport.kind == "delivered"
        )
    )
    if delivered is not None and delivered > since:
        since = delivered
    messages = await ctx.session.scalar(
        select(func.count(func.distinct(DeliveryReport.send_log_id))).where(
            DeliveryReport.contact_id == row.contact_id,
            DeliveryReport.kind == "soft",
            DeliveryReport.created_at >= since,
        )
    )
    return int(messages or 0) >= SOFT_LIMIT


async def _unsubscribe(db: Database, settings: Settings, row_id: str) -> str:
    """The List-Unsubscribe mailto: the same effect as the one-click link."""
    async with db.transaction() as session:
        row = await session.scalar(select(SendLog).where(SendLog.id == row_id))
        if row is None or not row.contact_id:
            return "dropped"
        contact = await session.scalar(
            select(Contact).where(
                Contact.id == row.contact_id, Contact.workspace_id == row.workspace_id
            )
        )
        if contact is None:
            return "dropped"
        principal = await accounts.principal_for_workspace(session, row.workspace_id)
        ctx = Context(session, principal, settings)
        await unsubscribe_page.opt_out(ctx, contact, row_id=row.id, source="unsubscribe_mail")
    return "unsubscribed"
