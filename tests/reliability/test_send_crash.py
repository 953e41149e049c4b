"""The crash drill of the sending engine: a `mailroom worker` killed with SIGKILL while a
10,000-recipient campaign is going out to an SMTP sink, then restarted. Every recipient gets
the message, none is skipped, and the duplicates (counted at the sink by Message-ID) are at
most the messages that were in flight at the kill: the rows the dead worker had claimed. Its
claims come back through its stale heartbeat, long before their lease."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections import Counter

from sqlalchemy import func, select

from mailroom.core.clock import utcnow
from mailroom.models import SendLog
from mailroom.sending.engine import LEASE_SECONDS
from tests.conftest import BACKEND
from tests.reliability.campaign_run import (
    alive,
    children_of,
    send_status,
    start_worker,
    verified_campaign,
)
from tests.sending.helpers import ok
from tests.sending.sink import Sink

RECIPIENTS = 10_000
RECOVERY_LIMIT = 120.0  # heartbeat staleness (~15 s) plus sending what is left


async def test_sigkill_mid_campaign_sends_everyone_with_few_duplicates(
    client, db, ws, settings, cli_env
):
    campaign = await verified_campaign(client, db, ws, RECIPIENTS)

    with Sink.threaded() as sink:
        settings.smtp_url = sink.url  # the API's domain check now applies, as in production
        started = await client.post(f"/api/v1/campaigns/{campaign['id']}/send", headers=ws.headers)
        assert (await ok(started, 202))["campaign"]["stats"]["recipients"] == RECIPIENTS

        worker = start_worker(cli_env, sink.url)
        try:
            deadline = time.monotonic() + 120
            while len(sink.received) < RECIPIENTS // 4 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert len(sink.received) >= RECIPIENTS // 4, "the worker never got going"
            builders = children_of(worker.pid)
            assert builders, "the worker has no build process"
            worker.send_signal(signal.SIGKILL)
            worker.wait(timeout=10)
        finally:
            if worker.poll() is None:
                worker.kill()
        killed_at = time.monotonic()
        received_at_kill = len(sink.received)
        while alive(builders) and time.monotonic() - killed_at < 15:
            await asyncio.sleep(0.1)
        assert not alive(builders), "the dead worker's build processes are still running"
        assert received_at_kill < RECIPIENTS, "the campaign finished before the kill"
        async with db.session() as session:
            in_flight = int(
                await session.scalar(
                    select(func.count()).where(
                        SendLog.status == "pending", SendLog.locked_until > utcnow()
                    )
                )
                or 0
            )

        restarted = start_worker(cli_env, sink.url)
        try:
            deadline = killed_at + RECOVERY_LIMIT
            while time.monotonic() < deadline:
                status = await send_status(db, campaign["id"])
                if status.get("pending", 0) == 0:
                    break
                await asyncio.sleep(0.2)
            recovery = time.monotonic() - killed_at
        finally:
            restarted.send_signal(signal.SIGTERM)
            try:
                restarted.wait(timeout=30)
            except subprocess.TimeoutExpired:
                restarted.kill()
        received = sink.received

    by_id = Counter(item.message_id for item in received)
    duplicates = sum(n - 1 for n in by_id.values())
    print(
        f"\n[{BACKEND}] SIGKILL after {received_at_kill} of {RECIPIENTS} messages with "
        f"{in_flight} rows claimed: done {recovery:.1f} s after the kill (lease "
        f"{LEASE_SECONDS} s); {duplicates} duplicates at the sink"
    )
    assert await send_status(db, campaign["id"]) == {"sent": RECIPIENTS}
    assert {item.recipients[0] for item in received} == {
        f"r{i:05d}@mailtest.io" for i in range(RECIPIENTS)
    }
    assert len(by_id) == RECIPIENTS  # one Message-ID per recipient, stable across attempts
    assert duplicates <= in_flight
    finished = await ok(await client.get(f"/api/v1/campaigns/{campaign['id']}", headers=ws.headers))
    assert finished["campaign"]["status"] == "sent"
    assert finished["campaign"]["stats"]["sent"] == RECIPIENTS
