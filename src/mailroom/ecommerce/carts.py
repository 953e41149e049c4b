"""Carts, upserted by the shop's own id (Shopify: the checkout token an order later names).

A cart is `active` until an order names it (`converted`, whenever that order arrives, before
or after the cart) or until it sits untouched for the store's `abandon_after_minutes`
(`abandoned`, once: the worker's `abandon` loop). Touching means changing what it holds: an
upsert that says what is stored changes nothing, not even the clock. An abandoned cart that
changes later keeps its status (one abandonment per cart, so one reminder); a converted cart
that was abandoned counts as converted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select

from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.ecommerce import customers, values
from mailroom.ecommerce.orders import KEEP, Keep
from mailroom.ecommerce.service import buyer_conditions, lock, paged
from mailroom.models import CART_STATUSES, Cart, Order, Store

NOT_FOUND = "Cart not found"


@dataclass(frozen=True)
class CartIn:
    external_id: str
    total: int  # cents
    email: str | Keep | None = KEEP
    currency: str | Keep = KEEP
    lines: tuple[values.Line, ...] | Keep = KEEP
    checkout_url: str | Keep | None = KEEP
    source_updated_at: datetime | None = None


@dataclass(frozen=True)
class Upserted:
    cart: Cart
    created: bool
    changed: bool


def clean(body: dict[str, Any], external_id: str) -> CartIn:
    return CartIn(
        external_id=external_id,
        total=values.money(body.get("total"), "total") or 0,
        email=values.email(body["email"]) if "email" in body else KEEP,
        currency=values.currency(body["currency"]) if body.get("currency") is not None else KEEP,
        lines=values.lines(body["lines"]) if body.get("lines") is not None else KEEP,
        checkout_url=(
            values.url(body["checkout_url"], "checkout_url") if "checkout_url" in body else KEEP
        ),
    )


async def find(ctx: Context, store: Store, external_id: str) -> Cart | None:
    found: Cart | None = await ctx.session.scalar(
        select(Cart).where(Cart.store_id == store.id, Cart.external_id == external_id)
    )
    return found


async def get(ctx: Context, store: Store, external_id: str) -> Cart:
    cart = await find(ctx, store, external_id)
    if cart is None:
        raise ApiError(404, NOT_FOUND)
    return cart


async def upsert(ctx: Context, store: Store, item: CartIn) -> Upserted:
    """Create or update the cart; (cart, created, changed)."""
    if not isinstance(item.currency, Keep) and item.currency != store.currency:
        raise ApiError(400, f"currency must be {store.currency}")
    await lock(ctx, store)
    cart = await find(ctx, store, item.external_id)
    now = utcnow()
    wanted: dict[str, Any] = {"total": item.total}
    if not isinstance(item.email, Keep):
        wanted["email"] = item.email
    if not isinstance(item.lines, Keep):
        wanted["lines"] = [line.as_stored() for line in item.lines]
    if not isinstance(item.checkout_url, Keep):
        wanted["checkout_url"] = item.checkout_url
    if cart is None:
        defaults: dict[str, Any] = {"email": None, "lines": [], "checkout_url": None}
        cart = Cart(
            workspace_id=ctx.workspace_id,
            store_id=store.id,
            external_id=item.external_id,
            currency=store.currency,
            status="active",
            source_updated_at=item.source_updated_at,
            created_at=now,
            updated_at=now,
            **(defaults | wanted),
        )
        await _link_address(ctx, cart)
        converted_by = await ctx.session.scalar(
            select(Order.external_id)
            .where(Order.store_id == store.id, Order.cart_id == item.external_id)
            .limit(1)
        )
        if converted_by is not None:  # the order came first
            cart.status, cart.converted_at, cart.order_id = "converted", now, converted_by
        ctx.session.add(cart)
        await ctx.session.flush()
        return Upserted(cart, True, True)
    stale = (
        item.source_updated_at is not None
        and cart.source_updated_at is not None
        and item.source_updated_at < cart.source_updated_at
    )
    if stale or all(getattr(cart, name) == value for name, value in wanted.items()):
        return Upserted(cart, False, False)
    moved = "email" in wanted and wanted["email"] != cart.email
    for name, value in wanted.items():
        setattr(cart, name, value)
    if moved:
        await _link_address(ctx, cart)
    if item.source_updated_at is not None:
        cart.source_updated_at = item.source_updated_at
    cart.updated_at = now
    await ctx.session.flush()
    return Upserted(cart, False, True)


async def _link_address(ctx: Context, cart: Cart) -> None:
    cart.email_hash = ctx.hash_email(cart.email) if cart.email else None
    found = await customers.contacts_by_hash(ctx, {cart.email_hash}) if cart.email_hash else {}
    cart.contact_id = found.get(cart.email_hash) if cart.email_hash else None


async def remove(ctx: Context, store: Store, external_id: str) -> Cart:
    cart = await get(ctx, store, external_id)
    await ctx.session.execute(delete(Cart).where(Cart.id == cart.id))
    return cart


def check_status(value: str | None) -> str | None:
    if value is None:
        return None
    if value not in CART_STATUSES:
        raise ApiError(400, f"status must be one of {', '.join(CART_STATUSES)}")
    return value


async def page(
    ctx: Context,
    store: Store,
    params: PageParams,
    *,
    email: str | None = None,
    contact_id: str | None = None,
    status: str | None = None,
) -> tuple[list[Cart], int]:
    """Most recently changed first; `email`, `contact_id` and `status` narrow it."""
    conditions = buyer_conditions(ctx, Cart, store, email, contact_id)
    if check_status(status):
        conditions.append(Cart.status == status)
    return await paged(ctx, Cart, conditions, (Cart.updated_at.desc(), Cart.id.desc()), params)


def as_dict(cart: Cart) -> dict[str, Any]:
    return {
        "id": cart.id,
        "external_id": cart.external_id,
        "store_id": cart.store_id,
        "email": cart.email,
        "contact_id": cart.contact_id,
        "status": cart.status,
        "total": values.cents_text(cart.total),
        "currency": cart.currency,
        "lines": values.stored_lines(cart.lines),
        "checkout_url": cart.checkout_url,
        "order_id": cart.order_id,
        "abandoned_at": cart.abandoned_at,
        "converted_at": cart.converted_at,
        "created_at": cart.created_at,
        "updated_at": cart.updated_at,
    }
