"""The worker's daily prune keeps a month of store platform deliveries: older rows go (a
platform's retries come within hours), newer ones stay on the store's list."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import insert

from mailroom.core.clock import utcnow
from mailroom.core.ids import new_id
from mailroom.ecommerce import deliveries
from mailroom.models import StoreDelivery
from tests.ecommerce.store_helpers import get_json, make_store


async def test_deliveries_older_than_a_month_are_pruned(client, db, ws):
    store = await make_store(client, ws.headers, platform="shopify")
    now = utcnow()
    async with db.transaction() as session:
        for name, age in (("old", 31), ("recent", 29)):
            await session.execute(
                insert(StoreDelivery).values(
                    id=new_id(),
                    workspace_id=ws.workspace_id,
                    store_id=store["id"],
                    platform="shopify",
                    topic="orders/create",
                    delivery_id=name,
                    outcome="applied",
                    detail="",
                    received_at=now - timedelta(days=age),
                )
            )
    async with db.transaction() as session:
        assert await deliveries.prune(session) == 1
    listed = await get_json(client, ws.headers, f"/stores/{store['id']}/deliveries")
    assert [d["delivery_id"] for d in listed["deliveries"]] == ["recent"]
