"""The background host: runs every due-work loop until told to stop.

`mailroom worker` runs it alone; `mailroom serve` runs it in-process unless `--no-worker`.
Each loop ticks, and sleeps only when a tick found nothing to do. Stopping (SIGTERM) lets the
current tick finish; rows a killed worker leaves half-done are leased, so another worker picks
them up when the lease runs out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mailroom.audit import service as audit_service
from mailroom.db import Database
from mailroom.jobs import service as jobs_service
from mailroom.ratelimits import service as ratelimits
from mailroom.settings import Settings
from mailroom.webhooks import log as webhook_log
from mailroom.webhooks.delivery import DeliveryWorker

log = logging.getLogger("mailroom.worker")


@dataclass(frozen=True)
class WorkerContext:
    db: Database
    settings: Settings
    worker_id: str


@dataclass(frozen=True)
class Loop:
    name: str
    tick: Callable[[WorkerContext], Awaitable[int]]  # returns how much work it did
    idle_seconds: float  # pause after a tick that did nothing
    close: Callable[[WorkerContext], Awaitable[None]] | None = None  # after the last tick


async def _jobs(ctx: WorkerContext) -> int:
    return await jobs_service.work_due_jobs(
        ctx.db, worker_id=ctx.worker_id, lease_seconds=ctx.settings.worker_lease_seconds
    )


async def _prune_audit_log(ctx: WorkerContext) -> int:
    async with ctx.db.transaction() as session:
        removed = await audit_service.prune(session)
    if removed:
        log.info("pruned %d audit entries older than 12 months", removed)
    return 0  # daily: never loop straight back


async def _prune_rate_limits(ctx: WorkerContext) -> int:
    async with ctx.db.transaction() as session:
        await ratelimits.prune(session)
    return 0


async def _prune_webhook_log(ctx: WorkerContext) -> int:
    async with ctx.db.transaction() as session:
        removed = await webhook_log.prune(session)
    if removed:
        log.info("pruned %d finished webhook deliveries", removed)
    return 0


def default_loops(settings: Settings) -> list[Loop]:
    deliveries = DeliveryWorker(settings)

    async def close_deliveries(ctx: WorkerContext) -> None:
        await deliveries.close(ctx.db)

    return [
        Loop(
            "webhook-deliveries",
            deliveries.tick,
            min(0.2, settings.worker_poll_interval),
            close_deliveries,
        ),
        Loop("jobs", _jobs, settings.worker_poll_interval),
        Loop("prune-audit-log", _prune_audit_log, 24 * 3600),
        Loop("prune-rate-limits", _prune_rate_limits, 600),
        Loop("prune-webhook-log", _prune_webhook_log, 24 * 3600),
    ]


class WorkerHost:
    def __init__(self, db: Database, settings: Settings, loops: list[Loop] | None = None) -> None:
        self.ctx = WorkerContext(db, settings, f"{socket.gethostname()}:{os.getpid()}")
        self.loops = loops if loops is not None else default_loops(settings)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        log.info("worker %s running loops: %s", self.ctx.worker_id, [lp.name for lp in self.loops])
        try:
            await asyncio.gather(*(self._run_loop(loop) for loop in self.loops))
        finally:
            for loop in self.loops:
                if loop.close is not None:
                    try:
                        await loop.close(self.ctx)
                    except Exception:
                        log.exception("closing loop %s failed", loop.name)
        log.info("worker %s stopped", self.ctx.worker_id)

    async def _run_loop(self, loop: Loop) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                done = await loop.tick(self.ctx)
                failures = 0
            except Exception:
                failures += 1
                log.exception("loop %s failed (%d in a row)", loop.name, failures)
                done = 0
            if done:
                await asyncio.sleep(0)  # let other loops and requests in
                continue
            pause = loop.idle_seconds if not failures else min(60.0, 2.0**failures)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=pause)

    def stop(self) -> None:
        self._stop.set()

    def start(self) -> None:
        """Run in the background of the current event loop (in-process with the server)."""
        self._task = asyncio.create_task(self.run(), name="mailroom-worker")

    async def join(self, grace_seconds: float = 30.0) -> None:
        if self._task is None:
            return
        try:
            await asyncio.wait_for(self._task, timeout=grace_seconds)
        except TimeoutError:
            log.warning("worker did not stop within %ss; cancelling", grace_seconds)
            self._task.cancel()


async def run_forever(settings: Settings) -> None:
    """`mailroom worker`: the loops alone, stopping cleanly on SIGTERM or SIGINT."""
    db = Database(settings.resolved_database_url)
    host = WorkerHost(db, settings)
    running = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        running.add_signal_handler(sig, host.stop)
    try:
        await host.run()
    finally:
        await db.dispose()
