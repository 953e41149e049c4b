"""The delivery log: entries as the API shows them, and how long they are kept."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.core.clock import utcnow
from mailroom.models import Event, WebhookDelivery
from mailroom.webhooks.envelope import envelope

RETENTION = timedelta(days=30)
FINAL = ("delivered", "failed", "abandoned")


def entry(delivery: WebhookDelivery, event: Event | None, *, with_payload: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": delivery.id,
        "event_type": delivery.event_type,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "last_status_code": delivery.last_status_code,
        "last_error": delivery.last_error,
        "delivered_at": delivery.delivered_at,
        "created_at": delivery.created_at,
        "next_attempt_at": delivery.run_at if delivery.status == "pending" else None,
    }
    if with_payload and event is not None:
        body["payload"] = envelope(delivery.id, event.type, event.created_at, event.data)
    return body


async def events_for(session: AsyncSession, deliveries: list[WebhookDelivery]) -> dict[str, Event]:
    ids = list({d.event_id for d in deliveries})
    if not ids:
        return {}
    rows = await session.scalars(select(Event).where(Event.id.in_(ids)))
    return {e.id: e for e in rows.all()}


async def prune(session: AsyncSession, *, now: datetime | None = None) -> int:
    """Finished deliveries older than 30 days, then events no delivery refers to any more."""
    cutoff = (now or utcnow()) - RETENTION
    result = await session.execute(
        delete(WebhookDelivery).where(
            WebhookDelivery.status.in_(FINAL), WebhookDelivery.created_at < cutoff
        )
    )
    await session.execute(
        delete(Event).where(
            Event.created_at < cutoff,
            ~select(WebhookDelivery.id).where(WebhookDelivery.event_id == Event.id).exists(),
        )
    )
    return int(getattr(result, "rowcount", 0) or 0)
