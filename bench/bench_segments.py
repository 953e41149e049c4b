"""Segment preview (`POST /segments/preview` and `GET /segments/{id}/preview`: the count and the
first 10) over 100,000 contacts, with three conditions: a number custom field `gt`, a tag
`has_any` and `created_at within_last 90`; p50/p99. `BENCH_SEGMENTS_CONTACTS=1000000` for the
million-contact run (PostgreSQL; seeding takes minutes)."""

from __future__ import annotations

import os
import time

from bench.bench_contacts_list import seed
from bench.common import BenchContext, Timer, percentiles, report

CONTACTS = int(os.environ.get("BENCH_SEGMENTS_CONTACTS", "100000"))
REQUESTS = int(os.environ.get("BENCH_SEGMENTS_REQUESTS", "100"))


async def run(ctx: BenchContext) -> None:
    async with ctx.fresh_app() as bench:
        c, h = bench.client, bench.headers
        with Timer() as seeding:
            tag_id = await seed(bench.app.state.db, bench.workspace_id, CONTACTS)
        report(f"seed {CONTACTS:,} contacts", ctx.backend, seconds=seeding.seconds)
        made = await c.post(
            "/api/v1/custom-fields", json={"key": "score", "type": "number"}, headers=h
        )
        assert made.status_code == 201, made.text
        rules = {
            "match": "all",
            "conditions": [
                {"field": "custom_fields.score", "op": "gt", "value": 50},
                {"field": "tags", "op": "has_any", "value": [tag_id]},
                {"field": "created_at", "op": "within_last", "value": 90},
            ],
        }
        saved = await c.post(
            "/api/v1/segments", json={"name": "Engaged VIPs", "rules": rules}, headers=h
        )
        assert saved.status_code == 201, saved.text
        segment_id = saved.json()["segment"]["id"]
        calls = {
            "POST /segments/preview": ("POST", "/api/v1/segments/preview", {"rules": rules}),
            "GET /segments/{id}/preview": ("GET", f"/api/v1/segments/{segment_id}/preview", None),
        }
        for name, (method, path, body) in calls.items():
            samples = []
            for _ in range(REQUESTS):
                start = time.perf_counter()
                response = await c.request(method, path, json=body, headers=h)
                samples.append((time.perf_counter() - start) * 1000)
                assert response.status_code == 200, response.text
            figures = percentiles(samples)
            report(
                f"{name}, {CONTACTS:,} contacts, 3 conditions",
                ctx.backend,
                matched=response.json()["count"],
                p50_ms=figures["p50"],
                p99_ms=figures["p99"],
            )
