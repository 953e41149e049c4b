"""Assistants: what a bearer token costs per request next to a key, and how fast tokens are
issued (grant exchange, refresh rotation)."""

from __future__ import annotations

import time
from typing import Any

from bench.common import BenchContext, percentiles, report

REQUESTS = 300
ROTATIONS = 100


async def _timed(samples: list[float], call: Any) -> Any:
    start = time.perf_counter()
    answer = await call
    samples.append((time.perf_counter() - start) * 1000)
    return answer


async def run(ctx: BenchContext) -> None:
    async with ctx.fresh_app() as bench:
        client = bench.client
        grant = await client.post(
            "/api/v1/assistants/grants",
            headers=bench.headers,
            json={"name": "Bench agent", "permissions": ["contacts:read", "contacts:write"]},
        )
        code = grant.json()["grant"]["code"]
        exchange_ms: list[float] = []
        tokens = (
            await _timed(
                exchange_ms,
                client.post("/api/v1/assistants/grants/exchange", json={"grant": code}),
            )
        ).json()
        bearer = {"Authorization": f"Bearer {tokens['access_token']}"}

        for label, headers in (("x-api-key", bench.headers), ("assistant bearer", bearer)):
            samples: list[float] = []
            for _ in range(REQUESTS):
                answer = await _timed(samples, client.get("/api/v1/contacts", headers=headers))
                assert answer.status_code == 200, answer.text
            figures = percentiles(samples)
            report(
                f"GET /api/v1/contacts with {label}",
                ctx.backend,
                requests=REQUESTS,
                p50_ms=figures["p50"],
                p99_ms=figures["p99"],
                req_per_s=REQUESTS / (sum(samples) / 1000),
            )

        refresh = tokens["refresh_token"]
        rotate_ms: list[float] = []
        for _ in range(ROTATIONS):
            answer = await _timed(
                rotate_ms,
                client.post(
                    "/oauth/token",
                    data={"grant_type": "refresh_token", "refresh_token": refresh},
                ),
            )
            assert answer.status_code == 200, answer.text
            refresh = answer.json()["refresh_token"]
        figures = percentiles(rotate_ms)
        report(
            "refresh rotation at /oauth/token",
            ctx.backend,
            rotations=ROTATIONS,
            p50_ms=figures["p50"],
            p99_ms=figures["p99"],
            grant_exchange_ms=exchange_ms[0],
        )
