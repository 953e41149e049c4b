"""`GET /metrics`: the processes' metrics (core.metrics, summed over every process in the
multiprocess mode) and the queues as the database holds them at scrape time.

Who may scrape: a loopback client (127.0.0.0/8, ::1) that did not come through a proxy (a
request carrying forwarding headers came from elsewhere, whatever its peer address) unless
`MAILROOM_METRICS_TOKEN` is set; then `Authorization: Bearer <token>` from anywhere, loopback
included, and nothing without it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import secrets
from datetime import datetime
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from sqlalchemy import case, func, select

from mailroom.core import metrics, multiprocess
from mailroom.core.clock import utcnow
from mailroom.core.errors import ApiError
from mailroom.db import HEARTBEAT_STALE_SECONDS, Database
from mailroom.models import AutomationRun, Job, PlatformImport, SendLog, WebhookDelivery
from mailroom.models.workers import WorkerProcess
from mailroom.settings import Settings

# The queues of due work, by the name the metrics give them.
QUEUES: dict[str, Any] = {
    "send": SendLog,
    "webhooks": WebhookDelivery,
    "automations": AutomationRun,
    "jobs": Job,
    "platform_imports": PlatformImport,
}
FORWARDING_HEADERS = ("forwarded", "x-real-ip")  # and every x-forwarded-*
SHOWN_FOR_SECONDS = 3600
log = logging.getLogger("mailroom.metrics")
LOOPBACK_ONLY = (
    "Metrics are served to loopback clients only; set MAILROOM_METRICS_TOKEN to scrape "
    "from elsewhere"
)
TOKEN_NEEDED = "Metrics need Authorization: Bearer <MAILROOM_METRICS_TOKEN>"


def check_access(settings: Settings, client: str | None, headers: Any) -> None:
    token = settings.metrics_token
    if token:
        given = str(headers.get("authorization") or "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(
            value.strip().encode(), token.encode()
        ):
            raise ApiError(401, TOKEN_NEEDED, headers={"WWW-Authenticate": "Bearer"})
        return
    forwarded = any(
        name in FORWARDING_HEADERS or name.startswith("x-forwarded-") for name in headers
    )
    if forwarded or not _loopback(client):
        raise ApiError(403, LOOPBACK_ONLY)


def _loopback(client: str | None) -> bool:
    try:
        address = ipaddress.ip_address(client or "")
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 from a dual-stack bind
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


def _collect_processes() -> bytes:
    """The files of processes that are gone compacted (core.multiprocess), then every
    process's figures read while no compaction can move a value from one file to another."""
    multiprocess.forget_dead_processes()
    processes = CollectorRegistry()
    MultiProcessCollector(processes)
    with multiprocess.reading():
        return generate_latest(processes)


async def exposition(db: Database) -> bytes:
    """The text exposition: the processes' metrics, then the database's figures (or, while
    the database does not answer, `mailroom_database_up 0`: the processes' figures matter
    most then)."""
    try:
        figures: dict[str, Any] | None = await read_figures(db)
    except Exception:  # any failure to read the database is "down"; the rest still answers
        log.warning("metrics: the database could not be read", exc_info=True)
        figures = None
    if metrics.MULTIPROCESS:
        # Off the event loop: a compaction another process makes holds the lock this waits
        # for, and the files are read and written with blocking calls.
        collected = await asyncio.to_thread(_collect_processes)
    else:
        collected = generate_latest(REGISTRY)
    database = CollectorRegistry()
    database.register(_Figures(figures))
    return collected + generate_latest(database)


async def read_figures(db: Database) -> dict[str, Any]:
    """Queue depths and ages, jobs by kind and status, worker heartbeats: one short read."""
    now = utcnow()
    queues: dict[str, tuple[int, int, datetime | None]] = {}
    async with db.session(write=False) as session:
        for name, model in QUEUES.items():
            due = model.run_at <= now
            pending, due_count, oldest = (
                await session.execute(
                    select(
                        func.count(),
                        func.coalesce(func.sum(case((due, 1), else_=0)), 0),
                        func.min(case((due, model.run_at), else_=None)),
                    ).where(model.status == "pending")
                )
            ).one()
            queues[name] = (int(pending), int(due_count), oldest)
        jobs = (
            await session.execute(
                select(Job.kind, Job.status, func.count()).group_by(Job.kind, Job.status)
            )
        ).all()
        workers = (
            await session.execute(
                select(WorkerProcess.id, WorkerProcess.heartbeat_at).where(
                    WorkerProcess.role == "worker"
                )
            )
        ).all()
    return {"now": now, "queues": queues, "jobs": jobs, "workers": workers}


class _Figures:
    """A collector of figures read beforehand (collectors are synchronous; the reads not)."""

    def __init__(self, figures: dict[str, Any] | None) -> None:
        self.figures = figures

    def collect(self) -> Any:
        yield GaugeMetricFamily(
            "mailroom_database_up",
            "1 when the database answered this scrape, else 0.",
            value=0 if self.figures is None else 1,
        )
        if self.figures is None:
            return
        now: datetime = self.figures["now"]
        pending = GaugeMetricFamily(
            "mailroom_queue_pending",
            "Rows waiting in each queue (due or scheduled).",
            labels=["queue"],
        )
        due = GaugeMetricFamily(
            "mailroom_queue_due", "Rows in each queue due now (to be worked on).", labels=["queue"]
        )
        oldest = GaugeMetricFamily(
            "mailroom_queue_oldest_due_seconds",
            "Age of the oldest due row of each queue (0 when none is due): a queue's lag.",
            labels=["queue"],
        )
        for name, (count, due_count, first) in self.figures["queues"].items():
            pending.add_metric([name], count)
            due.add_metric([name], due_count)
            age = max(0.0, (now - first).total_seconds()) if first is not None else 0.0
            oldest.add_metric([name], age)
        yield from (pending, due, oldest)
        jobs = GaugeMetricFamily(
            "mailroom_jobs", "Import and export jobs by kind and status.", labels=["kind", "status"]
        )
        for kind, status, count in self.figures["jobs"]:
            jobs.add_metric([kind, status], count)
        yield jobs
        beats = GaugeMetricFamily(
            "mailroom_worker_heartbeat_age_seconds",
            f"Seconds since each worker's last heartbeat (dead past {HEARTBEAT_STALE_SECONDS}); "
            "workers silent for an hour are no longer shown.",
            labels=["worker"],
        )
        alive = 0
        for worker_id, beat in self.figures["workers"]:
            age = max(0.0, (now - beat).total_seconds())
            alive += age <= HEARTBEAT_STALE_SECONDS
            if age <= SHOWN_FOR_SECONDS:
                beats.add_metric([worker_id], age)
        yield beats
        yield GaugeMetricFamily(
            "mailroom_workers",
            f"Worker processes alive (a heartbeat in the last {HEARTBEAT_STALE_SECONDS} s).",
            value=alive,
        )
