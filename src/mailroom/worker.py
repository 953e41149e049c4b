"""The background host: runs every due-work loop until told to stop.

`mailroom worker` runs it alone; `mailroom serve` runs it in-process unless `--no-worker`.
Each loop ticks, and sleeps only when a tick found nothing to do. Stopping (SIGTERM) lets the
current tick finish, then hands back every row the host still holds and removes its heartbeat
row. A killed host cannot do that: its heartbeat goes stale, and `db.claim_due` gives its rows
to other workers about 15 s later (the lease remains the backstop).

A server process without the loops (`mailroom serve --no-worker`, each of its processes) keeps
a heartbeat row too, of role "server" (`ServerHeartbeat`): it holds no rows, and only shows
that Mailroom is running there (`mailroom restore` refuses while anything is).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import signal
import socket
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, func, update

from mailroom.accounts import service as accounts_service
from mailroom.assistants import upkeep as assistants_upkeep
from mailroom.audit import service as audit_service
from mailroom.automations import anniversaries
from mailroom.automations import runner as automation_runner
from mailroom.background import Loop, WorkerContext
from mailroom.campaigns import ab_test as ab_tests
from mailroom.campaigns import actions as campaign_actions
from mailroom.core import multiprocess
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.db import HEARTBEAT_SECONDS, Database, due_work_models
from mailroom.domains import dmarc
from mailroom.domains import service as domains_service
from mailroom.ecommerce import abandon as ecommerce_abandon
from mailroom.ecommerce import deliveries as store_deliveries
from mailroom.forms import upkeep as form_upkeep
from mailroom.jobs import service as jobs_service
from mailroom.models import WorkerProcess
from mailroom.platform_imports import runner as platform_imports
from mailroom.ratelimits import service as ratelimits
from mailroom.rss import issues as rss_issues
from mailroom.sending import limits as send_limits
from mailroom.sending.engine import SendEngine
from mailroom.settings import Settings
from mailroom.web import idempotency
from mailroom.webhooks import log as webhook_log
from mailroom.webhooks.delivery import DeliveryWorker

log = logging.getLogger("mailroom.worker")


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


async def _prune_assistants(ctx: WorkerContext) -> int:
    async with ctx.db.transaction() as session:
        removed = await assistants_upkeep.prune(session)
    if removed:
        log.info("pruned %d expired assistant tokens, codes and grants", removed)
    return 0


async def _prune_rate_limits(ctx: WorkerContext) -> int:
    async with ctx.db.transaction() as session:
        await ratelimits.prune(session)
    return 0


async def _recheck_domains(ctx: WorkerContext) -> int:
    return await domains_service.recheck_due(ctx.db, ctx.settings)


def _contexts(ctx: WorkerContext) -> Any:
    """A workspace's `Context` in a session: what a service call from the worker acts as."""

    async def context_for(session: Any, workspace_id: str) -> Context:
        principal = await accounts_service.principal_for_workspace(session, workspace_id)
        return Context(session, principal, ctx.settings)

    return context_for


async def _start_scheduled_campaigns(ctx: WorkerContext) -> int:
    return await campaign_actions.start_due(_contexts(ctx), ctx.db, ctx.settings)


async def _decide_ab_tests(ctx: WorkerContext) -> int:
    return await ab_tests.decide_due(_contexts(ctx), ctx.db)


async def _run_rss_feeds(ctx: WorkerContext) -> int:
    return await rss_issues.run_due(ctx.db, _contexts(ctx))


async def _run_platform_imports(ctx: WorkerContext) -> int:
    return await platform_imports.run_due(ctx.db, _contexts(ctx), ctx.settings, ctx.worker_id)


async def _prune_sending(ctx: WorkerContext) -> int:
    async with ctx.db.transaction() as session:
        await idempotency.prune(session)
        await send_limits.prune(session, utcnow())
        await dmarc.prune(session, utcnow())
    return 0


async def _prune_store_deliveries(ctx: WorkerContext) -> int:
    async with ctx.db.transaction() as session:
        removed = await store_deliveries.prune(session)
    if removed:
        log.info("pruned %d store platform deliveries older than 30 days", removed)
    return 0


async def _prune_webhook_log(ctx: WorkerContext) -> int:
    async with ctx.db.transaction() as session:
        removed = await webhook_log.prune(session)
    if removed:
        log.info("pruned %d finished webhook deliveries", removed)
    return 0


def default_loops(settings: Settings) -> list[Loop]:
    deliveries = DeliveryWorker(settings)
    engine = SendEngine(settings)

    async def close_deliveries(ctx: WorkerContext) -> None:
        await deliveries.close(ctx.db)

    return [
        Loop("sending", engine.tick, min(0.1, settings.worker_poll_interval), engine.close),
        Loop("scheduled-campaigns", _start_scheduled_campaigns, 2.0),
        Loop("ab-tests", _decide_ab_tests, 10.0),
        # The shortest feed schedule is every 5 minutes: looking twice a minute is on time.
        Loop("rss-feeds", _run_rss_feeds, 30),
        Loop("platform-imports", _run_platform_imports, settings.worker_poll_interval),
        Loop("automations", automation_runner.tick, min(0.5, settings.worker_poll_interval)),
        # Anniversary enrolments are per day at a minute: looking each minute is on time.
        Loop("anniversaries", anniversaries.tick, 60),
        Loop("abandon-carts", ecommerce_abandon.tick, ecommerce_abandon.IDLE_SECONDS),
        Loop("prune-sending", _prune_sending, 3600),
        Loop(
            "webhook-deliveries",
            deliveries.tick,
            # An idle tick is one read (no write-lock turn on SQLite): polling often is cheap.
            min(0.05, settings.worker_poll_interval),
            close_deliveries,
        ),
        Loop("jobs", _jobs, settings.worker_poll_interval),
        Loop("prune-audit-log", _prune_audit_log, 24 * 3600),
        Loop("prune-rate-limits", _prune_rate_limits, 600),
        Loop("prune-assistants", _prune_assistants, 3600),
        Loop("prune-form-submissions", form_upkeep.tick, 3600),
        Loop("prune-webhook-log", _prune_webhook_log, 24 * 3600),
        Loop("prune-store-deliveries", _prune_store_deliveries, 24 * 3600),
        # Each verified domain is due a day after its last check; looking every 15 minutes
        # keeps that within the quarter hour.
        Loop("recheck-domains", _recheck_domains, 900),
    ]


# A dead host's row only serves to free its claims, which its leases free anyway after minutes.
FORGET_DEAD_AFTER = timedelta(days=1)

# The roles of a row in `workers`: a worker runs the loops and claims rows; a server only beats.
WORKER = "worker"
SERVER = "server"


def new_worker_id() -> str:
    # The random part: a restarted container often has the same host name and pid as the
    # process it replaces, and must not inherit that dead process's claims as its own.
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(4)}"


def _db_now(db: Database) -> Any:
    # PostgreSQL heartbeats use the server's clock, as `db.dead_workers` judges them by it.
    return utcnow() if db.is_sqlite else func.now()


async def beat(db: Database, worker_id: str, role: str = WORKER) -> None:
    """Refresh the process's heartbeat (its row is made again, of `role`, if something removed
    it)."""
    async with db.transaction() as session:
        result = await session.execute(
            update(WorkerProcess)
            .where(WorkerProcess.id == worker_id)
            .values(heartbeat_at=_db_now(db))
        )
        if not getattr(result, "rowcount", 0):
            host, pid, _ = worker_id.rsplit(":", 2)
            session.add(
                WorkerProcess(
                    id=worker_id,
                    host=host,
                    pid=int(pid),
                    started_at=_db_now(db),
                    heartbeat_at=_db_now(db),
                    role=role,
                )
            )


async def register(db: Database, worker_id: str, role: str = WORKER) -> None:
    """The process's first beat, after removing the rows of processes dead for a day, of every
    role (a killed server's row as well as a killed worker's)."""
    async with db.transaction() as session:
        await session.execute(
            delete(WorkerProcess).where(WorkerProcess.heartbeat_at < utcnow() - FORGET_DEAD_AFTER)
        )
    await beat(db, worker_id, role)


async def retire(db: Database, worker_id: str, role: str = WORKER) -> int:
    """Hand back every row the host still holds (claimable at once) and remove its row. A
    server never holds rows: only its row is removed."""
    released = 0
    async with db.transaction() as session:
        for model in due_work_models() if role == WORKER else []:
            result = await session.execute(
                update(model)
                .where(model.status == "pending", model.locked_by == worker_id)
                .values(locked_until=None, locked_by=None)
                .execution_options(synchronize_session=False)
            )
            released += int(getattr(result, "rowcount", 0) or 0)
        await session.execute(delete(WorkerProcess).where(WorkerProcess.id == worker_id))
    return released


async def _beat_forever(db: Database, worker_id: str, role: str) -> None:
    """Beat every HEARTBEAT_SECONDS until cancelled (a failed beat is logged; the next one may
    succeed)."""
    while True:
        await asyncio.sleep(HEARTBEAT_SECONDS)
        try:
            await beat(db, worker_id, role)
        except Exception:
            log.exception("%s %s heartbeat failed", role, worker_id)


class ServerHeartbeat:
    """The heartbeat row (role "server") of a server process that runs no worker loops: made
    when it starts, refreshed as a worker's is, removed when it stops cleanly. A server with
    the loops needs none: its worker's row says it is running."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.id = new_worker_id()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        try:
            await register(self.db, self.id, SERVER)
        except Exception:  # serve anyway: the next beat makes the row
            log.exception("server %s could not register its heartbeat", self.id)
        self._task = asyncio.create_task(
            _beat_forever(self.db, self.id, SERVER), name="mailroom-server-heartbeat"
        )

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        try:
            await retire(self.db, self.id, SERVER)
        except Exception:
            log.exception("server %s could not remove its heartbeat row", self.id)


class WorkerHost:
    def __init__(self, db: Database, settings: Settings, loops: list[Loop] | None = None) -> None:
        self.ctx = WorkerContext(db, settings, new_worker_id())
        self.loops = loops if loops is not None else default_loops(settings)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        log.info("worker %s running loops: %s", self.ctx.worker_id, [lp.name for lp in self.loops])
        try:
            await register(self.ctx.db, self.ctx.worker_id)
        except Exception:  # the loops still run; their claims fall back on the lease
            log.exception("worker %s could not register its heartbeat", self.ctx.worker_id)
        heartbeat = asyncio.create_task(self._heartbeat(), name="mailroom-worker-heartbeat")
        bounces = await self._start_bounce_listener()
        try:
            await asyncio.gather(*(self._run_loop(loop) for loop in self.loops))
        finally:
            if bounces is not None:
                bounces.close()
            for loop in self.loops:
                if loop.close is not None:
                    try:
                        await loop.close(self.ctx)
                    except Exception:
                        log.exception("closing loop %s failed", loop.name)
            # Beat until the loops have closed (a delivery drain may take seconds), then go.
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
            try:
                released = await retire(self.ctx.db, self.ctx.worker_id)
                if released:
                    log.info("worker %s handed back %d claimed rows", self.ctx.worker_id, released)
            except Exception:
                log.exception("worker %s could not hand back its claims", self.ctx.worker_id)
        log.info("worker %s stopped", self.ctx.worker_id)

    async def _start_bounce_listener(self) -> asyncio.Server | None:
        address = self.ctx.settings.bounce_smtp
        if not address:
            return None
        from mailroom.bounces import listener

        try:
            server, _handler = await listener.start(self.ctx.db, self.ctx.settings, address)
        except (OSError, ValueError):
            log.exception("the bounce listener could not start on %s", address)
            return None
        return server

    async def _heartbeat(self) -> None:
        await _beat_forever(self.ctx.db, self.ctx.worker_id, WORKER)

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
        multiprocess.process_exited()
