"""Order ingest through the API: orders/s one `PUT` at a time and 500 per `batch`, each order
with three lines and an address (a third of them a contact's), then the same batches again
(unchanged: nothing written) and with a new status (every order updated)."""

from __future__ import annotations

import time

from bench.common import BenchContext, Timer, peak_rss_mb, percentiles, report

PUTS = 1_000
BATCHES = 20
BATCH = 500
CONTACTS = 300


def order(i: int, status: str = "paid") -> dict:
    return {
        "email": f"buyer{i % 1000}@shop-bench.io",
        "status": status,
        "total": f"{30 + i % 70}.90",
        "currency": "EUR",
        "placed_at": "2026-03-15T10:30:00Z",
        "lines": [
            {"product_id": f"sku-{(i + k) % 200}", "quantity": 1 + k, "price": "9.90"}
            for k in range(3)
        ],
    }


async def run(ctx: BenchContext) -> None:
    async with ctx.fresh_app() as bench:
        client, headers = bench.client, bench.headers
        store = await client.post(
            "/api/v1/ecommerce/stores", json={"name": "Bench", "currency": "EUR"}, headers=headers
        )
        assert store.status_code == 201, store.text
        base = f"/api/v1/ecommerce/stores/{store.json()['store']['id']}/orders"
        for i in range(CONTACTS):
            made = await client.post(
                "/api/v1/contacts", json={"email": f"buyer{i}@shop-bench.io"}, headers=headers
            )
            assert made.status_code == 201, made.text

        samples = []
        with Timer() as puts:
            for i in range(PUTS):
                start = time.perf_counter()
                response = await client.put(f"{base}/put-{i}", json=order(i), headers=headers)
                samples.append((time.perf_counter() - start) * 1000)
                assert response.status_code == 201, response.text
        figures = percentiles(samples)
        report(
            "PUT /ecommerce/stores/{id}/orders/{external_id} (new)",
            ctx.backend,
            orders=PUTS,
            orders_per_s=PUTS / puts.seconds,
            p50_ms=figures["p50"],
            p99_ms=figures["p99"],
        )

        async def batches(label: str, status: str, expect: str) -> None:
            samples = []
            with Timer() as timer:
                for b in range(BATCHES):
                    body = {
                        "orders": [
                            {"external_id": f"batch-{b}-{i}", **order(b * BATCH + i, status)}
                            for i in range(BATCH)
                        ]
                    }
                    start = time.perf_counter()
                    response = await client.post(f"{base}/batch", json=body, headers=headers)
                    samples.append((time.perf_counter() - start) * 1000)
                    assert response.status_code == 200, response.text
                    assert response.json()[expect] == BATCH, response.text
            figures = percentiles(samples)
            total = BATCHES * BATCH
            report(
                f"POST .../orders/batch of {BATCH} ({label})",
                ctx.backend,
                orders=total,
                orders_per_s=total / timer.seconds,
                batch_p50_ms=figures["p50"],
                batch_p99_ms=figures["p99"],
            )

        await batches("new", "paid", "created")
        await batches("same again", "paid", "unchanged")
        await batches("status changed", "fulfilled", "updated")
        report("memory", ctx.backend, peak_rss_mb=peak_rss_mb())
