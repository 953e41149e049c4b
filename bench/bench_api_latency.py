"""Baseline: one authenticated read and one audited write through the whole stack."""

from __future__ import annotations

import time

from bench.common import BenchContext, percentiles, report

REQUESTS = 300


async def run(ctx: BenchContext) -> None:
    async with ctx.fresh_app() as bench:
        samples = []
        for _ in range(REQUESTS):
            start = time.perf_counter()
            response = await bench.client.get("/api/v1/account", headers=bench.headers)
            samples.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200
        figures = percentiles(samples)
        report(
            "GET /api/v1/account",
            ctx.backend,
            requests=REQUESTS,
            p50_ms=figures["p50"],
            p99_ms=figures["p99"],
            req_per_s=REQUESTS / (sum(samples) / 1000),
        )
