"""Issue 17: dashboard page render times for a signed-in admin (the full stack in process:
session lookup, the person's principal, the page's queries, the template), with 30 API keys,
30 people, 20 webhook endpoints (one with 2,000 logged deliveries) and 10,000 suppressed
addresses in the workspace. Aim: p99 under 100 ms."""

from __future__ import annotations

from sqlalchemy import select

from bench.common import BenchContext
from bench.dashboard_pages import signed_in, time_pages
from mailroom.accounts import service as accounts
from mailroom.core.context import Context
from mailroom.models import Event, WebhookDelivery, WebhookEndpoint, Workspace
from mailroom.people import service as people
from mailroom.suppressions import importer

REQUESTS = 200
PAGES = (
    "/app",
    "/settings/api-keys",
    "/settings/people",
    "/settings/webhooks",
    "/settings/webhooks/{endpoint}",
    "/settings/sending",
    "/settings/suppressions",
    "/settings/suppressions?reason=bounced&domain=example",
    "/settings/audit-log",
    "/settings/account",
)


async def _webhooks(session, workspace_id: str) -> str:
    """20 endpoints; the first has 2,000 delivered events in its log. Its id."""
    endpoints = [
        WebhookEndpoint(
            workspace_id=workspace_id,
            url=f"https://hooks.example.com/{n}",
            description=f"Endpoint {n}",
            channel="server",
            event_types=["contact.created", "email.opened"],
            filters={},
            enabled=True,
            secret="whsec_bench",
        )
        for n in range(20)
    ]
    session.add_all(endpoints)
    await session.flush()
    for n in range(2000):
        event = Event(
            workspace_id=workspace_id,
            type="contact.created",
            data={"contact": {"id": f"c{n}", "email": f"c{n}@example.com"}},
        )
        session.add(event)
        await session.flush()
        session.add(
            WebhookDelivery(
                workspace_id=workspace_id,
                endpoint_id=endpoints[0].id,
                event_id=event.id,
                event_type="contact.created",
                status="delivered",
                attempts=1,
                last_status_code=200,
            )
        )
    return endpoints[0].id


async def run(ctx: BenchContext) -> None:
    async with ctx.fresh_app() as bench:
        db, settings = bench.app.state.db, bench.settings
        async with db.transaction() as session:
            workspace = await session.scalar(
                select(Workspace).where(Workspace.id == bench.workspace_id)
            )
            assert workspace is not None
            for n in range(30):
                await accounts.create_key(session, workspace.id, name=f"Key {n}")
                await people.create_person(
                    session, workspace.account_id, f"p{n}@shop.example", workspace_id=workspace.id
                )
            endpoint = await _webhooks(session, workspace.id)
            principal = await accounts.principal_for_workspace(session, workspace.id)
            pairs = [(f"s{n}@example{n % 50}.com", None) for n in range(10_000)]
            await importer.import_entries(Context(session, principal, settings), pairs, "bounced")
        async with signed_in(bench) as browser:
            cases = {template: template.format(endpoint=endpoint) for template in PAGES}
            await time_pages(
                ctx, browser, cases, requests=REQUESTS, label="dashboard GET", aim_ms=100
            )
