"""Issue 27: the revenue of a 50,000-recipient campaign in its report
(`GET /api/v1/campaigns/{id}/report`, aim p99 < 100 ms), with 5,000 clicks, 4,000 orders
attributed to it (a tenth of them refunded) among 100,000 orders of the workspace; and the
revenue figures alone (`ecommerce.attribution.revenue_of`), what attribution adds to it."""

from __future__ import annotations

import random
import time
from datetime import timedelta

from sqlalchemy import insert

from bench.bench_contacts_list import vacuum_analyze
from bench.bench_dashboard_report import _seed
from bench.common import BenchContext, Timer, peak_rss_mb, percentiles, report
from mailroom.accounts import service as accounts
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.ids import new_id
from mailroom.ecommerce import attribution
from mailroom.models import Order, Store

ORDERS = 100_000
ATTRIBUTED = 4_000
REQUESTS = 100


async def _orders(db, workspace_id: str, campaign_id: str) -> None:
    rng = random.Random(7)
    now = utcnow()
    store_id = new_id()
    async with db.transaction() as session:
        await session.execute(
            insert(Store).values(
                id=store_id,
                workspace_id=workspace_id,
                name="Bench shop",
                name_key="bench shop",
                currency="EUR",
                webhook_secret="x" * 40,
                created_at=now,
                updated_at=now,
            )
        )
        rows = []
        for n in range(ORDERS):
            mine = n < ATTRIBUTED
            rows.append(
                {
                    "id": new_id(),
                    "workspace_id": workspace_id,
                    "store_id": store_id,
                    "external_id": str(n),
                    "status": "refunded" if mine and n % 10 == 0 else "paid",
                    "total": rng.randrange(500, 30_000),
                    "currency": "EUR",
                    "placed_at": now - timedelta(minutes=n),
                    "lines": [],
                    "attributed_type": "campaign" if mine else None,
                    "attributed_id": campaign_id if mine else None,
                    "created_at": now,
                    "updated_at": now,
                }
            )
        for start in range(0, len(rows), 5000):
            await session.execute(insert(Order), rows[start : start + 5000])


async def run(ctx: BenchContext) -> None:
    async with ctx.fresh_app() as bench:
        db = bench.app.state.db
        with Timer() as seeding:
            campaign_id = await _seed(db, bench.workspace_id)
            await _orders(db, bench.workspace_id, campaign_id)
        await vacuum_analyze(db)
        report("seed 50k recipients, 100k orders", ctx.backend, seconds=seeding.seconds)
        path = f"/api/v1/campaigns/{campaign_id}/report"
        samples = []
        for _ in range(REQUESTS):
            start = time.perf_counter()
            answer = await bench.client.get(path, headers=bench.headers)
            samples.append((time.perf_counter() - start) * 1000)
            assert answer.status_code == 200, answer.text
        revenue = answer.json()["report"]["revenue"]
        assert revenue["orders"] == ATTRIBUTED - ATTRIBUTED // 10, revenue
        figures = percentiles(samples)
        report(
            "GET /campaigns/{id}/report with revenue (50k recipients)",
            ctx.backend,
            requests=REQUESTS,
            p50_ms=figures["p50"],
            p99_ms=figures["p99"],
            orders=revenue["orders"],
        )
        # The revenue figures alone: what attribution adds to the report.
        samples = []
        async with db.session() as session:
            principal = await accounts.principal_for_workspace(session, bench.workspace_id)
            scoped = Context(session, principal, bench.settings)
            for _ in range(REQUESTS):
                start = time.perf_counter()
                await attribution.revenue_of(scoped, "campaign", [campaign_id])
                samples.append((time.perf_counter() - start) * 1000)
        figures = percentiles(samples)
        report(
            "revenue figures of the campaign alone",
            ctx.backend,
            requests=REQUESTS,
            p50_ms=figures["p50"],
            p99_ms=figures["p99"],
        )
        report("memory", ctx.backend, peak_rss_mb=peak_rss_mb())
