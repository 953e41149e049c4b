"""A/B tests at 50,000 recipients (`BENCH_AB_RECIPIENTS`): what a test adds to a campaign's
start (the audience snapshot, then one UPDATE ... FROM row_number() over random() splitting the
test share among three variants), a winner released to the waiting 80 % (one UPDATE), the
report per variant (one grouped read), and cancelling a test (the waiting rows skipped and
given back to the allowance). A plain campaign's start beside it, on the same audience.
No worker runs: these are the set-based statements the API answers with."""

from __future__ import annotations

import os
import time
from typing import Any

from bench.bench_send import HTML, _import, _ok
from bench.common import BenchApp, BenchContext, peak_rss_mb, report

RECIPIENTS = int(os.environ.get("BENCH_AB_RECIPIENTS", "50000"))
VARIANTS = [
    {"subject": "Spring sale, {{ first_name }}"},
    {"subject": "20% off the garden this week"},
    {"subject": "Spring sale", "from_name": "Ann at Shop"},
]


async def _campaign(bench: BenchApp, list_id: str, name: str, **extra: Any) -> str:
    body = {
        "name": name,
        "subject": "Spring sale",
        "from_email": "hello@shop.example",
        "html_content": HTML,
        "audience": {"list_ids": [list_id]},
        **extra,
    }
    created = await bench.client.post("/api/v1/campaigns", json=body, headers=bench.headers)
    return str((await _ok(created, 201))["campaign"]["id"])


async def _timed(bench: BenchApp, method: str, path: str, status: int = 200, **kw: Any) -> float:
    started = time.perf_counter()
    response = await bench.client.request(method, path, headers=bench.headers, **kw)
    seconds = time.perf_counter() - started
    await _ok(response, status)
    return seconds


async def run(ctx: BenchContext) -> None:
    async with ctx.fresh_app(plan="business") as bench:
        c, h = bench.client, bench.headers
        news = (await _ok(await c.post("/api/v1/lists", json={"name": "N"}, headers=h), 201))[
            "list"
        ]
        await _import(bench, [f"reader{i}@inbox{i % 50}.io" for i in range(RECIPIENTS)], news["id"])
        base = "/api/v1/campaigns"

        plain = await _campaign(bench, news["id"], "Plain")
        plain_s = await _timed(bench, "POST", f"{base}/{plain}/send", 202)
        await _timed(bench, "POST", f"{base}/{plain}/cancel")

        test = {"variants": VARIANTS, "test_share": 20, "winner_by": "manual"}
        tested = await _campaign(bench, news["id"], "Tested", ab_test=test)
        split_s = await _timed(bench, "POST", f"{base}/{tested}/send", 202)
        report_s = await _timed(bench, "GET", f"{base}/{tested}/report")
        winner_s = await _timed(
            bench, "POST", f"{base}/{tested}/ab-test/winner", json={"variant_id": "b"}
        )
        await _timed(bench, "POST", f"{base}/{tested}/cancel")

        again = await _campaign(bench, news["id"], "Cancelled", ab_test=test)
        await _timed(bench, "POST", f"{base}/{again}/send", 202)
        cancel_s = await _timed(bench, "POST", f"{base}/{again}/cancel")
        report(
            f"A/B test of 3 variants on 20 % of {RECIPIENTS:,}",
            ctx.backend,
            plain_start_s=plain_s,
            start_with_split_s=split_s,
            split_cost_s=split_s - plain_s,
            report_per_variant_s=report_s,
            winner_release_s=winner_s,
            cancel_while_testing_s=cancel_s,
            peak_rss_mb=peak_rss_mb(),
        )
