"""Segment preview with e-commerce conditions over 100,000 contacts and 1,000,000 orders (two
stores, 2,000 products in 40 categories, 2,000,000 order lines, a tenth of the orders cancelled
or refunded, a fifth of the contacts without orders, 30,000 carts): the count query alone and
the whole `POST /segments/preview` (count and first 10) for
`total_spent > 100 AND purchased category`, then each other e-commerce condition alone;
p50/p99.

Seeded set-based (COPY on PostgreSQL, executemany on SQLite), never through ORM objects; the
orders' and lines' secondary indexes are dropped while loading and rebuilt from their own
definitions, as a restore does. PostgreSQL is vacuumed and analyzed (as autovacuum leaves it);
SQLite gets no statistics (the app never runs ANALYZE). A case stops early once its budget of
seconds is spent, so a slow backend still finishes in minutes (`runs` says how many). Each
buyer's kept figures and bought products are filled from the loaded orders in one pass, as
the app keeps them while orders arrive."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from sqlalchemy import and_, func, select, text

from bench.common import BenchContext, Timer, percentiles, report
from mailroom.core.clock import utcnow
from mailroom.core.emails import email_hash
from mailroom.core.ids import new_id
from mailroom.db import bulk_insert
from mailroom.ecommerce import customers
from mailroom.models import Cart, Contact, Order, OrderLine, Product, search_text
from mailroom.segments import rules
from mailroom.segments.compile import Compiler

CONTACTS = 100_000
ORDERS = int(os.environ.get("BENCH_ECOMMERCE_SEGMENT_ORDERS", "1000000"))
REQUESTS = int(os.environ.get("BENCH_ECOMMERCE_SEGMENT_REQUESTS", "100"))
# A slow case stops early, after its budget of seconds (the main rule: at least 3 runs).
BUDGET_S = 20
MIN_SAMPLES = 3
ALONE_BUDGET_S = 8
PRODUCTS = 1_000  # per store
CATEGORIES = [f"Category {n}" for n in range(40)]
BUYERS = 0.8  # of the contacts; the others have no orders
CARTS = 30_000
CHUNK = 100_000  # orders per transaction
LOADED = ("ecommerce_orders", "ecommerce_order_lines")

MAIN = {
    "match": "all",
    "conditions": [
        {"field": "ecommerce.total_spent", "op": "gt", "value": 100},
        {"field": "ecommerce.purchased", "op": "category", "value": {"category": "category 7"}},
    ],
}
ALONE = {
    "total_spent gt 100": {"field": "ecommerce.total_spent", "op": "gt", "value": 100},
    "purchased category": MAIN["conditions"][1],
    "total_spent lte 50 (buyers of nothing too)": {
        "field": "ecommerce.total_spent",
        "op": "lte",
        "value": 50,
    },
    "orders_count gte 15": {"field": "ecommerce.orders_count", "op": "gte", "value": 15},
    "last_order within_last 30": {
        "field": "ecommerce.last_order",
        "op": "within_last",
        "value": 30,
    },
    "last_order before_last 180": {
        "field": "ecommerce.last_order",
        "op": "before_last",
        "value": 180,
    },
    "purchased product in 90 days": {
        "field": "ecommerce.purchased",
        "op": "product",
        "value": {"product": "sku-42", "within_days": 90},
    },
    "cart abandoned in 7 days": {
        "field": "ecommerce.cart",
        "op": "abandoned",
        "value": {"within_days": 7},
    },
}


def _categories(n: int) -> list[str]:
    names = [CATEGORIES[n % 40]]
    if n % 3 == 0 and (n * 7) % 40 != n % 40:
        names.append(CATEGORIES[(n * 7) % 40])
    return names


async def _execute(db: Any, *statements: str) -> None:
    async with db.write_engine.connect() as conn:
        if db.is_sqlite:
            for statement in statements:
                await conn.execute(text(statement))
            await conn.commit()
        else:
            autocommit = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await autocommit.execute(text("SET maintenance_work_mem = '256MB'"))
            for statement in statements:
                await autocommit.execute(text(statement))


async def _secondary_indexes(db: Any) -> dict[str, str]:
    """{name: CREATE INDEX ...} of the loaded tables' indexes that no constraint owns."""
    async with db.write_engine.connect() as conn:
        if db.is_sqlite:
            rows = await conn.execute(
                text(
                    "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
                    f" AND tbl_name IN {LOADED}"
                )
            )
        else:
            rows = await conn.execute(
                text(
                    "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' "
                    f"AND tablename IN {LOADED} AND indexname NOT IN "
                    "(SELECT conname FROM pg_constraint)"
                )
            )
        return dict(rows.all())


def _contacts(workspace_id: str, now: Any) -> list[dict[str, Any]]:
    rows = []
    for i in range(CONTACTS):
        email = f"buyer{i}@example{i % 50}.com"
        created = now - timedelta(seconds=CONTACTS - i)
        rows.append(
            {
                "id": new_id(),
                "workspace_id": workspace_id,
                "email": email,
                "email_hash": email_hash("bench", email),
                "first_name": "Ann",
                "last_name": f"Buyer {i}",
                "search_text": search_text(email, "Ann", f"Buyer {i}"),
                "status": "subscribed",
                "custom_fields": {},
                "source": "import",
                "subscribed_at": created,
                "created_at": created,
                "updated_at": created,
            }
        )
    return rows


async def seed(db: Any, workspace_id: str, store_ids: list[str]) -> None:
    """Contacts, products, orders with their lines, and carts (a third abandoned)."""
    now = utcnow()
    contacts = _contacts(workspace_id, now)
    async with db.transaction() as session:
        await bulk_insert(session, Contact, contacts)
    rng = random.Random(27)
    buyers = [
        (c["id"], c["email"], c["email_hash"])
        for c in rng.sample(contacts, int(len(contacts) * BUYERS))
    ]
    async with db.transaction() as session:
        await bulk_insert(
            session,
            Product,
            (
                {
                    "id": new_id(),
                    "workspace_id": workspace_id,
                    "store_id": store_id,
                    "external_id": f"sku-{n}",
                    "title": f"Product {n}",
                    "title_key": f"product {n}",
                    "price": 100 * (1 + n % 50),
                    "categories": _categories(n),
                    "created_at": now,
                    "updated_at": now,
                }
                for store_id in store_ids
                for n in range(PRODUCTS)
            ),
        )
    lines: list[dict[str, Any]] = []

    def orders(start: int) -> Iterator[dict[str, Any]]:
        for k in range(start, min(start + CHUNK, ORDERS)):
            contact_id, email, address_hash = buyers[rng.randrange(len(buyers))]
            order_id = new_id()
            store_id = store_ids[k % len(store_ids)]
            roll = rng.random()
            status = "cancelled" if roll < 0.05 else "refunded" if roll < 0.1 else "paid"
            mine = [
                {"product_id": f"sku-{rng.randrange(PRODUCTS)}", "quantity": 1, "price": 500}
                for _ in range(1 + k % 3)
            ]
            lines.extend(
                {
                    "order_id": order_id,
                    "position": position,
                    "workspace_id": workspace_id,
                    "store_id": store_id,
                    **line,
                }
                for position, line in enumerate(mine)
            )
            placed = now - timedelta(minutes=rng.randrange(2 * 365 * 24 * 60))
            yield {
                "id": order_id,
                "workspace_id": workspace_id,
                "store_id": store_id,
                "external_id": f"o-{k}",
                "email": email,
                "email_hash": address_hash,
                "contact_id": contact_id,
                "status": status,
                "total": rng.randrange(100, 2001),  # 1.00 to 20.00
                "currency": "EUR",
                "placed_at": placed,
                "lines": mine,
                "created_at": placed,
                "updated_at": placed,
            }

    indexes = await _secondary_indexes(db)
    await _execute(db, *(f"DROP INDEX {name}" for name in indexes))
    for start in range(0, ORDERS, CHUNK):
        async with db.transaction() as session:
            if db.is_sqlite:  # the unique indexes still take random keys: keep them cached
                await session.execute(text("PRAGMA cache_size = -262144"))
            await bulk_insert(session, Order, orders(start))
            await bulk_insert(session, OrderLine, lines)
        lines.clear()
    await _execute(db, *indexes.values())
    async with db.transaction() as session:
        await bulk_insert(
            session,
            Cart,
            (
                {
                    "id": new_id(),
                    "workspace_id": workspace_id,
                    "store_id": store_ids[n % len(store_ids)],
                    "external_id": f"c-{n}",
                    "email": email,
                    "email_hash": address_hash,
                    "contact_id": contact_id,
                    "status": ("active", "abandoned", "converted")[n % 3],
                    "total": 1000,
                    "currency": "EUR",
                    "lines": [],
                    "abandoned_at": now - timedelta(days=n % 30) if n % 3 else None,
                    "created_at": now,
                    "updated_at": now,
                }
                for n, (contact_id, email, address_hash) in enumerate(buyers[:CARTS])
            ),
        )
        # Each buyer's figures and products, as the app keeps them while orders arrive one by one.
        await customers.rebuild_purchases(session, workspace_id)
        if db.is_sqlite:
            await session.execute(text("PRAGMA cache_size = -2000"))  # SQLite's default
    # PostgreSQL: fresh statistics and visibility map, as autovacuum leaves a live database.
    # SQLite: none, as the app never runs ANALYZE.
    if not db.is_sqlite:
        await _execute(db, "VACUUM ANALYZE")


async def _measure(
    call: Any, runs: int, budget_s: float = BUDGET_S, least: int = MIN_SAMPLES
) -> tuple[Any, dict[str, float], int]:
    """The last answer, p50/p99 in ms and how many runs: `runs`, or fewer (at least `least`)
    once `budget_s` is spent."""
    samples: list[float] = []
    began = time.perf_counter()
    answer = None
    while len(samples) < runs and (len(samples) < least or time.perf_counter() - began < budget_s):
        start = time.perf_counter()
        answer = await call()
        samples.append((time.perf_counter() - start) * 1000)
    return answer, percentiles(samples), len(samples)


async def run(ctx: BenchContext) -> None:
    async with ctx.fresh_app() as bench:
        c, h, db = bench.client, bench.headers, bench.app.state.db
        store_ids = []
        for name in ("Shop A", "Shop B"):
            made = await c.post(
                "/api/v1/ecommerce/stores", json={"name": name, "currency": "EUR"}, headers=h
            )
            assert made.status_code == 201, made.text
            store_ids.append(made.json()["store"]["id"])
        with Timer() as seeding:
            await seed(db, bench.workspace_id, store_ids)
        report(
            f"seed {CONTACTS:,} contacts, {ORDERS:,} orders",
            ctx.backend,
            seconds=seeding.seconds,
        )

        # The count query alone, as the preview makes it (segments.service).
        tree = rules.parse(MAIN, {}).tree
        ws = bench.workspace_id

        async def count() -> int:
            where = and_(Contact.workspace_id == ws, Compiler(db.dialect, ws, utcnow()).rule(tree))
            async with db.session(write=False) as session:
                return int(
                    await session.scalar(select(func.count()).select_from(Contact).where(where))
                    or 0
                )

        matched, figures, runs = await _measure(count, REQUESTS)
        report(
            "count query: total_spent > 100 AND purchased category",
            ctx.backend,
            matched=matched,
            runs=runs,
            p50_ms=figures["p50"],
            p99_ms=figures["p99"],
        )

        cases = {"total_spent > 100 AND purchased category": MAIN}
        cases |= {name: {"conditions": [one]} for name, one in ALONE.items()}
        for name, rule in cases.items():

            async def preview(r: dict[str, Any] = rule) -> Any:
                answer = await c.post("/api/v1/segments/preview", json={"rules": r}, headers=h)
                assert answer.status_code == 200, answer.text
                return answer.json()

            if rule is MAIN:
                answer, figures, runs = await _measure(preview, REQUESTS)
            else:
                answer, figures, runs = await _measure(
                    preview, max(1, REQUESTS // 10), ALONE_BUDGET_S, least=1
                )
            report(
                f"POST /segments/preview: {name}",
                ctx.backend,
                matched=answer["count"],
                runs=runs,
                p50_ms=figures["p50"],
                p99_ms=figures["p99"],
            )
