"""Stores: a workspace's shops, named like its other resources, each with its currency, its
platform, when a cart counts as abandoned, how long a click earns an order's revenue, and the
secret that signs the platform's webhook deliveries (shown once, when the store is made;
replaceable, since Shopify signs the webhooks made in its admin with the shop's own key).

Products, orders and carts live in their own modules (`products`, `orders`, `carts`); every
one of them is reached through `get_store`, so another workspace's store is a 404 there too.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from sqlalchemy import exists, func, select

from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.db import serialise
from mailroom.ecommerce import customers, values
from mailroom.models import STORE_PLATFORMS, Order, Store
from mailroom.named import Named

MAX_NAME = 100
MAX_ABANDON_MINUTES = 10_080  # a week
MAX_ATTRIBUTION_DAYS = 90
STORES = Named(Store, "store", MAX_NAME)
CURRENCY_FIXED = "currency cannot change once the store has orders"
# A replaced secret: what a platform shows or a person types, in the column's 100 characters.
# Printable ASCII without spaces: pasted keys come with no stray blanks, and WooCommerce
# signs with the secret exactly as typed.
MIN_SECRET = 16
MAX_SECRET = 100
SECRET_PATTERN = f"^[!-~]{{{MIN_SECRET},{MAX_SECRET}}}$"
_SECRET = re.compile(f"[!-~]{{{MIN_SECRET},{MAX_SECRET}}}")
BAD_SECRET = (
    f"webhook_secret must be {MIN_SECRET} to {MAX_SECRET} printable ASCII characters without spaces"
)


def new_secret() -> str:
    return "mrs_" + secrets.token_urlsafe(32)


def _platform(value: Any) -> str:
    if value not in STORE_PLATFORMS:
        raise ApiError(400, f"platform must be one of {', '.join(STORE_PLATFORMS)}")
    return str(value)


def _secret(value: Any) -> str:
    if not isinstance(value, str) or not _SECRET.fullmatch(value):
        raise ApiError(400, BAD_SECRET)
    return value


def _abandon_minutes(value: Any) -> int:
    return values.whole(value, "abandon_after_minutes", 1, MAX_ABANDON_MINUTES)


def _attribution_days(value: Any) -> int:
    return values.whole(value, "attribution_days", 1, MAX_ATTRIBUTION_DAYS)


async def get_store(ctx: Context, store_id: Any) -> Store:
    return await STORES.get(ctx, store_id)


async def lock(ctx: Context, store: Store) -> None:
    """Until commit, one upsert at a time per store: two deliveries of the same new order
    would otherwise both read "absent" and both insert (PostgreSQL's READ COMMITTED); SQLite's
    write transaction is exclusive already."""
    await serialise(ctx.session, f"ecommerce-store:{store.id}")


async def create_store(ctx: Context, body: dict[str, Any]) -> Store:
    name = await STORES.claim_name(ctx, body.get("name"))
    if body.get("currency") is None:
        raise ApiError(400, "currency is required")
    currency = values.currency(body["currency"])
    platform = _platform(body.get("platform") if body.get("platform") is not None else "custom")
    minutes = body.get("abandon_after_minutes")
    days = body.get("attribution_days")
    return await STORES.create(
        ctx,
        name,
        currency=currency,
        platform=platform,
        abandon_after_minutes=60 if minutes is None else _abandon_minutes(minutes),
        attribution_days=5 if days is None else _attribution_days(days),
        webhook_secret=new_secret(),
    )


async def update_store(ctx: Context, store_id: str, changes: dict[str, Any]) -> Store:
    store = await get_store(ctx, store_id)
    if not changes:
        raise ApiError(400, "No updatable fields provided")
    if "name" in changes:
        await STORES.rename(ctx, store, changes["name"])
    if "platform" in changes:
        store.platform = _platform(changes["platform"])
    if "abandon_after_minutes" in changes:
        store.abandon_after_minutes = _abandon_minutes(changes["abandon_after_minutes"])
    if "attribution_days" in changes:
        store.attribution_days = _attribution_days(changes["attribution_days"])
    if "webhook_secret" in changes:
        # Deliveries signed with the old one are refused (401) from the commit on.
        store.webhook_secret = _secret(changes["webhook_secret"])
    if "currency" in changes:
        currency = values.currency(changes["currency"])
        if currency != store.currency:
            # Stored totals are in the old currency: converting them is not ours to guess.
            has_orders = await ctx.session.scalar(
                select(exists().where(Order.store_id == store.id))
            )
            if has_orders:
                raise ApiError(409, CURRENCY_FIXED)
            store.currency = currency
    STORES.touch(store)
    await STORES.flush(ctx)
    return store


async def delete_store(ctx: Context, store_id: str) -> None:
    """The store with its products, orders and carts (ON DELETE CASCADE)."""
    store = await get_store(ctx, store_id)
    buyers = await customers.contacts_of_store(ctx, store.id)
    await STORES.delete(ctx, store)
    await customers.refresh_purchases(ctx, buyers)


async def list_stores(ctx: Context, page: PageParams, q: str | None) -> tuple[list[Store], int]:
    return await STORES.page(ctx, page, q=q)


async def paged(
    ctx: Context, model: Any, conditions: list[Any], order_by: tuple[Any, ...], params: PageParams
) -> tuple[list[Any], int]:
    """One page of a store's products, orders or carts, and how many match in all."""
    total = int(await ctx.session.scalar(select(func.count()).where(*conditions)) or 0)
    rows = await ctx.session.scalars(
        select(model)
        .where(*conditions)
        .order_by(*order_by)
        .offset(params.offset)
        .limit(params.limit)
    )
    return list(rows.all()), total


def buyer_conditions(
    ctx: Context, model: Any, store: Store, email: str | None, contact_id: str | None
) -> list[Any]:
    """A store's orders or carts, narrowed to an address (any case) or a contact."""
    conditions = [model.store_id == store.id, model.workspace_id == ctx.workspace_id]
    if email and email.strip():
        conditions.append(model.email_hash == ctx.hash_email(email))
    if contact_id:
        conditions.append(model.contact_id == contact_id)
    return conditions


def as_dict(store: Store, *, with_secret: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": store.id,
        "name": store.name,
        "currency": store.currency,
        "platform": store.platform,
        "abandon_after_minutes": store.abandon_after_minutes,
        "attribution_days": store.attribution_days,
        "created_at": store.created_at,
        "updated_at": store.updated_at,
    }
    if with_secret:
        body["webhook_secret"] = store.webhook_secret
    return body
