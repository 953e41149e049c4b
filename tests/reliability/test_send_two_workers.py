"""Two `mailroom worker` processes share one campaign: between them every recipient gets the
message exactly once (claims are exclusive: SKIP LOCKED on PostgreSQL, the one writer on
SQLite), and both take part: each worker sends to an SMTP sink of its own, so the two sinks
together hold every message once and neither is empty."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections import Counter

from sqlalchemy import func, select

from mailroom.models.workers import WorkerProcess
from tests.reliability.campaign_run import send_status, start_worker, verified_campaign
from tests.sending.helpers import ok
from tests.sending.sink import Sink

RECIPIENTS = 2_000


async def _until_registered(db, count: int) -> None:
    """Both processes are up (their heartbeat rows exist), so neither gets a head start."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        async with db.session() as session:
            if (await session.scalar(select(func.count()).select_from(WorkerProcess))) >= count:
                return
        await asyncio.sleep(0.1)
    raise AssertionError("the workers did not start")


async def test_two_worker_processes_send_each_recipient_once(client, db, ws, settings, cli_env):
    campaign = await verified_campaign(client, db, ws, RECIPIENTS)
    with Sink.threaded() as first, Sink.threaded() as second:
        settings.smtp_url = first.url
        workers = [start_worker(cli_env, sink.url) for sink in (first, second)]
        try:
            await _until_registered(db, len(workers))
            started = await client.post(
                f"/api/v1/campaigns/{campaign['id']}/send", headers=ws.headers
            )
            await ok(started, 202)
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                if (await send_status(db, campaign["id"])).get("pending", 0) == 0:
                    break
                await asyncio.sleep(0.2)
        finally:
            for worker in workers:
                worker.send_signal(signal.SIGTERM)
            for worker in workers:
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    worker.kill()
        received = first.received + second.received
        shares = (len(first.received), len(second.received))

    assert await send_status(db, campaign["id"]) == {"sent": RECIPIENTS}
    by_id = Counter(item.message_id for item in received)
    assert len(by_id) == RECIPIENTS
    assert [n for n in by_id.values() if n > 1] == []  # nobody twice
    assert {item.recipients[0] for item in received} == {
        f"r{i:05d}@mailtest.io" for i in range(RECIPIENTS)
    }
    assert min(shares) > 0, f"one worker sent everything: {shares}"
    finished = await ok(await client.get(f"/api/v1/campaigns/{campaign['id']}", headers=ws.headers))
    assert finished["campaign"]["status"] == "sent"
    assert finished["campaign"]["stats"]["sent"] == RECIPIENTS
