"""What the dashboard benches share: a person of the bench's workspace signed in through
their one-time link (an httpx client on the app in process), and page timings."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from sqlalchemy import select

from bench.common import BenchContext, percentiles, report
from mailroom.models import Workspace
from mailroom.people import service as people

PASSWORD = "correct horse battery"


@asynccontextmanager
async def signed_in(bench, email: str = "ada@shop.example") -> AsyncIterator[httpx.AsyncClient]:
    db, settings = bench.app.state.db, bench.settings
    async with db.transaction() as session:
        workspace = await session.scalar(
            select(Workspace).where(Workspace.id == bench.workspace_id)
        )
        assert workspace is not None
        person = await people.create_person(
            session, workspace.account_id, email, workspace_id=workspace.id, role="admin"
        )
        link = people.sign_in_link(settings, person)
    browser = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=bench.app), base_url="http://testserver"
    )
    async with browser:
        path = "/app/link/" + link.split("/app/link/")[1]
        signed = await browser.post(path, data={"password": PASSWORD})
        assert signed.status_code == 303, signed.text
        yield browser


async def time_pages(
    ctx: BenchContext,
    browser: httpx.AsyncClient,
    cases: dict[str, str],
    *,
    requests: int,
    label: str,
    aim_ms: float | None = None,
) -> None:
    """GET each case's URL `requests` times after a first visit; report p50/p99 (and the aim
    when there is one) of those, and the first visit's time apart (cold: templates compiled,
    the database's caches filled)."""
    for name, url in cases.items():
        start = time.perf_counter()
        assert (await browser.get(url)).status_code == 200, url
        first_ms = round((time.perf_counter() - start) * 1000, 2)
        samples = []
        for _ in range(requests):
            start = time.perf_counter()
            answer = await browser.get(url)
            samples.append((time.perf_counter() - start) * 1000)
            assert answer.status_code == 200, (url, answer.status_code)
        figures = percentiles(samples)
        extra = {}
        if aim_ms is not None:
            extra[f"aim_p99_under_{aim_ms:g}_ms"] = "met" if figures["p99"] < aim_ms else "not met"
        report(
            f"{label}: {name}",
            ctx.backend,
            requests=requests,
            p50_ms=figures["p50"],
            p99_ms=figures["p99"],
            first_ms=first_ms,
            **extra,
        )
