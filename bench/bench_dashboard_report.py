"""Issue 18: a sent campaign's report page at 50,000 recipients for a signed-in person (the
report's aggregates over the send log and the tracking hits, the hourly chart, the first page
of recipients), with 20,000 opens and 5,000 clicks over 48 hours. Also the campaign list."""

from __future__ import annotations

import random
from datetime import timedelta

from sqlalchemy import insert

from bench.bench_contacts_list import vacuum_analyze
from bench.common import BenchContext, Timer, report
from bench.dashboard_pages import signed_in, time_pages
from mailroom.core.clock import utcnow
from mailroom.core.ids import new_id
from mailroom.models import Campaign, SendLog, TrackingHit

RECIPIENTS = 50_000
OPENS, CLICKS = 20_000, 5_000
REQUESTS = 50


async def _seed(db, workspace_id: str) -> str:
    rng = random.Random(3)
    now = utcnow()
    started = now - timedelta(hours=47)
    campaign_id = new_id()
    async with db.transaction() as session:
        await session.execute(
            insert(Campaign).values(
                id=campaign_id,
                workspace_id=workspace_id,
                name="Big sale",
                name_key="big sale",
                subject="Big sale",
                status="sent",
                audience={},
                started_at=started,
                finished_at=started + timedelta(hours=1),
                created_at=started,
                updated_at=started,
            )
        )
        rows = []
        for n in range(RECIPIENTS):
            opened = n < OPENS
            clicked = n < CLICKS
            rows.append(
                {
                    "id": new_id(),
                    "workspace_id": workspace_id,
                    "kind": "campaign",
                    "campaign_id": campaign_id,
                    "email": f"r{n}@mailtest.io",
                    "status": "sent",
                    "sent_at": started,
                    "first_opened_at": started + timedelta(hours=rng.randrange(47))
                    if opened
                    else None,
                    "first_clicked_at": started + timedelta(hours=2) if clicked else None,
                    "open_count": 1 if opened else 0,
                    "click_count": 1 if clicked else 0,
                    "run_at": started,
                    "created_at": started,
                    "updated_at": started,
                }
            )
        for start in range(0, len(rows), 5000):
            await session.execute(insert(SendLog), rows[start : start + 5000])
        hits = []
        for n, row in enumerate(rows[:OPENS]):
            hour = started.replace(minute=0, second=0, microsecond=0) + timedelta(
                hours=rng.randrange(48)
            )
            hits.append(
                {
                    "id": new_id(),
                    "workspace_id": workspace_id,
                    "send_log_id": row["id"],
                    "campaign_id": campaign_id,
                    "kind": "open",
                    "hour": hour,
                    "created_at": hour,
                }
            )
            if n < CLICKS:
                hits.append(
                    {
                        "id": new_id(),
                        "workspace_id": workspace_id,
                        "send_log_id": row["id"],
                        "campaign_id": campaign_id,
                        "kind": "click",
                        "link_index": n % 5,
                        "url": f"https://shop.example/item/{n % 5}",
                        "hour": hour,
                        "created_at": hour,
                    }
                )
        for start in range(0, len(hits), 5000):
            await session.execute(insert(TrackingHit), hits[start : start + 5000])
    return campaign_id


async def run(ctx: BenchContext) -> None:
    async with ctx.fresh_app() as bench:
        db = bench.app.state.db
        with Timer() as seeding:
            campaign_id = await _seed(db, bench.workspace_id)
        await vacuum_analyze(db)
        report("seed 50k recipients, 25k hits", ctx.backend, seconds=seeding.seconds)
        cases = {
            "report page": f"/app/campaigns/{campaign_id}",
            "report page, recipients page 500": f"/app/campaigns/{campaign_id}?page=500",
            "campaign list": "/app/campaigns",
        }
        async with signed_in(bench) as browser:
            await time_pages(ctx, browser, cases, requests=REQUESTS, label="dashboard campaigns")
