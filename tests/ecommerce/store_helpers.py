"""Shared helpers for the e-commerce data tests: calls as a client makes them, and direct
reads of what was stored (rows a client cannot see, like `updated_at` of an order)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update

from mailroom.core.clock import utcnow
from mailroom.models import Cart, Order, OrderLine

API = "/api/v1/ecommerce"


async def make_store(client, headers, name: str = "Main shop", **fields: Any) -> dict[str, Any]:
    response = await client.post(
        f"{API}/stores", json={"name": name, "currency": "EUR", **fields}, headers=headers
    )
    assert response.status_code == 201, response.text
    return response.json()["store"]


async def put(client, headers, store_id: str, kind: str, external_id: str, body: dict) -> Any:
    return await client.put(
        f"{API}/stores/{store_id}/{kind}/{external_id}", json=body, headers=headers
    )


async def put_order(client, headers, store_id, external_id, expect=201, **body) -> dict:
    response = await put(client, headers, store_id, "orders", external_id, body)
    assert response.status_code == expect, response.text
    return response.json()["order"]


async def put_cart(client, headers, store_id, external_id, expect=201, **body) -> dict:
    response = await put(client, headers, store_id, "carts", external_id, body)
    assert response.status_code == expect, response.text
    return response.json()["cart"]


async def get_json(client, headers, path: str, **params: Any) -> dict[str, Any]:
    response = await client.get(f"{API}{path}", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def count_rows(db, model, **where: Any) -> int:
    async with db.session() as session:
        query = select(func.count()).select_from(model)
        for name, value in where.items():
            query = query.where(getattr(model, name) == value)
        return int(await session.scalar(query) or 0)


async def order_row(db, store_id: str, external_id: str) -> Order:
    async with db.session() as session:
        return await session.scalar(
            select(Order).where(Order.store_id == store_id, Order.external_id == external_id)
        )


async def line_rows(db, order_id: str) -> list[tuple[int, str, int, int]]:
    async with db.session() as session:
        rows = await session.execute(
            select(OrderLine.position, OrderLine.product_id, OrderLine.quantity, OrderLine.price)
            .where(OrderLine.order_id == order_id)
            .order_by(OrderLine.position)
        )
        return [tuple(r) for r in rows.all()]


async def age_cart(db, store_id: str, external_id: str, minutes: float) -> datetime:
    """Move a cart's last change `minutes` into the past (time travel by editing the row)."""
    moment = utcnow() - timedelta(minutes=minutes)
    async with db.transaction() as session:
        await session.execute(
            update(Cart)
            .where(Cart.store_id == store_id, Cart.external_id == external_id)
            .values(updated_at=moment)
        )
    return moment
