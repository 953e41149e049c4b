"""One-off background jobs: enqueue in the caller's transaction, worked by the worker host.

A job's handler runs in the same transaction that marks the job done, so its database effects
happen exactly once even though a crashed worker's job is claimed again (see `db.claim_due`).
That transaction holds a connection (on SQLite the single write connection) while the handler
runs: a handler that calls out over the network must do so before or after its writes, in a
transaction of its own, never inside this one.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.core import logs
from mailroom.core.clock import utcnow
from mailroom.db import Database, claim_due
from mailroom.models import Job

log = logging.getLogger("mailroom.jobs")

MAX_ATTEMPTS = 5
JobHandler = Callable[[AsyncSession, Job], Awaitable[None]]
_handlers: dict[str, JobHandler] = {}


def handler(kind: str) -> Callable[[JobHandler], JobHandler]:
    """Register the function that works jobs of `kind`."""

    def register(func: JobHandler) -> JobHandler:
        _handlers[kind] = func
        return func

    return register


async def enqueue(
    session: AsyncSession,
    kind: str,
    payload: dict[str, Any] | None = None,
    *,
    workspace_id: str | None = None,
    run_at: datetime | None = None,
) -> Job:
    job = Job(
        kind=kind, payload=payload or {}, workspace_id=workspace_id, run_at=run_at or utcnow()
    )
    session.add(job)
    await session.flush()
    return job


def _backoff(attempts: int) -> timedelta:
    return timedelta(seconds=min(3600, 10 * 4 ** (attempts - 1)))


async def work_due_jobs(
    db: Database, *, worker_id: str, lease_seconds: int, limit: int = 20
) -> int:
    async with db.transaction() as session:
        claimed = await claim_due(
            session, Job, worker_id=worker_id, limit=limit, lease_seconds=lease_seconds
        )
        ids = [job.id for job in claimed]
    for job_id in ids:
        await _work_one(db, job_id)
    return len(ids)


async def _work_one(db: Database, job_id: str) -> None:
    carried = logs.REQUEST_ID.set(None)
    try:
        await _run_one(db, job_id)
    finally:
        logs.REQUEST_ID.reset(carried)


async def _run_one(db: Database, job_id: str) -> None:
    try:
        async with db.transaction() as session:
            job = await session.get(Job, job_id)
            if job is None or job.status != "pending":
                return
            logs.REQUEST_ID.set(job.request_id)  # its lines carry the request that queued it
            func = _handlers.get(job.kind)
            if func is None:
                raise LookupError(f"no handler for job kind {job.kind!r}")
            await func(session, job)
            job.status = "done"
            job.attempts += 1
            job.finished_at = utcnow()
            job.locked_until = None
    except Exception as exc:
        log.exception("job %s failed", job_id)
        async with db.transaction() as session:
            job = await session.get(Job, job_id)
            if job is None:
                return
            job.attempts += 1
            job.last_error = f"{type(exc).__name__}: {exc}"[:2000]
            job.locked_until = None
            if job.attempts >= MAX_ATTEMPTS:
                job.status = "failed"
                job.finished_at = utcnow()
            else:
                job.run_at = utcnow() + _backoff(job.attempts)
