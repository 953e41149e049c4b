"""Webhook endpoints: registration rules, the plan's endpoint count, health, the delivery log."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, update

from mailroom.core import urlguard
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.db import serialise
from mailroom.events.catalog import CATALOG, CHAT_EVENTS
from mailroom.models import (
    Campaign,
    Form,
    MailingList,
    SendingDomain,
    Tag,
    WebhookDelivery,
    WebhookEndpoint,
)
from mailroom.webhooks import chat, client, fanout, signing

MAX_FILTER_IDS = 100
MAX_DESCRIPTION = 500
CHANNELS = ("server", "slack", "teams")
# Tables that own each filter dimension's ids.
_OWNERS: dict[str, Any] = {
    "list_ids": MailingList,
    "tag_ids": Tag,
    "domain_ids": SendingDomain,
    "form_ids": Form,
    "campaign_ids": Campaign,
}


def allowed_networks(ctx: Context) -> list[urlguard.Network]:
    return urlguard.parse_networks(ctx.settings.webhook_allow_networks)


async def check_url(ctx: Context, url: Any) -> str:
    """The URL, cleaned, once the guard passes it. Resolves its name: network I/O, so callers
    run it before their unit of work opens a transaction (no connection held while DNS
    answers, and on SQLite not the single write connection)."""
    if url is None or (isinstance(url, str) and not url.strip()):
        raise ApiError(400, "url is required")
    if not isinstance(url, str):
        raise ApiError(400, "url must be a string")
    if len(url) > 2000:
        raise ApiError(400, "url must be 2000 characters or fewer")
    try:
        await urlguard.check_url(url.strip(), allowed_networks(ctx), client.resolve_host)
    except urlguard.UnsafeUrl as exc:
        raise ApiError(400, f"url is not allowed: {exc}") from None
    return url.strip()


def check_event_types(value: Any, channel: str) -> list[str]:
    if value is None:
        raise ApiError(400, "event_types is required")
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ApiError(400, "event_types must be a non-empty array of event names")
    unknown = sorted({v for v in value if v not in CATALOG})
    if unknown:
        raise ApiError(400, f"Unknown event type(s): {', '.join(unknown)}")
    if channel != "server":
        not_chat = sorted({v for v in value if v not in CHAT_EVENTS})
        if not_chat:
            raise ApiError(
                400,
                f"{channel.capitalize()} endpoints receive only {', '.join(sorted(CHAT_EVENTS))}; "
                f"not {', '.join(not_chat)}",
            )
    return list(dict.fromkeys(value))


async def check_filters(ctx: Context, value: Any) -> dict[str, list[str]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ApiError(400, "filters must be an object")
    unknown = sorted(k for k in value if k not in fanout.DIMENSION_COLUMNS)
    if unknown:
        raise ApiError(
            400,
            f"Unknown filter key(s): {', '.join(unknown)}. "
            f"Allowed: {', '.join(fanout.DIMENSION_COLUMNS)}",
        )
    cleaned: dict[str, list[str]] = {}
    for key, ids in value.items():
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ApiError(400, f"filters.{key} must be an array of ids")
        ids = list(dict.fromkeys(ids))
        if len(ids) > MAX_FILTER_IDS:
            raise ApiError(400, f"filters.{key} may have at most {MAX_FILTER_IDS} ids")
        if not ids:
            continue
        owner = _OWNERS.get(key)
        found: set[str] = set()
        if owner is not None:
            found = set(
                (
                    await ctx.session.scalars(
                        select(owner.id).where(
                            owner.workspace_id == ctx.workspace_id, owner.id.in_(ids)
                        )
                    )
                ).all()
            )
        missing = [i for i in ids if i not in found]
        if missing:
            raise ApiError(
                400,
                f"filters.{key} has ids that are not in this workspace: {', '.join(missing[:10])}",
            )
        cleaned[key] = ids
    return cleaned


def check_channel(value: Any, url: str) -> str:
    if value is None:
        return chat.detect_channel(url)
    if value not in CHANNELS:
        raise ApiError(400, f"channel must be one of {', '.join(CHANNELS)}")
    return str(value)


def _description(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ApiError(400, "description must be a string")
    if len(value) > MAX_DESCRIPTION:
        raise ApiError(400, f"description must be {MAX_DESCRIPTION} characters or fewer")
    return value.strip()


async def get_endpoint(ctx: Context, endpoint_id: str) -> WebhookEndpoint:
    endpoint: WebhookEndpoint | None = await ctx.session.scalar(
        select(WebhookEndpoint).where(
            WebhookEndpoint.id == endpoint_id, WebhookEndpoint.workspace_id == ctx.workspace_id
        )
    )
    if endpoint is None:
        raise ApiError(404, "Webhook not found")
    return endpoint


async def create_endpoint(
    ctx: Context, body: dict[str, Any], *, checked_url: str | None = None
) -> WebhookEndpoint:
    """`checked_url`: the URL as `check_url` passed it earlier (a blueprint's apply checks
    every URL before its transaction opens)."""
    url = checked_url or await check_url(ctx, body.get("url"))  # first: before any transaction
    channel = check_channel(body.get("channel"), url)
    event_types = check_event_types(body.get("event_types"), channel)
    filters = await check_filters(ctx, body.get("filters"))
    enabled = body.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ApiError(400, "enabled must be true or false")
    plan = ctx.principal.plan
    if plan.webhook_endpoints is not None:
        await _serialise_creates(ctx)
        count = await ctx.session.scalar(
            select(func.count()).where(WebhookEndpoint.workspace_id == ctx.workspace_id)
        )
        if int(count or 0) >= plan.webhook_endpoints:
            raise ApiError(
                403,
                f"Webhook endpoint limit reached ({plan.webhook_endpoints} on the {plan.label} "
                "plan). Upgrade to add more.",
            )
    now = utcnow()
    endpoint = WebhookEndpoint(
        workspace_id=ctx.workspace_id,
        url=url,
        description=_description(body.get("description")),
        channel=channel,
        event_types=event_types,
        filters=filters,
        enabled=enabled,
        secret=signing.new_secret(),
        created_at=now,
        updated_at=now,
    )
    ctx.session.add(endpoint)
    await ctx.session.flush()
    fanout.forget(ctx)
    return endpoint


async def _serialise_creates(ctx: Context) -> None:
    """One endpoint create at a time per workspace until commit, so the count below and the
    insert are one step: PostgreSQL takes an advisory lock (two READ COMMITTED transactions
    would both count N and both insert); SQLite's write transaction is already exclusive."""
    await serialise(ctx.session, f"webhook-endpoints:{ctx.workspace_id}")


async def update_endpoint(ctx: Context, endpoint_id: str, body: dict[str, Any]) -> WebhookEndpoint:
    # A new URL is resolved before the endpoint is read, so no transaction waits on DNS; its
    # verdict is given after the 404 check, as if it had been made in order.
    new_url: str | None = None
    url_refusal: ApiError | None = None
    if "url" in body:
        try:
            new_url = await check_url(ctx, body["url"])
        except ApiError as exc:
            url_refusal = exc
    endpoint = await get_endpoint(ctx, endpoint_id)
    if not body:
        raise ApiError(400, "No updatable fields provided")
    if url_refusal is not None:
        raise url_refusal
    if new_url is not None:
        endpoint.url = new_url
        if "channel" not in body:
            endpoint.channel = chat.detect_channel(endpoint.url)
    if "channel" in body:
        endpoint.channel = check_channel(body["channel"], endpoint.url)
    if "event_types" in body or "channel" in body or "url" in body:
        endpoint.event_types = check_event_types(
            body.get("event_types", endpoint.event_types), endpoint.channel
        )
    if "filters" in body:
        endpoint.filters = await check_filters(ctx, body["filters"])
    if "description" in body:
        endpoint.description = _description(body["description"])
    if "enabled" in body:
        enabled = body["enabled"]
        if not isinstance(enabled, bool):
            raise ApiError(400, "enabled must be true or false")
        if enabled and not endpoint.enabled:
            # Re-enabled: a fresh start; events missed meanwhile are not replayed.
            endpoint.consecutive_failures = 0
            endpoint.disabled_reason = None
            endpoint.disabled_at = None
        elif not enabled and endpoint.enabled:
            endpoint.disabled_at = utcnow()
            await abandon_pending(ctx, endpoint.id)
        endpoint.enabled = enabled
    endpoint.updated_at = utcnow()
    fanout.forget(ctx)
    return endpoint


async def abandon_pending(ctx: Context, endpoint_id: str) -> int:
    result = await ctx.session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.endpoint_id == endpoint_id, WebhookDelivery.status == "pending")
        .values(status="abandoned", locked_until=None, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)


async def delete_endpoint(ctx: Context, endpoint_id: str) -> None:
    endpoint = await get_endpoint(ctx, endpoint_id)
    await ctx.session.delete(endpoint)  # its delivery log goes with it (ON DELETE CASCADE)
    await ctx.session.flush()
    fanout.forget(ctx)


async def rotate_secret(ctx: Context, endpoint_id: str) -> WebhookEndpoint:
    endpoint = await get_endpoint(ctx, endpoint_id)
    endpoint.secret = signing.new_secret()  # read fresh by every attempt from now on
    endpoint.updated_at = utcnow()
    return endpoint


async def list_endpoints(ctx: Context) -> list[WebhookEndpoint]:
    rows = await ctx.session.scalars(
        select(WebhookEndpoint)
        .where(WebhookEndpoint.workspace_id == ctx.workspace_id)
        .order_by(WebhookEndpoint.created_at, WebhookEndpoint.id)
    )
    return list(rows.all())


def as_dict(endpoint: WebhookEndpoint, *, with_secret: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": endpoint.id,
        "url": endpoint.url,
        "description": endpoint.description,
        "channel": endpoint.channel,
        "event_types": endpoint.event_types,
        "enabled": endpoint.enabled,
        "filters": endpoint.filters or {},
        "created_at": endpoint.created_at,
        "updated_at": endpoint.updated_at,
        "health": {
            "consecutive_failures": endpoint.consecutive_failures,
            "last_success_at": endpoint.last_success_at,
            "last_failure_at": endpoint.last_failure_at,
            "disabled_reason": endpoint.disabled_reason,
            "disabled_at": endpoint.disabled_at,
        },
    }
    if with_secret:
        body["secret"] = endpoint.secret
    return body


async def list_deliveries(
    ctx: Context, endpoint_id: str, page: PageParams
) -> tuple[list[WebhookDelivery], int]:
    endpoint = await get_endpoint(ctx, endpoint_id)
    where = WebhookDelivery.endpoint_id == endpoint.id
    total = int(await ctx.session.scalar(select(func.count()).where(where)) or 0)
    rows = await ctx.session.scalars(
        select(WebhookDelivery)
        .where(where)
        .order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id.desc())
        .offset(page.offset)
        .limit(page.limit)
    )
    return list(rows.all()), total
