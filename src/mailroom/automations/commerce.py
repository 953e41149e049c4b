"""The e-commerce triggers, `order_placed` and `cart_abandoned`, and what their runs' emails see.

Enrolment happens in the transaction that writes what triggers it: `orders_placed` right after
`ecommerce.orders.upsert_many` wrote the orders (the new ones only, so an upsert repeated
enrols nobody), `carts_abandoned` where `ecommerce.abandon.mark_due` marks carts abandoned
(once per cart). Only an order or cart whose address is a subscribed contact's enrols, under
the usual rules: one live run per contact and automation, and again only with re-entry.
`first_order_only`: the contact had no earlier order in that store (any status). An order
placed more than a week before it arrives (history), or arriving cancelled or refunded,
enrols nobody.

A run keeps what it is about in `context` ({store_id, order_id} or {store_id, cart_id}, the
internal ids). Its email steps read that order or cart when they queue the email, so the
email shows current data, as the template variables `order` / `cart` (also `vars.order` / `vars.cart`); a cart
converted (or deleted) by then ends the run `exited` instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Table, and_, exists, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from mailroom.automations import enrol
from mailroom.automations.steps import walk
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.ids import new_id
from mailroom.db import AMONG, among, chunks, insert_ignoring_conflicts
from mailroom.ecommerce.values import cents_text
from mailroom.models import Automation, AutomationRun, Cart, Contact, Order, Product, Store

if TYPE_CHECKING:
    from mailroom.ecommerce.abandon import Abandoned
    from mailroom.ecommerce.orders import StoredOrder

RUNS = cast(Table, AutomationRun.__table__)
# An order placed this long before it arrives is history (a shop sending its past orders, or
# a platform's retries long given up): it counts for segments, revenue and first_order_only,
# and mails no one. Shopify retries a failed delivery for 48 hours; a week covers any retry.
HISTORY = timedelta(days=7)
# What is no purchase to thank anyone for.
NOT_BOUGHT = ("cancelled", "refunded")
Start = tuple[str, dict[str, str]]  # (a contact id, the context of its run)


async def orders_placed(ctx: Context, store: Store, orders: Sequence[StoredOrder]) -> None:
    """`orders` were just created in `store`: enrol their contacts in the store's active
    `order_placed` automations."""
    automations = await enrol.active(ctx, "order_placed", store_id=store.id)
    recent = utcnow() - HISTORY
    bought = [
        o for o in orders if o.contact_id and o.placed_at >= recent and o.status not in NOT_BOUGHT
    ]
    if not automations or not bought:
        return
    firsts: set[str] = set()
    if any(a.trigger.get("first_order_only") for a in automations):
        firsts = await _first_orders(ctx.session, ctx.workspace_id, [o.id for o in bought])
    for automation in automations:
        only_first = bool(automation.trigger.get("first_order_only"))
        starts = [
            (str(o.contact_id), {"store_id": store.id, "order_id": o.id})
            for o in bought
            if not only_first or o.id in firsts
        ]
        await _start(ctx.session, ctx.workspace_id, automation, starts)


async def _first_orders(session: AsyncSession, workspace_id: str, order_ids: list[str]) -> set[str]:
    """Those of the orders whose contact had no earlier order in the same store (an order
    placed at the same moment counts as earlier when it was stored before)."""
    earlier = aliased(Order)
    before = exists().where(
        earlier.workspace_id == workspace_id,
        earlier.contact_id == Order.contact_id,
        earlier.store_id == Order.store_id,
        earlier.id != Order.id,
        or_(
            earlier.placed_at < Order.placed_at,
            and_(earlier.placed_at == Order.placed_at, earlier.created_at < Order.created_at),
        ),
    )
    found: set[str] = set()
    for chunk in chunks(session, order_ids):
        rows = await session.scalars(
            select(Order.id).where(
                Order.workspace_id == workspace_id, among(session, Order.id), ~before
            ),
            {AMONG: chunk},
        )
        found.update(rows.all())
    return found


async def carts_abandoned(session: AsyncSession, abandoned: Sequence[Abandoned]) -> None:
    """`abandoned` carts (of any workspace) were just marked abandoned: enrol their contacts in
    their store's active `cart_abandoned` automations."""
    if not abandoned:
        return
    automations: list[Automation] = []
    for chunk in chunks(session, sorted({a.workspace_id for a in abandoned})):
        rows = await session.scalars(
            select(Automation).where(
                among(session, Automation.workspace_id),
                Automation.status == "active",
                Automation.trigger_type == "cart_abandoned",
            ),
            {AMONG: chunk},
        )
        automations.extend(a for a in rows.all() if a.steps)
    stores = {a.trigger.get("store_id") for a in automations}
    carts = [a for a in abandoned if a.store_id in stores]
    owners: dict[str, str] = {}
    for chunk in chunks(session, [c.cart_id for c in carts]):
        pairs = await session.execute(
            select(Cart.id, Cart.contact_id).where(
                among(session, Cart.id), Cart.contact_id.is_not(None)
            ),
            {AMONG: chunk},
        )
        owners.update({cart_id: str(contact_id) for cart_id, contact_id in pairs.all()})
    for automation in automations:
        starts = [
            (owners[c.cart_id], {"store_id": c.store_id, "cart_id": c.cart_id})
            for c in carts
            if c.cart_id in owners
            and c.workspace_id == automation.workspace_id
            and c.store_id == automation.trigger.get("store_id")
        ]
        await _start(session, automation.workspace_id, automation, starts)


async def _start(
    session: AsyncSession, workspace_id: str, automation: Automation, starts: list[Start]
) -> None:
    """A run for each contact that may enter (`enrol.start`'s rules), with its context; a
    contact named twice enters once, for the first."""
    wanted: dict[str, dict[str, str]] = {}
    for contact_id, context in starts:
        wanted.setdefault(contact_id, context)
    if not wanted:
        return
    mine = AutomationRun.automation_id == automation.id
    if automation.allow_reentry:
        been = exists().where(
            mine, AutomationRun.contact_id == Contact.id, AutomationRun.status == "pending"
        )
    else:
        been = exists().where(mine, AutomationRun.contact_id == Contact.id)
    allowed: list[str] = []
    for chunk in chunks(session, sorted(wanted)):
        rows = await session.scalars(
            select(Contact.id).where(
                Contact.workspace_id == workspace_id,
                Contact.status == "subscribed",
                among(session, Contact.id),
                ~been,
            ),
            {AMONG: chunk},
        )
        allowed.extend(rows.all())
    if not allowed:
        return
    first, _places = walk(automation.steps)
    now = utcnow()
    # ON CONFLICT DO NOTHING: the live-run index settles two enrolments racing.
    await session.execute(
        insert_ignoring_conflicts(session, RUNS),
        [
            {
                "id": new_id(),
                "workspace_id": workspace_id,
                "automation_id": automation.id,
                "contact_id": contact_id,
                "state": "active",
                "step_id": first,
                "waiting": False,
                "history": [],
                "context": wanted[contact_id],
                "status": "pending",
                "run_at": now,
                "created_at": now,
                "updated_at": now,
            }
            for contact_id in allowed
        ],
    )


# ---------------------------------------------------------------- what an email sees


async def email_data(
    ctx: Context, context: dict[str, Any] | None
) -> tuple[dict[str, Any], str | None]:
    """(the template variables of a run's email, why the run ends instead or None): its
    order or cart as stored now."""
    if not context:
        return {}, None
    if context.get("cart_id"):
        cart = await ctx.session.scalar(
            select(Cart).where(Cart.id == context["cart_id"], Cart.workspace_id == ctx.workspace_id)
        )
        if cart is None:
            return {}, "cart deleted before the email"
        if cart.status == "converted":
            return {}, "cart converted before the email"
        shown = {
            "external_id": cart.external_id,
            "total": cents_text(cart.total),
            "currency": cart.currency,
            "checkout_url": cart.checkout_url,
            "lines": await _lines(ctx, cart.store_id, cart.lines),
        }
        return {"cart": shown}, None
    if context.get("order_id"):
        order = await ctx.session.scalar(
            select(Order).where(
                Order.id == context["order_id"], Order.workspace_id == ctx.workspace_id
            )
        )
        if order is None:
            return {}, "order deleted before the email"
        shown = {
            "external_id": order.external_id,
            "status": order.status,
            "total": cents_text(order.total),
            "currency": order.currency,
            "placed_at": order.placed_at.isoformat().replace("+00:00", "Z"),
            "lines": await _lines(ctx, order.store_id, order.lines),
        }
        return {"order": shown}, None
    return {}, None


async def _lines(ctx: Context, store_id: str, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored lines with their product's title, link and image (None when the store has no
    such product)."""
    products: dict[str, Any] = {}
    for chunk in chunks(ctx.session, sorted({str(line["product_id"]) for line in lines})):
        rows = await ctx.session.execute(
            select(Product.external_id, Product.title, Product.url, Product.image_url).where(
                Product.workspace_id == ctx.workspace_id,
                Product.store_id == store_id,
                among(ctx.session, Product.external_id),
            ),
            {AMONG: chunk},
        )
        products.update({row.external_id: row for row in rows.all()})
    shown = []
    for line in lines:
        product = products.get(line["product_id"])
        shown.append(
            {
                "product_id": line["product_id"],
                "title": product.title if product else None,
                "url": product.url if product else None,
                "image_url": product.image_url if product else None,
                "quantity": line["quantity"],
                "price": cents_text(int(line["price"])),
            }
        )
    return shown
