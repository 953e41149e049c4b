"""Orders, upserted by the shop's own id, one at a time (`PUT`) or up to 500 at once (`batch`),
both through `upsert_many`: a few statements whatever the number of orders and lines.

Idempotent: an upsert that says what is stored changes nothing (no write, no new
`updated_at`), and its result says `changed: False`. A new order (`created`) is attributed
to the email its buyer clicked last (decided once, here) and starts `order_placed`
automations; a changed one may have changed status (cancelled and refunded orders leave
revenue figures). A field left out keeps what is stored (on a new order, its default:
status `placed`, the store's currency, `placed_at` now, no lines, no address, no cart).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, Text, bindparam, delete, func, insert, select, true, update
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects.postgresql import ARRAY

from mailroom.automations import commerce as automations_commerce
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.ids import new_id
from mailroom.core.pagination import PageParams
from mailroom.db import AMONG, among, bulk_insert, chunks
from mailroom.ecommerce import attribution, customers, values
from mailroom.ecommerce.service import buyer_conditions, lock, paged
from mailroom.models import ORDER_STATUSES, Cart, Order, OrderLine, Store

MAX_BATCH = 500
COPY_FROM = 50  # rows
TOO_MANY = f"orders may have at most {MAX_BATCH} items"
NOT_FOUND = "Order not found"
# The tables themselves: many-row statements run as Core (executemany), not per ORM object.
ORDERS = cast(Table, Order.__table__)
LINES = cast(Table, OrderLine.__table__)
CARTS = cast(Table, Cart.__table__)


class Keep(enum.Enum):
    """A field the request left out: the stored value stays (or the default applies)."""

    KEEP = "keep"


KEEP = Keep.KEEP


@dataclass(frozen=True)
class OrderIn:
    """An order as a shop sends it, checked. Platforms build these from their payloads."""

    external_id: str
    total: int  # cents
    email: str | Keep | None = KEEP
    status: str | Keep = KEEP
    currency: str | Keep = KEEP
    placed_at: datetime | Keep = KEEP
    lines: tuple[values.Line, ...] | Keep = KEEP
    cart_id: str | Keep | None = KEEP
    # The platform's own last-change time: an upsert older than the stored one is skipped.
    source_updated_at: datetime | None = None


@dataclass
class StoredOrder:
    """An order as stored (the columns the answer and the comparison need)."""

    id: str
    store_id: str
    external_id: str
    email: str | None
    email_hash: str | None
    contact_id: str | None
    status: str
    total: int
    currency: str
    placed_at: datetime
    lines: list[dict[str, Any]] = field(default_factory=list)
    cart_id: str | None = None
    source_updated_at: datetime | None = None
    attributed_type: str | None = None
    attributed_id: str | None = None


@dataclass(frozen=True)
class Upserted:
    order: StoredOrder
    created: bool
    changed: bool


COMPARED = ("email", "status", "total", "currency", "placed_at", "lines", "cart_id")


def clean(body: dict[str, Any], external_id: str) -> OrderIn:
    """A request body as an `OrderIn` (400 with the field's message for a wrong value)."""
    status: str | Keep = KEEP
    if "status" in body:
        if body["status"] not in ORDER_STATUSES:
            raise ApiError(400, f"status must be one of {', '.join(ORDER_STATUSES)}")
        status = str(body["status"])
    cart_id: str | Keep | None = KEEP
    if "cart_id" in body:
        cart_id = (
            None if body["cart_id"] is None else values.external_id(body["cart_id"], "cart_id")
        )
    return OrderIn(
        external_id=external_id,
        total=values.money(body.get("total"), "total") or 0,
        email=values.email(body["email"]) if "email" in body else KEEP,
        status=status,
        currency=values.currency(body["currency"]) if body.get("currency") is not None else KEEP,
        placed_at=(
            values.moment(body["placed_at"], "placed_at")
            if body.get("placed_at") is not None
            else KEEP
        ),
        lines=values.lines(body["lines"]) if body.get("lines") is not None else KEEP,
        cart_id=cart_id,
    )


def clean_batch(value: Any) -> list[OrderIn]:
    """A batch body's `orders`, each checked as a PUT body is (plus its `external_id`). A
    refusal names the order by `index` (from 0) and, when it has one, `external_id`."""
    if value is None:
        raise ApiError(400, "orders is required")
    if not isinstance(value, list):
        raise ApiError(400, "orders must be an array of orders")
    if len(value) > MAX_BATCH:
        raise ApiError(400, TOO_MANY)
    items = []
    for index, raw in enumerate(value):
        named = raw.get("external_id") if isinstance(raw, dict) else None
        extras: dict[str, Any] = {"external_id": named} if isinstance(named, str) else {}
        try:
            if not isinstance(raw, dict):
                raise ApiError(400, "each order must be an object")
            items.append(clean(raw, values.external_id(named)))
        except ApiError as problem:
            raise ApiError(400, problem.message, index=index, **extras) from None
    return items


def check_currency(store: Store, item: OrderIn) -> None:
    if not isinstance(item.currency, Keep) and item.currency != store.currency:
        raise ApiError(400, f"currency must be {store.currency}")


def _merge(first: OrderIn, later: OrderIn) -> OrderIn:
    """Two upserts of one order in one batch: the later one's fields win."""
    given = {
        name: getattr(later, name)
        for name in ("email", "status", "currency", "placed_at", "lines", "cart_id")
        if not isinstance(getattr(later, name), Keep)
    }
    return replace(first, total=later.total, source_updated_at=later.source_updated_at, **given)


async def _stored(ctx: Context, store: Store, external_ids: list[str]) -> dict[str, StoredOrder]:
    """The stored orders among `external_ids`, one query (per 900 ids on SQLite)."""
    table = ORDERS.c
    columns = [getattr(table, name) for name in StoredOrder.__dataclass_fields__]
    found: dict[str, StoredOrder] = {}
    for chunk in chunks(ctx.session, external_ids):
        if ctx.dialect == "postgresql":
            # One probe of the unique (store_id, external_id) index per id. A plain IN lets
            # the planner scan the store's orders instead whenever its statistics still
            # think the store small: right after a burst of new orders, 100 ms and growing
            # per batch instead of 3.
            wanted = (
                func.unnest(sql_cast(bindparam(AMONG, type_=ARRAY(Text)), ARRAY(Text)))
                .table_valued("ext")
                .render_derived(name="wanted")
            )
            one = (
                select(*columns)
                .where(table.store_id == store.id, table.external_id == wanted.c.ext)
                .lateral("stored")
            )
            query = select(one).select_from(wanted).join(one, true())
        else:
            query = select(*columns).where(
                table.store_id == store.id, among(ctx.session, table.external_id)
            )
        rows = await ctx.session.execute(query, {AMONG: chunk})
        for row in rows.all():
            found[row.external_id] = StoredOrder(**row._mapping)
    return found


def _fresh(store: Store, item: OrderIn, now: datetime) -> StoredOrder:
    return StoredOrder(
        id=new_id(),
        store_id=store.id,
        external_id=item.external_id,
        email=None,
        email_hash=None,
        contact_id=None,
        status="placed",
        total=item.total,
        currency=store.currency,
        placed_at=now,
    )


def _apply(item: OrderIn, base: StoredOrder) -> StoredOrder:
    merged = replace(base, total=item.total, lines=list(base.lines))
    for name in ("email", "status", "currency", "placed_at", "cart_id"):
        value = getattr(item, name)
        if not isinstance(value, Keep):
            setattr(merged, name, value)
    if not isinstance(item.lines, Keep):
        merged.lines = [line.as_stored() for line in item.lines]
    if item.source_updated_at is not None:
        merged.source_updated_at = item.source_updated_at
    return merged


async def upsert_many(ctx: Context, store: Store, items: list[OrderIn]) -> list[Upserted]:
    """Create or update each order (the first of several with one id, merged with the rest);
    returns one result per order id, in the order first given. All or nothing: the caller's
    unit of work commits them together."""
    for index, item in enumerate(items):
        try:
            check_currency(store, item)
        except ApiError as problem:
            raise ApiError(
                400, problem.message, index=index, external_id=item.external_id
            ) from None
    wanted: dict[str, OrderIn] = {}
    for item in items:
        earlier = wanted.get(item.external_id)
        wanted[item.external_id] = item if earlier is None else _merge(earlier, item)
    await lock(ctx, store)
    stored = await _stored(ctx, store, list(wanted))
    now = utcnow()
    results: list[Upserted] = []
    relined: set[str] = set()
    for item in wanted.values():
        before = stored.get(item.external_id)
        if before is None:
            results.append(Upserted(_apply(item, _fresh(store, item, now)), True, True))
            continue
        stale = (
            item.source_updated_at is not None
            and before.source_updated_at is not None
            and item.source_updated_at < before.source_updated_at
        )
        after = _apply(item, before)
        same = all(getattr(after, name) == getattr(before, name) for name in COMPARED)
        if stale or same:
            results.append(Upserted(before, False, False))
        else:
            results.append(Upserted(after, False, True))
            if after.lines != before.lines:
                relined.add(after.id)
    await _resolve_contacts(ctx, results, stored)
    await attribution.attribute(ctx, store, [r.order for r in results if r.created])
    await _write(ctx, store, results, relined, now)
    touched = [r.order.contact_id for r in results if r.changed]
    touched += [
        stored[r.order.external_id].contact_id for r in results if r.changed and not r.created
    ]
    await customers.refresh_purchases(ctx, touched)
    await automations_commerce.orders_placed(ctx, store, [r.order for r in results if r.created])
    return results


async def upsert(ctx: Context, store: Store, item: OrderIn) -> Upserted:
    """One order: `upsert_many` of one."""
    check_currency(store, item)  # its refusal names no batch index
    return (await upsert_many(ctx, store, [item]))[0]


async def _resolve_contacts(
    ctx: Context, results: list[Upserted], stored: dict[str, StoredOrder]
) -> None:
    """A new address is hashed and names its contact, if the workspace has one."""
    moved = []
    for result in results:
        if not result.changed:
            continue
        before = stored.get(result.order.external_id)
        if before is None or before.email != result.order.email:
            order = result.order
            order.email_hash = ctx.hash_email(order.email) if order.email else None
            order.contact_id = None
            moved.append(order)
    hashes = {o.email_hash for o in moved if o.email_hash}
    contacts = await customers.contacts_by_hash(ctx, hashes) if hashes else {}
    for order in moved:
        order.contact_id = contacts.get(order.email_hash) if order.email_hash else None


def _row(order: StoredOrder) -> dict[str, Any]:
    return {name: getattr(order, name) for name in StoredOrder.__dataclass_fields__}


async def _write(
    ctx: Context, store: Store, results: list[Upserted], relined: set[str], now: datetime
) -> None:
    """Insert the new orders, update the changed ones, mirror their lines (`relined`: the
    updated orders whose lines changed) and convert the carts they name."""
    table = ORDERS
    created = [r.order for r in results if r.created]
    updated = [r.order for r in results if r.changed and not r.created]
    await _insert(
        ctx,
        Order,
        [
            {**_row(o), "workspace_id": ctx.workspace_id, "created_at": now, "updated_at": now}
            for o in created
        ],
    )
    if updated:
        await ctx.session.execute(
            update(table).where(table.c.id == bindparam("order_id")),
            [
                {**{k: v for k, v in _row(o).items() if k != "id"}, "order_id": o.id}
                | {"updated_at": now}
                for o in updated
            ],
        )
    await _write_lines(ctx, store, created, [o for o in updated if o.id in relined])
    converting = [o for o in created + updated if o.cart_id]
    if converting:
        carts = CARTS
        await ctx.session.execute(
            update(carts)
            .where(
                carts.c.store_id == store.id,
                carts.c.external_id == bindparam("cart"),
                carts.c.status != "converted",
            )
            .values(status="converted", converted_at=now, order_id=bindparam("order")),
            [{"cart": o.cart_id, "order": o.external_id} for o in converting],
        )


async def _write_lines(
    ctx: Context, store: Store, created: list[StoredOrder], updated: list[StoredOrder]
) -> None:
    """The lines table mirrors each written order's lines: replaced whole when they change."""
    lines = LINES
    replaced = [o.id for o in updated]
    for chunk in chunks(ctx.session, replaced):
        await ctx.session.execute(
            delete(lines).where(among(ctx.session, lines.c.order_id)), {AMONG: chunk}
        )
    rows = [
        {
            "order_id": order.id,
            "position": position,
            "workspace_id": ctx.workspace_id,
            "store_id": store.id,
            **line,
        }
        for order in created + updated
        for position, line in enumerate(order.lines)
    ]
    await _insert(ctx, OrderLine, rows)


async def _insert(ctx: Context, model: Any, rows: list[dict[str, Any]]) -> None:
    """Many rows by COPY on PostgreSQL (executemany on SQLite); a few by one INSERT, which
    costs PostgreSQL fewer round trips than a COPY."""
    if len(rows) >= COPY_FROM:
        await bulk_insert(ctx.session, model, rows)
    elif rows:
        await ctx.session.execute(insert(model.__table__), rows)


async def get(ctx: Context, store: Store, external_id: str) -> Order:
    order: Order | None = await ctx.session.scalar(
        select(Order).where(Order.store_id == store.id, Order.external_id == external_id)
    )
    if order is None:
        raise ApiError(404, NOT_FOUND)
    return order


async def remove(ctx: Context, store: Store, external_id: str) -> Order:
    order = await get(ctx, store, external_id)
    await ctx.session.execute(delete(Order).where(Order.id == order.id))  # its lines cascade
    await customers.refresh_purchases(ctx, [order.contact_id])
    return order


async def page(
    ctx: Context,
    store: Store,
    params: PageParams,
    *,
    email: str | None = None,
    contact_id: str | None = None,
) -> tuple[list[Order], int]:
    """Newest placed first; `email` (any case) and `contact_id` narrow it."""
    conditions = buyer_conditions(ctx, Order, store, email, contact_id)
    order_by = (Order.placed_at.desc(), Order.id.desc())
    return await paged(ctx, Order, conditions, order_by, params)


def as_dict(order: Order | StoredOrder) -> dict[str, Any]:
    return {
        "id": order.id,
        "external_id": order.external_id,
        "store_id": order.store_id,
        "email": order.email,
        "contact_id": order.contact_id,
        "status": order.status,
        "total": values.cents_text(order.total),
        "currency": order.currency,
        "placed_at": order.placed_at,
        "lines": values.stored_lines(order.lines),
        "attributed_to": (
            {"type": order.attributed_type, "id": order.attributed_id}
            if order.attributed_type and order.attributed_id
            else None
        ),
    }
