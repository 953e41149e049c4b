"""Issue 16: contacts through a wait + send_email + add_tag automation, worked by one worker's
automations loop (in this process), with the wait skipped: runs per second, excluding the wait.

Env: BENCH_AUTOMATION_CONTACTS (10000).
"""

from __future__ import annotations

import os
import time

import psutil
from sqlalchemy import func, select, update

from bench.bench_send import DOMAIN, _import, _ok
from bench.common import BenchContext, report
from mailroom.automations import runner
from mailroom.core.clock import utcnow
from mailroom.models import AutomationRun, SendingDomain, SendLog
from mailroom.worker import WorkerContext


async def run(ctx: BenchContext) -> None:
    count = int(os.environ.get("BENCH_AUTOMATION_CONTACTS", "10000"))
    async with ctx.fresh_app(plan="business") as bench:
        c, h, db = bench.client, bench.headers, bench.app.state.db
        await _import(bench, [f"reader{i}@inbox{i % 50}.io" for i in range(count)], None)
        domain = (
            await _ok(await c.post("/api/v1/domains", json={"domain": DOMAIN}, headers=h), 201)
        )["domain"]
        async with db.transaction() as session:
            now = utcnow()
            await session.execute(
                update(SendingDomain)
                .where(SendingDomain.id == domain["id"])
                .values(status="verified", verified_at=now, last_checked_at=now)
            )
        identity = {"from_email": f"hello@{DOMAIN}", "from_name": "Shop"}
        await _ok(await c.patch("/api/v1/sending", json=identity, headers=h))
        template = await _ok(
            await c.post(
                "/api/v1/templates",
                json={"name": "Hi", "subject": "Hi {{ first_name }}", "html_content": "<p>Hi</p>"},
                headers=h,
            ),
            201,
        )
        tag = await _ok(await c.post("/api/v1/tags", json={"name": "Welcomed"}, headers=h), 201)
        segment = await _ok(
            await c.post(
                "/api/v1/segments",
                json={
                    "name": "All",
                    "rules": {"conditions": [{"field": "email", "op": "contains", "value": "@"}]},
                },
                headers=h,
            ),
            201,
        )
        automation = await _ok(
            await c.post(
                "/api/v1/automations",
                json={
                    "name": "Welcome",
                    "trigger": {"type": "manual"},
                    "steps": [
                        {"type": "wait", "seconds": 3600},
                        {"type": "send_email", "template_id": template["template"]["id"]},
                        {"type": "add_tag", "tag_id": tag["tag"]["id"]},
                    ],
                },
                headers=h,
            ),
            201,
        )
        auto_id = automation["automation"]["id"]
        await _ok(await c.post(f"/api/v1/automations/{auto_id}/activate", headers=h))
        began = time.perf_counter()
        enrolled = await _ok(
            await c.post(
                f"/api/v1/automations/{auto_id}/enrol",
                json={"segment_id": segment["segment"]["id"]},
                headers=h,
            )
        )
        enrol_seconds = time.perf_counter() - began
        worker = WorkerContext(db, bench.settings, "bench-worker")

        async def drain() -> float:
            start = time.perf_counter()
            while await runner.tick(worker):
                pass
            return time.perf_counter() - start

        to_wait = await drain()  # every run reaches its wait
        async with db.transaction() as session:
            await session.execute(update(AutomationRun).values(run_at=utcnow()))
        after_wait = await drain()  # send_email + add_tag + completed
        async with db.session() as session:
            queued = await session.scalar(select(func.count()).select_from(SendLog))
            done = await session.scalar(
                select(func.count()).where(AutomationRun.state == "completed")
            )
        report(
            "automation: wait + send_email + add_tag, one worker loop",
            ctx.backend,
            contacts=count,
            enrolled=enrolled["enrolled"],
            enrol_seconds=enrol_seconds,
            to_the_wait_runs_per_s=count / to_wait,
            after_the_wait_runs_per_s=count / after_wait,
            emails_queued=queued,
            completed=done,
            peak_rss_mb=psutil.Process().memory_info().rss / 2**20,
        )
