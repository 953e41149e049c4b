"""Issue 18: the dashboard's Contacts page at 100,000 contacts for a signed-in person (session,
principal, the API's contact query, the picker lists, the template), with search and filters,
and a contact's own page. Aim: p99 under 150 ms."""

from __future__ import annotations

from sqlalchemy import select

from bench.bench_contacts_list import seed, vacuum_analyze
from bench.common import BenchContext, Timer, report
from bench.dashboard_pages import signed_in, time_pages
from mailroom.models import Contact

REQUESTS = 100


async def run(ctx: BenchContext) -> None:
    async with ctx.fresh_app() as bench:
        db = bench.app.state.db
        with Timer() as seeding:
            tag_id = await seed(db, bench.workspace_id)
        await vacuum_analyze(db)
        report("seed 100k contacts", ctx.backend, seconds=seeding.seconds)
        async with db.session() as session:
            contact_id = await session.scalar(
                select(Contact.id).where(Contact.workspace_id == bench.workspace_id).limit(1)
            )
        cases = {
            "first page": "/app/contacts",
            "q=smith": "/app/contacts?q=smith",
            "q=ines.ro (rare)": "/app/contacts?q=ines.ro",
            "tag filter": f"/app/contacts?tag={tag_id}",
            "status=unsubscribed": "/app/contacts?status=unsubscribed",
            "sort=email, page 50": "/app/contacts?sort=email&page=50",
            "a contact's page": f"/app/contacts/{contact_id}",
        }
        async with signed_in(bench) as browser:
            await time_pages(
                ctx, browser, cases, requests=REQUESTS, label="dashboard contacts", aim_ms=150
            )
