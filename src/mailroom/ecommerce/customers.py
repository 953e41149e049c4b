"""Customers are addresses with orders: never contacts, never subscribers by themselves.

An order or cart keeps the normalised address and its hash (the contacts' own HMAC), and
names the workspace's contact with that address as `contact_id` when there is one: looked up
when the order arrives (`contacts_by_hash`), and set for the orders and carts already stored
when a contact with the address appears later (`link`, called where contacts are created or
change address). Deleting a contact unlinks its orders and carts; erasing it also empties the
address on them (`forget`). Amounts stay, so revenue figures do not move.

A contact's purchase figures (`CustomerTotals`: total spent, number of orders, last order)
and what it bought (`CustomerProduct`) are rewritten from its orders by `refresh_purchases`
wherever its orders change: an order written or deleted, orders linked to it, a store
deleted. Its rows go with the contact (ON DELETE CASCADE).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, bindparam, delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.contacts.selection import Selection, execute
from mailroom.core.context import Context
from mailroom.db import AMONG, among, chunks, serialise
from mailroom.models import (
    PURCHASE_STATUSES,
    Cart,
    Contact,
    CustomerProduct,
    CustomerTotals,
    Order,
    OrderLine,
)

TABLES = ("ecommerce_orders", "ecommerce_carts")
TOTALS = cast(Table, CustomerTotals.__table__)
PRODUCTS = cast(Table, CustomerProduct.__table__)


async def contacts_by_hash(ctx: Context, hashes: set[str]) -> dict[str, str]:
    """{email_hash: contact id} of the workspace's contacts among `hashes` (one query)."""
    found: dict[str, str] = {}
    for chunk in chunks(ctx.session, sorted(hashes)):
        rows = await ctx.session.execute(
            select(Contact.email_hash, Contact.id).where(
                Contact.workspace_id == ctx.workspace_id, among(ctx.session, Contact.email_hash)
            ),
            {AMONG: chunk},
        )
        found.update({digest: contact_id for digest, contact_id in rows.all()})
    return found


async def link(ctx: Context, hashes: list[str]) -> int:
    """Name the contacts now holding these addresses on the orders and carts that carry them
    without a contact yet; returns the rows linked. One UPDATE ... FROM per table (per chunk
    of addresses on SQLite: an import links its thousands at once)."""
    if len(hashes) == 1 and not await _unlinked(ctx, hashes[0]):
        return 0  # the usual case (a signup, a new contact): one read instead of two UPDATEs
    linked = 0
    for model in (Order, Cart):
        for chunk in chunks(ctx.session, hashes):
            # One address (a contact created or renamed) as a plain equality: the index on
            # (workspace_id, email_hash) serves it whatever the planner's statistics say.
            one = len(chunk) == 1
            result: Any = await ctx.session.execute(
                update(model)
                .where(
                    model.workspace_id == ctx.workspace_id,
                    model.contact_id.is_(None),
                    model.email_hash == chunk[0] if one else among(ctx.session, model.email_hash),
                    Contact.workspace_id == ctx.workspace_id,
                    Contact.email_hash == model.email_hash,
                )
                .values(contact_id=Contact.id)
                .execution_options(synchronize_session=False),
                {} if one else {AMONG: chunk},
            )
            count = int(getattr(result, "rowcount", 0) or 0)
            linked += count
            if model is Order and count:
                found = await contacts_by_hash(ctx, set(chunk))
                await refresh_purchases(ctx, found.values())
    return linked


def _unlinked_statement() -> Any:
    """Built once (it runs for every contact created)."""

    def waiting(model: type[Order] | type[Cart]) -> Any:
        return (
            select(model.id)
            .where(
                model.workspace_id == bindparam("ws"),
                model.email_hash == bindparam("digest"),
                model.contact_id.is_(None),
            )
            .exists()
        )

    return select(waiting(Order) | waiting(Cart))


_UNLINKED = _unlinked_statement()


async def _unlinked(ctx: Context, digest: str) -> bool:
    """Whether an order or a cart of the workspace carries this address with no contact."""
    found = await ctx.session.scalar(_UNLINKED, {"ws": ctx.workspace_id, "digest": digest})
    return bool(found)


async def refresh_purchases(ctx: Context, contact_ids: Iterable[str | None]) -> None:
    """Rewrite these contacts' purchase figures (`CustomerTotals`) and bought products
    (`CustomerProduct`) from their orders as this transaction sees them: delete their rows,
    then insert them again, grouped, from their purchases.

    One writer per workspace at a time (until commit), taken before reading the orders: on
    PostgreSQL two stores' transactions adding orders for one contact would each add up
    only their own (READ COMMITTED), and the later commit would win. After the lock, the
    statements see every earlier writer's committed orders. Lock order: a store's
    `ecommerce-store:` lock (taken first by order upserts) before this one."""
    wanted = sorted({contact_id for contact_id in contact_ids if contact_id})
    if not wanted:
        return
    await serialise(ctx.session, f"ecommerce-totals:{ctx.workspace_id}")
    for chunk in chunks(ctx.session, wanted):
        # Core statements: the ORM would read `{AMONG: ...}` as rows to write.
        for table in (TOTALS, PRODUCTS):
            await ctx.session.execute(
                delete(table).where(
                    table.c.workspace_id == ctx.workspace_id,
                    among(ctx.session, table.c.contact_id),
                ),
                {AMONG: chunk},
            )
        for statement in _purchases(ctx.workspace_id, among(ctx.session, Order.contact_id)):
            await ctx.session.execute(statement, {AMONG: chunk})


def _purchases(workspace_id: str, *which: ColumnElement[bool]) -> list[Any]:
    """The INSERTs of the figures row and the bought products of each contact of the
    workspace with purchases (among `which`)."""
    purchases = [
        Order.workspace_id == workspace_id,
        Order.contact_id.is_not(None),
        Order.status.in_(PURCHASE_STATUSES),
        *which,
    ]
    figures = (
        select(
            Order.contact_id,
            Order.workspace_id,
            func.sum(Order.total),
            func.count(),
            func.max(Order.placed_at),
        )
        .where(*purchases)
        .group_by(Order.contact_id, Order.workspace_id)
    )
    bought = (
        select(
            Order.contact_id,
            OrderLine.store_id,
            OrderLine.product_id,
            Order.workspace_id,
            func.max(Order.placed_at),
        )
        .join(OrderLine, OrderLine.order_id == Order.id)
        .where(*purchases)
        .group_by(Order.contact_id, OrderLine.store_id, OrderLine.product_id, Order.workspace_id)
    )
    return [
        insert(TOTALS).from_select(
            ["contact_id", "workspace_id", "total_spent", "orders_count", "last_order_at"],
            figures,
        ),
        insert(PRODUCTS).from_select(
            ["contact_id", "store_id", "product_id", "workspace_id", "last_purchased_at"],
            bought,
        ),
    ]


async def rebuild_purchases(session: AsyncSession, workspace_id: str) -> None:
    """Every contact's purchase figures and bought products in the workspace, from its
    orders (after a bulk load of orders, as the benchmarks make)."""
    for table in (TOTALS, PRODUCTS):
        await session.execute(delete(table).where(table.c.workspace_id == workspace_id))
    for statement in _purchases(workspace_id):
        await session.execute(statement)


async def contacts_of_store(ctx: Context, store_id: str) -> list[str]:
    """The contacts with orders in the store (whose figures its deletion changes)."""
    rows = await ctx.session.scalars(
        select(Order.contact_id)
        .where(Order.store_id == store_id, Order.contact_id.is_not(None))
        .distinct()
    )
    return [contact_id for contact_id in rows if contact_id]


async def forget(ctx: Context, selection: Selection, *, erase: bool) -> None:
    """The selected contacts are being deleted (or erased): their orders and carts name no
    contact any more; erased, they keep no address either (found by contact or by the
    address's hash, so an order that was never linked loses it too). Run before the contact
    rows go, in the same transaction."""
    chosen = "(SELECT contact_id FROM bulk_selection WHERE run_id = :run)"
    for table in TABLES:
        if erase:
            await execute(
                ctx,
                f"UPDATE {table} SET contact_id = NULL, email = NULL, email_hash = NULL "
                f"WHERE workspace_id = :ws AND (contact_id IN {chosen} OR email_hash IN "
                f"(SELECT email_hash FROM contacts WHERE workspace_id = :ws AND id IN {chosen}))",
                run=selection.run_id,
            )
        else:
            await execute(
                ctx,
                f"UPDATE {table} SET contact_id = NULL "
                f"WHERE workspace_id = :ws AND contact_id IN {chosen}",
                run=selection.run_id,
            )
