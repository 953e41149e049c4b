"""Writing events into the outbox, in the caller's transaction."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import select

from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.ids import new_id
from mailroom.events.catalog import CATALOG
from mailroom.models import Contact, ContactTag, Event, Tag, WebhookDelivery
from mailroom.webhooks import fanout


def iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def contact_snapshot(contact: Contact, tags: list[str]) -> dict[str, Any]:
    """The contact as events carry it (spec, Events: delivery envelope)."""
    return {
        "id": contact.id,
        "email": contact.email,
        "status": contact.status,
        "first_name": contact.first_name,
        "last_name": contact.last_name,
        "source": contact.source,
        "custom_fields": dict(contact.custom_fields or {}),
        "created_at": iso(contact.created_at),
        "subscribed_at": iso(contact.subscribed_at),
        "unsubscribed_at": iso(contact.unsubscribed_at),
        "tags": tags,
    }


async def tag_names(ctx: Context, contact_id: str) -> list[str]:
    rows = await ctx.session.scalars(
        select(Tag.name)
        .join(ContactTag, ContactTag.tag_id == Tag.id)
        .where(ContactTag.contact_id == contact_id, ContactTag.workspace_id == ctx.workspace_id)
        .order_by(Tag.name_key)
    )
    return list(rows.all())


async def emit(
    ctx: Context,
    event_type: str,
    data: dict[str, Any],
    *,
    list_id: str | None = None,
    tag_id: str | None = None,
    form_id: str | None = None,
    campaign_id: str | None = None,
    domain_id: str | None = None,
    endpoint_ids: list[str] | None = None,
) -> Event | None:
    """Write the event and one pending delivery per matching endpoint, in the caller's
    transaction. With no endpoint to deliver to, nothing is written (None). `endpoint_ids`
    (an automation's call-webhook step naming its endpoints): only those of the workspace's
    enabled endpoints, whatever events they subscribe to."""
    if event_type not in CATALOG:
        raise ValueError(f"unknown event {event_type}")
    dimensions = {
        "list_id": list_id,
        "tag_id": tag_id,
        "form_id": form_id,
        "campaign_id": campaign_id,
        "domain_id": domain_id,
    }
    if endpoint_ids is not None:
        named = set(endpoint_ids)
        endpoints = [
            r.endpoint_id
            for r in await fanout.rules(ctx)
            if r.endpoint_id in named and r.channel == "server"
        ]
    else:
        endpoints = await fanout.subscribers(ctx, event_type, dimensions)
    if not endpoints:
        return None
    now = utcnow()
    event = Event(
        id=new_id(),
        workspace_id=ctx.workspace_id,
        type=event_type,
        data=data,
        created_at=now,
        **dimensions,
    )
    ctx.session.add(event)
    ctx.session.add_all(
        WebhookDelivery(
            id=new_id(),
            workspace_id=ctx.workspace_id,
            endpoint_id=endpoint_id,
            event_id=event.id,
            event_type=event_type,
            status="pending",
            run_at=now,
            created_at=now,
            updated_at=now,
        )
        for endpoint_id in endpoints
    )
    return event


async def emit_contact_event(
    ctx: Context,
    event_type: str,
    contact: Contact,
    *,
    tags: list[str] | None = None,
    extra: dict[str, Any] | None = None,
    **dimensions: str | None,
) -> Event | None:
    dims: dict[str, str | None] = {f: dimensions.get(f) for f in _DIMENSIONS}
    if not await fanout.subscribers(ctx, event_type, dims):
        return None  # nobody listens: skip building the snapshot too
    names = tags if tags is not None else await tag_names(ctx, contact.id)
    data: dict[str, Any] = {"contact": contact_snapshot(contact, names), **(extra or {})}
    return await emit(ctx, event_type, data, **cast(dict[str, Any], dims))


_DIMENSIONS = ("list_id", "tag_id", "form_id", "campaign_id", "domain_id")
