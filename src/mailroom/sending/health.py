"""Delivery health: a workspace's hard-bounce and complaint rates over the messages its relay
accepted in the last 7 days (at most the last 2,000, counted from the last resume). Bounces
and complaints count when the engine saw them or a report came back through the message's
signed return path; reports matched by Message-ID only never count (see `bounces.service`).

Past the warn rates `workspace.health_warning` fires (at most once a day; sending goes on);
past the pause rates sending is paused by `health` (`workspace.paused` with the rates), which
only the operator lifts. No decision before `health_min_messages` messages.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, exists, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.models import DeliveryReport, SendingSettings, SendLog
from mailroom.settings import Settings

WINDOW_DAYS = 7
WINDOW_MESSAGES = 2000
WARN_EVERY = timedelta(days=1)
# The workspace's own mail; test sends and the operator's system mail are not judged.
COUNTED = ("campaign", "transactional", "automation")


async def rates(ctx: Context, row: SendingSettings) -> dict[str, Any]:
    """`{bounce_rate, complaint_rate, messages_in_window}`, rates from 0 to 1 (unrounded:
    the thresholds are judged on them, and pages round for show)."""
    return await rates_of(ctx.session, ctx.workspace_id, row.resumed_at)


async def rates_of(
    session: AsyncSession, workspace_id: str, resumed_at: datetime | None
) -> dict[str, Any]:
    """`rates` of a workspace by id (the engine's claim has no Context)."""
    since = utcnow() - timedelta(days=WINDOW_DAYS)
    if resumed_at is not None and resumed_at > since:
        since = resumed_at
    # Accepted by the relay, or refused by the recipient's server at RCPT (a hard bounce the
    # relay never took): both are messages this workspace sent.
    at = func.coalesce(SendLog.sent_at, SendLog.bounced_at)
    recent = (
        select(
            SendLog.id,
            SendLog.contact_id,
            SendLog.sent_at,
            SendLog.bounced_at,
            SendLog.complained_at,
        )
        .where(
            SendLog.workspace_id == workspace_id,
            SendLog.kind.in_(COUNTED),
            at.is_not(None),
            at >= since,
        )
        .order_by(at.desc())
        .limit(WINDOW_MESSAGES)
        .subquery()
    )

    def signed(*kinds: str) -> Any:
        """A report of one of `kinds` came back for the message through its signed return
        path. One mapped by Message-ID only (anyone can write to the generic bounces@
        address) is kept unsigned: it may bounce the contact, never pause the workspace.
        Probed by contact (ix_delivery_reports_contact_kind); a message whose contact was
        deleted cannot be probed and counts as before, so deleting bounced contacts lowers
        no rate."""
        return or_(
            recent.c.contact_id.is_(None),
            exists().where(
                DeliveryReport.contact_id == recent.c.contact_id,
                DeliveryReport.kind.in_(kinds),
                DeliveryReport.signed.is_(True),
                DeliveryReport.send_log_id == recent.c.id,
                DeliveryReport.workspace_id == workspace_id,
            ),
        )

    # A bounce refused at RCPT (never accepted, so no report) was seen by the engine itself.
    bounce = and_(
        recent.c.bounced_at.is_not(None),
        or_(recent.c.sent_at.is_(None), signed("hard", "soft")),
    )
    complaint = and_(recent.c.complained_at.is_not(None), signed("complaint"))
    total, bounced, complained = (
        await session.execute(
            select(
                func.count(),
                func.count(case((bounce, 1))),
                func.count(case((complaint, 1))),
            )
        )
    ).one()
    total = int(total or 0)
    return {
        "bounce_rate": int(bounced or 0) / total if total else 0.0,
        "complaint_rate": int(complained or 0) / total if total else 0.0,
        "messages_in_window": total,
    }


def healthy(settings: Settings, found: dict[str, Any]) -> bool:
    """Bounces and complaints under the warning levels (or too few messages to judge)."""
    if found["messages_in_window"] < settings.health_min_messages:
        return True
    return (
        found["bounce_rate"] <= settings.health_warn_bounce_rate
        and found["complaint_rate"] <= settings.health_warn_complaint_rate
    )


def shown(found: dict[str, Any]) -> dict[str, Any]:
    """The rates as the API and events show them (6 decimals)."""
    return {k: round(v, 6) if isinstance(v, float) else v for k, v in found.items()}
