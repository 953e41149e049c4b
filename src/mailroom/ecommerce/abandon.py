"""The worker host's `abandon-carts` loop: an active cart untouched for its store's
`abandon_after_minutes` becomes abandoned, once (its status leaves `active` for good).

One UPDATE per distinct delay among the stores (most keep the default hour, so usually one
statement for every workspace), reading the `(status, updated_at)` index: only active carts
older than the delay are looked at. `mark_due` returns the carts it abandoned, after
enrolling their contacts in `cart_abandoned` automations in the same transaction (a cart is
abandoned once, so it starts one run).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.automations import commerce as automations_commerce
from mailroom.background import WorkerContext
from mailroom.core.clock import utcnow
from mailroom.models import Cart, Store

log = logging.getLogger("mailroom.ecommerce")
IDLE_SECONDS = 30  # carts are due by the minute: looking twice a minute is on time


@dataclass(frozen=True)
class Abandoned:
    workspace_id: str
    store_id: str
    cart_id: str


async def mark_due(session: AsyncSession, *, now: datetime | None = None) -> list[Abandoned]:
    """Abandon every due cart of every workspace and enrol them; returns those abandoned."""
    now = now or utcnow()
    delays = (
        await session.scalars(
            select(Store.abandon_after_minutes)
            .where(Store.id.in_(select(Cart.store_id).where(Cart.status == "active")))
            .distinct()
        )
    ).all()
    table = cast(Table, Cart.__table__)
    carts = table.c
    abandoned: list[Abandoned] = []
    for minutes in sorted(delays):
        result: Any = await session.execute(
            update(table)
            .where(
                carts.status == "active",
                carts.updated_at <= now - timedelta(minutes=minutes),
                carts.store_id.in_(select(Store.id).where(Store.abandon_after_minutes == minutes)),
            )
            .values(status="abandoned", abandoned_at=now)
            .returning(carts.workspace_id, carts.store_id, carts.id)
        )
        abandoned.extend(Abandoned(*row) for row in result.all())
    await automations_commerce.carts_abandoned(session, abandoned)
    return abandoned


async def tick(worker: WorkerContext) -> int:
    async with worker.db.transaction() as session:
        abandoned = await mark_due(session)
    if abandoned:
        log.info("marked %d carts abandoned", len(abandoned))
    return len(abandoned)
