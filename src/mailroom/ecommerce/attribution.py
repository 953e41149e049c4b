"""Revenue attribution: an order placed by a contact within the store's `attribution_days`
after they clicked a link in a campaign or automation email belongs to the last such email
clicked. Decided once, when the order is created (a later status change keeps it; a cancelled
or refunded order simply leaves the figures, which count only the other statuses).

Clicks are people's clicks only (`automated` hits, scanners and prefetchers, never count),
read from the tracking hits of the contact's own campaign and automation messages.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Table, func, select

from mailroom.core.context import Context
from mailroom.db import AMONG, among, chunks
from mailroom.ecommerce import values
from mailroom.models import PURCHASE_STATUSES, Order, SendLog, Store, TrackingHit

if TYPE_CHECKING:
    from mailroom.ecommerce.orders import StoredOrder

ATTRIBUTED_KINDS = ("campaign", "automation")
# What revenue counts: an order that was cancelled or refunded leaves the figures.
COUNTED = PURCHASE_STATUSES


@dataclass(frozen=True)
class Click:
    contact_id: str
    at: datetime
    kind: str  # campaign | automation
    owner_id: str


async def attribute(ctx: Context, store: Store, orders: list[StoredOrder]) -> None:
    """Set `attributed_type` / `attributed_id` on new orders of contacts who clicked an email
    within the window before placing them. One query for the whole batch."""
    placed = [o for o in orders if o.contact_id]
    if not placed:
        return
    window = timedelta(days=store.attribution_days)
    low = min(o.placed_at for o in placed) - window
    high = max(o.placed_at for o in placed)
    clicks = await _clicks(ctx, {o.contact_id for o in placed if o.contact_id}, low, high)
    for order in placed:
        start = order.placed_at - window
        last = None
        for click in clicks.get(order.contact_id or "", ()):
            if start <= click.at <= order.placed_at and (last is None or click.at > last.at):
                last = click
        if last is not None:
            order.attributed_type, order.attributed_id = last.kind, last.owner_id


async def _clicks(
    ctx: Context, contact_ids: set[str], low: datetime, high: datetime
) -> dict[str, list[Click]]:
    logs, hits = cast(Table, SendLog.__table__), cast(Table, TrackingHit.__table__)
    log, hit = logs.c, hits.c
    found: dict[str, list[Click]] = defaultdict(list)
    for chunk in chunks(ctx.session, sorted(contact_ids)):
        rows = await ctx.session.execute(
            select(log.contact_id, log.kind, log.campaign_id, log.payload, hit.created_at)
            .select_from(logs.join(hits, hit.send_log_id == log.id))
            .where(
                log.workspace_id == ctx.workspace_id,
                among(ctx.session, log.contact_id),
                log.kind.in_(ATTRIBUTED_KINDS),
                log.first_clicked_at.is_not(None),
                hit.kind == "click",
                hit.automated.is_(False),
                hit.created_at >= low,
                hit.created_at <= high,
            ),
            {AMONG: chunk},
        )
        for contact_id, kind, campaign_id, payload, at in rows.all():
            owner = campaign_id if kind == "campaign" else (payload or {}).get("automation_id")
            if owner:
                found[contact_id].append(Click(contact_id, at, kind, str(owner)))
    return found


def _figures(orders: int, cents: int, currency: str | None) -> dict[str, Any]:
    return {"orders": orders, "total": values.cents_text(cents), "currency": currency}


async def revenue_of(ctx: Context, kind: str, ids: list[str]) -> dict[str, dict[str, Any]]:
    """`{id: {orders, total, currency}}` for campaigns or automations (`kind`), every id
    answered (zeros when nothing was bought). One grouped query over the attribution index.
    A workspace whose stores sell in several currencies gets each email's figures in the
    currency most of its orders used, and `by_currency` listing them all."""
    sums: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for chunk in chunks(ctx.session, sorted(set(ids))):
        rows = await ctx.session.execute(
            select(Order.attributed_id, Order.currency, func.count(), func.sum(Order.total))
            .where(
                Order.workspace_id == ctx.workspace_id,
                among(ctx.session, Order.attributed_id),
                Order.attributed_type == kind,
                Order.status.in_(COUNTED),
            )
            .group_by(Order.attributed_id, Order.currency),
            {AMONG: chunk},
        )
        for owner, currency, count, total in rows.all():
            sums[str(owner)].append((currency, int(count), int(total or 0)))
    return await _per_owner(ctx, ids, sums)


async def revenue_by_variant(
    ctx: Context, campaign_id: str, variant_ids: list[str]
) -> dict[str, dict[str, Any]]:
    """A campaign's attributed revenue per A/B variant, as `revenue_of` answers: an order
    belongs to the variant its buyer was sent (each recipient gets one variant, or the
    winner). One grouped query over the campaign's orders and send log."""
    sums: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    rows = await ctx.session.execute(
        select(SendLog.variant_id, Order.currency, func.count(), func.sum(Order.total))
        .select_from(Order)
        .join(
            SendLog,
            (SendLog.workspace_id == Order.workspace_id)
            & (SendLog.campaign_id == Order.attributed_id)
            & (SendLog.contact_id == Order.contact_id),
        )
        .where(
            Order.workspace_id == ctx.workspace_id,
            Order.attributed_type == "campaign",
            Order.attributed_id == campaign_id,
            Order.status.in_(COUNTED),
            SendLog.variant_id.is_not(None),
        )
        .group_by(SendLog.variant_id, Order.currency)
    )
    for variant, currency, count, total in rows.all():
        sums[str(variant)].append((currency, int(count), int(total or 0)))
    return await _per_owner(ctx, variant_ids, sums)


async def _per_owner(
    ctx: Context, ids: list[str], sums: dict[str, list[tuple[str, int, int]]]
) -> dict[str, dict[str, Any]]:
    default = await default_currency(ctx) if len(sums) < len(set(ids)) else None
    out = {}
    for owner in ids:
        found = sorted(sums.get(owner, []), key=lambda row: (-row[1], row[0]))
        if not found:
            out[owner] = _figures(0, 0, default)
            continue
        currency, count, total = found[0]
        figures = _figures(count, total, currency)
        if len(found) > 1:
            figures["by_currency"] = [_figures(n, cents, c) for c, n, cents in found]
        out[owner] = figures
    return out


async def default_currency(ctx: Context) -> str | None:
    """The currency zero revenue is shown in: the workspace's first store's (None: no store)."""
    currency: str | None = await ctx.session.scalar(
        select(Store.currency)
        .where(Store.workspace_id == ctx.workspace_id)
        .order_by(Store.created_at, Store.id)
        .limit(1)
    )
    return currency


async def since(ctx: Context, moment: datetime) -> dict[str, Any]:
    """Revenue attributed to any email, of orders placed since `moment` (the overview)."""
    rows = await ctx.session.execute(
        select(Order.currency, func.count(), func.sum(Order.total))
        .where(
            Order.workspace_id == ctx.workspace_id,
            Order.attributed_id.is_not(None),
            Order.status.in_(COUNTED),
            Order.placed_at >= moment,
        )
        .group_by(Order.currency)
        .order_by(func.count().desc(), Order.currency)
    )
    found = [(c, int(n), int(t or 0)) for c, n, t in rows.all()]
    if not found:
        return _figures(0, 0, await default_currency(ctx))
    currency, count, total = found[0]
    return _figures(count, total, currency)
