"""A delivery worker killed with SIGKILL in the middle of a burst loses nothing: after a
restart every delivery ends `delivered` and every id reached the receiver at least once."""

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
from tests.reliability.receiver import Receiver

BURST = 2000


def _start_worker(cli_env: dict[str, str]) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        **cli_env,
        "MAILROOM_WEBHOOK_ALLOW_NETWORKS": "127.0.0.0/8",
        "MAILROOM_WORKER_LEASE_SECONDS": "3",
        "MAILROOM_WORKER_POLL_INTERVAL": "0.1",
    }
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


async def test_sigkill_mid_burst_loses_nothing(db, factory, cli_env):
    workspace = await factory.workspace("pro", listen=False)
    async with Receiver() as receiver:
        now = utcnow()
        async with db.transaction() as session:
            endpoint = WebhookEndpoint(
                workspace_id=workspace.workspace_id,
                url=receiver.url(),
                event_types=["contact.created"],
                filters={},
                secret="whsec_crash",
            )
            session.add(endpoint)
            await session.flush()
            events = [
                {
                    "id": new_id(),
                    "workspace_id": workspace.workspace_id,
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
                        "workspace_id": workspace.workspace_id,
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
        killed_at = len(receiver.seen)
        assert killed_at < BURST, "the burst finished before the kill; make it bigger"

        restarted = _start_worker(cli_env)
        try:
            deadline = time.monotonic() + 120
            while await _delivered(db) < BURST and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
        finally:
            restarted.send_signal(signal.SIGTERM)
            try:
                restarted.wait(timeout=20)
            except subprocess.TimeoutExpired:
                restarted.kill()

        assert await _delivered(db) == BURST
        async with db.session() as session:
            ids = set((await session.scalars(select(WebhookDelivery.id))).all())
        assert set(receiver.seen) == ids  # every delivery id arrived, at least once
