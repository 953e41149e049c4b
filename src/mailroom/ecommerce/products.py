"""A store's products, upserted by the shop's own id: what orders and carts name in their lines
(and, later, what templates show and segments ask about)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select

from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.core.text import contains_pattern, fold
from mailroom.ecommerce import values
from mailroom.ecommerce.service import lock, paged
from mailroom.models import Product, Store
from mailroom.named import clean_name

MAX_TITLE = 500
MAX_CATEGORIES = 50
MAX_CATEGORY = 100
NOT_FOUND = "Product not found"


@dataclass(frozen=True)
class ProductIn:
    title: str
    url: str | None
    image_url: str | None
    price: int | None  # cents
    categories: tuple[str, ...]


def clean(body: dict[str, Any]) -> ProductIn:
    categories = body.get("categories")
    if categories is not None and not isinstance(categories, list):
        raise ApiError(400, "categories must be an array of names")
    if categories is not None and len(categories) > MAX_CATEGORIES:
        raise ApiError(400, f"categories may have at most {MAX_CATEGORIES} items")
    names = [
        clean_name(c, MAX_CATEGORY, f"categories[{i}]") for i, c in enumerate(categories or [])
    ]
    return ProductIn(
        title=clean_name(body.get("title"), MAX_TITLE, "title"),
        url=values.url(body.get("url"), "url"),
        image_url=values.url(body.get("image_url"), "image_url"),
        price=values.money(body.get("price"), "price", required=False),
        categories=tuple(dict.fromkeys(names)),
    )


async def find(ctx: Context, store: Store, external_id: str) -> Product | None:
    found: Product | None = await ctx.session.scalar(
        select(Product).where(Product.store_id == store.id, Product.external_id == external_id)
    )
    return found


async def get(ctx: Context, store: Store, external_id: str) -> Product:
    product = await find(ctx, store, external_id)
    if product is None:
        raise ApiError(404, NOT_FOUND)
    return product


async def upsert(
    ctx: Context, store: Store, external_id: str, item: ProductIn
) -> tuple[Product, bool, bool]:
    """Create or update the product; returns (product, created, changed). Sending what is
    stored changes nothing (not even `updated_at`)."""
    await lock(ctx, store)
    product = await find(ctx, store, external_id)
    fields = {
        "title": item.title,
        "title_key": fold(item.title),
        "url": item.url,
        "image_url": item.image_url,
        "price": item.price,
        "categories": list(item.categories),
    }
    now = utcnow()
    if product is None:
        product = Product(
            workspace_id=ctx.workspace_id,
            store_id=store.id,
            external_id=external_id,
            created_at=now,
            updated_at=now,
            **fields,
        )
        ctx.session.add(product)
        await ctx.session.flush()
        return product, True, True
    if all(getattr(product, name) == value for name, value in fields.items()):
        return product, False, False
    for name, value in fields.items():
        setattr(product, name, value)
    product.updated_at = now
    await ctx.session.flush()
    return product, False, True


async def remove(ctx: Context, store: Store, external_id: str) -> Product:
    product = await get(ctx, store, external_id)
    await ctx.session.execute(delete(Product).where(Product.id == product.id))
    return product


async def page(
    ctx: Context, store: Store, params: PageParams, q: str | None
) -> tuple[list[Product], int]:
    """By title; `q`: a case-insensitive substring of the title."""
    conditions = [Product.store_id == store.id]
    if q and q.strip():
        conditions.append(Product.title_key.like(contains_pattern(q.strip()), escape="\\"))
    return await paged(ctx, Product, conditions, (Product.title_key, Product.id), params)


def as_dict(product: Product) -> dict[str, Any]:
    return {
        "id": product.id,
        "external_id": product.external_id,
        "store_id": product.store_id,
        "title": product.title,
        "url": product.url,
        "image_url": product.image_url,
        "price": None if product.price is None else values.cents_text(product.price),
        "categories": list(product.categories or []),
        "created_at": product.created_at,
        "updated_at": product.updated_at,
    }
