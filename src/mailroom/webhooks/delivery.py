"""The delivery worker: claims due deliveries, sends them concurrently, records the outcomes.

- Claims with `claim_due` (leases; SKIP LOCKED on PostgreSQL), so several workers share the
  work and a killed worker's deliveries come back when their lease runs out (at-least-once,
  always with the same delivery id).
- Many requests in flight at once over one pooled client; a per-endpoint cap keeps one slow
  receiver from taking every slot (its excess claims are handed back at once).
- Outcomes are written in batches: delivered, or retried after the configured delays (with
  jitter) until the fifth attempt fails; 20 deliveries failing in a row disable the endpoint
  and abandon its queue.
"""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import aiohttp
from sqlalchemy import bindparam, select, update

from mailroom.core import urlguard
from mailroom.core.clock import utcnow
from mailroom.db import Database, claim_due
from mailroom.models import Event, WebhookDelivery, WebhookEndpoint, Workspace
from mailroom.settings import Settings
from mailroom.webhooks import client
from mailroom.webhooks.envelope import request_for

if TYPE_CHECKING:
    from mailroom.worker import WorkerContext

log = logging.getLogger("mailroom.webhooks")

MAX_ATTEMPTS = 5
DISABLE_AFTER = 20
MAX_IN_FLIGHT = 200
PER_ENDPOINT = 16
CLAIM_BATCH = 500
LEASE_SECONDS = 120


@dataclass
class Job:
    delivery_id: str
    endpoint_id: str
    attempts: int  # before this attempt
    url: str
    channel: str
    secret: str
    enabled: bool
    event_type: str
    created_at: datetime
    data: dict[str, Any]
    workspace_name: str


@dataclass
class Outcome:
    job: Job
    attempt: client.Attempt | None  # None: abandoned without sending
    finished_at: datetime = field(default_factory=utcnow)


class DeliveryWorker:
    """One per worker process; `tick` is its loop (see worker.py)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.allowed = urlguard.parse_networks(settings.webhook_allow_networks)
        self.tasks: set[asyncio.Task[None]] = set()
        self.per_endpoint: dict[str, int] = {}
        self.outcomes: list[Outcome] = []
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = client.make_session(
                self.allowed, limit=MAX_IN_FLIGHT, per_host=PER_ENDPOINT
            )
        return self._session

    async def tick(self, ctx: WorkerContext) -> int:
        await self.flush(ctx.db)
        free = MAX_IN_FLIGHT - len(self.tasks)
        started = await self._start(ctx, free) if free > 0 else 0
        if started:
            return started
        if self.tasks:  # nothing new: wait for something in flight to finish
            await asyncio.wait(self.tasks, timeout=0.05, return_when=asyncio.FIRST_COMPLETED)
            return 1
        return 0

    async def _start(self, ctx: WorkerContext, free: int) -> int:
        saturated = [e for e, n in self.per_endpoint.items() if n >= PER_ENDPOINT]
        async with ctx.db.transaction() as session:
            claimed = await claim_due(
                session,
                WebhookDelivery,
                worker_id=ctx.worker_id,
                limit=min(free, CLAIM_BATCH),
                lease_seconds=min(LEASE_SECONDS, ctx.settings.worker_lease_seconds),
                where=[WebhookDelivery.endpoint_id.not_in(saturated)] if saturated else [],
            )
            if not claimed:
                return 0
            jobs = await _load_jobs(session, [d.id for d in claimed])
            # Over an endpoint's cap: hand the lease back at once for another tick to take.
            keep: list[Job] = []
            counts = dict(self.per_endpoint)
            handed_back: list[str] = []
            for job in jobs:
                if counts.get(job.endpoint_id, 0) >= PER_ENDPOINT:
                    handed_back.append(job.delivery_id)
                    continue
                counts[job.endpoint_id] = counts.get(job.endpoint_id, 0) + 1
                keep.append(job)
            if handed_back:
                await session.execute(
                    update(WebhookDelivery)
                    .where(WebhookDelivery.id.in_(handed_back))
                    .values(locked_until=None, locked_by=None)
                )
        for job in keep:
            self.per_endpoint[job.endpoint_id] = self.per_endpoint.get(job.endpoint_id, 0) + 1
            task = asyncio.create_task(self._deliver(job))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        return len(keep)

    async def _deliver(self, job: Job) -> None:
        try:
            if not job.enabled:
                self.outcomes.append(Outcome(job, None))
                return
            body, headers = request_for(
                channel=job.channel,
                secret=job.secret,
                delivery_id=job.delivery_id,
                event_type=job.event_type,
                created_at=job.created_at,
                data=job.data,
                workspace_name=job.workspace_name,
                public_url=self.settings.public_url,
            )
            attempt = await client.post(
                self.session,
                job.url,
                body,
                headers,
                deadline_seconds=self.settings.webhook_timeout,
                allowed=self.allowed,
            )
            self.outcomes.append(Outcome(job, attempt))
        finally:
            self.per_endpoint[job.endpoint_id] -= 1
            if not self.per_endpoint[job.endpoint_id]:
                del self.per_endpoint[job.endpoint_id]

    async def flush(self, db: Database) -> None:
        if not self.outcomes:
            return
        outcomes, self.outcomes = self.outcomes, []
        try:
            async with db.transaction() as session:
                await record(session, outcomes, self.settings.webhook_retry_delays)
        except Exception:
            # The rows keep their lease and come back when it ends: delivered again, never lost.
            log.exception("could not record %d webhook outcomes", len(outcomes))

    async def close(self, db: Database, grace_seconds: float = 10.0) -> None:
        if self.tasks:
            await asyncio.wait(self.tasks, timeout=grace_seconds)
        await self.flush(db)
        if self._session is not None:
            await self._session.close()


async def _load_jobs(session: Any, delivery_ids: list[str]) -> list[Job]:
    rows = await session.execute(
        select(WebhookDelivery, WebhookEndpoint, Event, Workspace.name)
        .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
        .join(Event, Event.id == WebhookDelivery.event_id)
        .join(Workspace, Workspace.id == WebhookDelivery.workspace_id)
        .where(WebhookDelivery.id.in_(delivery_ids))
    )
    return [
        Job(
            delivery_id=delivery.id,
            endpoint_id=endpoint.id,
            attempts=delivery.attempts,
            url=endpoint.url,
            channel=endpoint.channel,
            secret=endpoint.secret,
            enabled=endpoint.enabled,
            event_type=event.type,
            created_at=event.created_at,
            data=event.data,
            workspace_name=name or "",
        )
        for delivery, endpoint, event, name in rows.all()
    ]


def next_attempt_at(now: datetime, attempts_made: int, delays: list[int]) -> datetime:
    """After attempt n fails, attempt n+1 waits delays[n-1] seconds, give or take 10%."""
    base = delays[min(attempts_made - 1, len(delays) - 1)] if delays else 60
    return now + timedelta(seconds=base * random.uniform(0.9, 1.1))


_DELIVERIES: Any = WebhookDelivery.__table__
# Core statement run with many parameter sets (executemany); `status = 'pending'` keeps an
# outcome from resurrecting a delivery abandoned while it was in flight.
_UPDATE = (
    update(_DELIVERIES)
    .where(_DELIVERIES.c.id == bindparam("d_id"), _DELIVERIES.c.status == "pending")
    .values(
        status=bindparam("d_status"),
        attempts=bindparam("d_attempts"),
        run_at=bindparam("d_run_at"),
        last_status_code=bindparam("d_code"),
        last_error=bindparam("d_error"),
        delivered_at=bindparam("d_delivered_at"),
        updated_at=bindparam("d_now"),
        locked_until=None,
        locked_by=None,
    )
)


async def record(session: Any, outcomes: list[Outcome], delays: list[int]) -> None:
    """Write a batch of outcomes, and the endpoints' health, in one transaction."""
    now = utcnow()
    params: list[dict[str, Any]] = []
    by_endpoint: dict[str, list[tuple[str, Outcome]]] = {}
    for outcome in outcomes:
        job, attempt = outcome.job, outcome.attempt
        if attempt is None:
            params.append(
                _row(job.delivery_id, "abandoned", job.attempts, now, None, None, None, now)
            )
            continue
        made = job.attempts + 1
        if attempt.ok:
            state = "delivered"
            params.append(_row(job.delivery_id, state, made, now, attempt.status, None, now, now))
        elif made >= MAX_ATTEMPTS:
            state = "failed"
            params.append(
                _row(job.delivery_id, state, made, now, attempt.status, attempt.error, None, now)
            )
        else:
            state = "retry"
            retry_at = next_attempt_at(now, made, delays)
            params.append(
                _row(
                    job.delivery_id,
                    "pending",
                    made,
                    retry_at,
                    attempt.status,
                    attempt.error,
                    None,
                    now,
                )
            )
        by_endpoint.setdefault(job.endpoint_id, []).append((state, outcome))
    if params:
        connection = await session.connection()
        await connection.execute(_UPDATE, params)
    for endpoint_id in sorted(by_endpoint):  # one lock order for every worker
        await _health(session, endpoint_id, by_endpoint[endpoint_id], now)


def _row(
    delivery_id: str,
    status: str,
    attempts: int,
    run_at: datetime,
    code: int | None,
    error: str | None,
    delivered_at: datetime | None,
    now: datetime,
) -> dict[str, Any]:
    return {
        "d_id": delivery_id,
        "d_status": status,
        "d_attempts": attempts,
        "d_run_at": run_at,
        "d_code": code,
        "d_error": error[:500] if error else None,
        "d_delivered_at": delivered_at,
        "d_now": now,
    }


async def _health(
    session: Any, endpoint_id: str, results: list[tuple[str, Outcome]], now: datetime
) -> None:
    query = select(WebhookEndpoint).where(WebhookEndpoint.id == endpoint_id)
    if session.get_bind().dialect.name == "postgresql":
        # NO KEY UPDATE: concurrent inserts of deliveries hold KEY SHARE locks on the endpoint
        # row (the foreign key); a plain FOR UPDATE would deadlock with them.
        query = query.with_for_update(key_share=True)
    endpoint = await session.scalar(query)
    if endpoint is None:
        return
    for state, outcome in results:
        if state == "delivered":
            endpoint.consecutive_failures = 0
            endpoint.last_success_at = outcome.finished_at
        elif state in ("retry", "failed"):
            endpoint.last_failure_at = outcome.finished_at
            if state == "failed":
                endpoint.consecutive_failures += 1
    if endpoint.enabled and endpoint.consecutive_failures >= DISABLE_AFTER:
        last = next((o.attempt for s, o in reversed(results) if s == "failed"), None)
        detail = (last.error or f"HTTP {last.status}") if last else "failures"
        endpoint.enabled = False
        endpoint.disabled_at = now
        endpoint.disabled_reason = (
            f"Disabled after {DISABLE_AFTER} consecutive failed deliveries (last: {detail})"
        )[:500]
        await session.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.endpoint_id == endpoint_id, WebhookDelivery.status == "pending")
            .values(status="abandoned", locked_until=None, updated_at=now)
            .execution_options(synchronize_session=False)
        )
    endpoint.updated_at = now
