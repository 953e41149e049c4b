"""Spec, Limits: hourly write throughput per workspace, kept in the database."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
import pytest

from mailroom.app import create_app
from mailroom.core.clock import utcnow
from mailroom.ratelimits import service as ratelimits
from tests.foundation.probe import router as probe_router


@pytest.fixture
def probe(app):
    app.include_router(probe_router)
    return app


async def _write(client, headers):
    return await client.delete("/api/v1/probe/jobs/x", headers=headers)


async def test_free_plan_121st_write_is_429_and_reads_still_work(client, probe, factory):
    free = await factory.workspace("free")
    for i in range(120):
        response = await _write(client, free.headers)
        assert response.status_code == 200, (i, response.text)
    refused = await _write(client, free.headers)
    assert refused.status_code == 429
    retry_after = int(refused.headers["retry-after"])
    assert 1 <= retry_after <= 3600
    assert refused.json()["error"].startswith("Hourly write limit reached (120 on the Free plan)")
    # Writes of another verb are refused too; reads are never counted.
    created = await client.post("/api/v1/probe/jobs", json={"name": "a"}, headers=free.headers)
    assert created.status_code == 429
    for _ in range(5):
        assert (await client.get("/api/v1/account", headers=free.headers)).status_code == 200
    # Another workspace is not affected.
    other = await factory.workspace("free")
    assert (await _write(client, other.headers)).status_code == 200


async def test_starter_allows_600(client, probe, factory, db):
    starter = await factory.workspace("starter")
    # Fill the window directly, then check the edge through the API.
    async with db.transaction() as session:
        for _ in range(599):
            await ratelimits.hit(
                session, f"writes:{starter.workspace_id}", limit=600, window_seconds=3600
            )
    assert (await _write(client, starter.headers)).status_code == 200
    assert (await _write(client, starter.headers)).status_code == 429


async def test_pro_is_unlimited(client, probe, factory):
    pro = await factory.workspace("pro")
    for _ in range(130):
        assert (await _write(client, pro.headers)).status_code == 200


async def test_window_refills_on_its_own(db):
    key = "writes:test-refill"
    start = utcnow() - timedelta(minutes=59, seconds=30)
    async with db.transaction() as session:
        for i in range(3):
            decision = await ratelimits.hit(
                session, key, limit=3, window_seconds=3600, now=start + timedelta(seconds=i)
            )
            assert decision.allowed
        now = start + timedelta(seconds=10)
        refused = await ratelimits.hit(session, key, limit=3, window_seconds=3600, now=now)
        assert not refused.allowed
        # The oldest hit leaves the window at start + 3600 s.
        assert refused.retry_after == 3590
        later = start + timedelta(seconds=3601)
        assert (await ratelimits.hit(session, key, limit=3, window_seconds=3600, now=later)).allowed


async def test_limit_holds_across_server_processes(probe, factory, settings):
    """Two app instances (as two server processes would) share one count."""
    free = await factory.workspace("free")
    second = create_app(settings)
    second.include_router(probe_router)
    try:
        transport_a = httpx.ASGITransport(app=probe)
        transport_b = httpx.ASGITransport(app=second)
        async with (
            httpx.AsyncClient(transport=transport_a, base_url="http://a") as a,
            httpx.AsyncClient(transport=transport_b, base_url="http://b") as b,
        ):
            results = await asyncio.gather(
                *(_write(a if i % 2 else b, free.headers) for i in range(130))
            )
    finally:
        await second.state.db.dispose()
    codes = [r.status_code for r in results]
    assert codes.count(200) == 120
    assert codes.count(429) == 10
