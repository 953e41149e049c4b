"""A delivery worker killed with SIGKILL in the middle of a burst loses nothing, and its claimed
deliveries come back within seconds: after a restart every delivery ends `delivered`, every id
reached the receiver at least once, and the log drains long before the claims' lease (the
real default, 120 s for deliveries) could have run out, so the dead worker's stale heartbeat
is what freed them."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

from sqlalchemy import func, select

from mailroom.core.clock import utcnow
from mailroom.core.ids import new_id
from mailroom.db import bulk_insert
from mailroom.models import Event, WebhookDelivery, WebhookEndpoint
from mailroom.webhooks.delivery import LEASE_SECONDS
from tests.conftest import BACKEND
from tests.reliability.receiver import Receiver

BURST = 2000
# Heartbeat staleness (15 s) plus the drain itself; far below the lease, so passing proves the
# heartbeat path. The figure is printed (pytest -s) for the record.
RECOVERY_LIMIT = 60.0


def _start_worker(cli_env: dict[str, str]) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        **cli_env,
        "MAILROOM_WEBHOOK_ALLOW_NETWORKS": "127.0.0.0/8",
        "MAILROOM_WORKER_POLL_INTERVAL": "0.1",
    }
    env.pop("MAILROOM_WORKER_LEASE_SECONDS", None)  # the real lease: only heartbeats are quick
    return subprocess.Popen(
        [sys.executable, "-m", "mailroom", "worker"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def _delivered(db) -> int:
    async with db.session() as session:
        return int(
            await session.scalar(select(func.count()).where(WebhookDelivery.status == "delivered"))
            or 0
        )


async def _seed(db, workspace_id: str, url: str) -> None:
    now = utcnow()
    async with db.transaction() as session:
        endpoint = WebhookEndpoint(
            workspace_id=workspace_id,
            url=url,
            event_types=["contact.created"],
            filters={},
            secret="whsec_crash",
        )
        session.add(endpoint)
        await session.flush()
        events = [
            {
                "id": new_id(),
                "workspace_id": workspace_id,
                "type": "contact.created",
                "data": {"contact": {"id": f"c{i}"}},
                "list_id": None,
                "tag_id": None,
                "form_id": None,
                "campaign_id": None,
                "domain_id": None,
                "created_at": now,
                "dispatched_at": None,
            }
            for i in range(BURST)
        ]
        await bulk_insert(session, Event, events)
        await bulk_insert(
            session,
            WebhookDelivery,
            [
                {
                    "id": new_id(),
                    "workspace_id": workspace_id,
                    "endpoint_id": endpoint.id,
                    "event_id": event["id"],
                    "event_type": "contact.created",
                    "status": "pending",
                    "run_at": now,
                    "locked_until": None,
                    "locked_by": None,
                    "attempts": 0,
                    "last_status_code": None,
                    "last_error": None,
                    "delivered_at": None,
                    "created_at": now,
                    "updated_at": now,
                }
                for event in events
            ],
        )


async def test_sigkill_mid_burst_loses_nothing_and_recovers_in_seconds(db, factory, cli_env):
    assert RECOVERY_LIMIT < LEASE_SECONDS  # else the lease alone could pass this test
    workspace = await factory.workspace("pro", listen=False)
    async with Receiver() as receiver:
        await _seed(db, workspace.workspace_id, receiver.url())
        worker = _start_worker(cli_env)
        try:
            deadline = time.monotonic() + 60
            while len(receiver.seen) < BURST // 4 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert len(receiver.seen) >= BURST // 4, "the worker never got going"
            worker.send_signal(signal.SIGKILL)
            worker.wait(timeout=10)
        finally:
            if worker.poll() is None:
                worker.kill()
        killed_at = time.monotonic()
        seen_at_kill = len(receiver.seen)
        assert seen_at_kill < BURST, "the burst finished before the kill; make it bigger"
        async with db.session() as session:
            orphaned = int(
                await session.scalar(
                    select(func.count()).where(
                        WebhookDelivery.status == "pending",
                        WebhookDelivery.locked_until > utcnow(),
                    )
                )
                or 0
            )
        assert orphaned > 0, "the kill left no claimed rows; nothing was measured"

        restarted = _start_worker(cli_env)
        try:
            deadline = killed_at + RECOVERY_LIMIT
            while await _delivered(db) < BURST and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            recovery = time.monotonic() - killed_at
        finally:
            restarted.send_signal(signal.SIGTERM)
            try:
                restarted.wait(timeout=20)
            except subprocess.TimeoutExpired:
                restarted.kill()
        duplicates = sum(n - 1 for n in receiver.seen.values() if n > 1)
        print(
            f"\n[{BACKEND}] SIGKILL with {orphaned} claimed rows: log drained {recovery:.1f} s "
            f"after the kill (lease {LEASE_SECONDS} s); {duplicates} duplicate deliveries"
        )

        assert await _delivered(db) == BURST, f"not drained {recovery:.1f} s after the kill"
        async with db.session() as session:
            ids = set((await session.scalars(select(WebhookDelivery.id))).all())
        assert set(receiver.seen) == ids  # every delivery id arrived, at least once
