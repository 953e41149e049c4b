"""The delivery worker: claims due deliveries, sends them concurrently, records the outcomes.

- Claims with `claim_due` (leases; SKIP LOCKED on PostgreSQL), so several workers share the
  work and a killed worker's deliveries come back when their lease runs out (at-least-once,
  always with the same delivery id).
- Each endpoint is a lane: up to `PER_ENDPOINT` requests in flight, fed from a queue of
  deliveries this worker holds for it. A request that ends starts the lane's next one at
  once, so an endpoint that is due work never waits for a batch, a claim or the loop's poll.
  The queue is kept about `BUFFER_SECONDS` of the lane's measured pace deep (at least
  `LOW_WATER`, at most `HIGH_WATER`), refilled when it runs low: a fast receiver gets big
  claims, a slow one a few rows, and one endpoint's backlog never takes another's turn (full
  lanes are left out of the claim). Held deliveries too close to the end of their lease to
  be sent in time are handed back, not sent late.
- One write transaction per exchange records the outcomes so far (delivered, or retried
  after the configured delays, with jitter, until the fifth attempt fails; 20 deliveries
  failing in a row disable the endpoint and abandon its queue) and claims the next rows: on
  SQLite, where the worker takes the one write lock in turn with the API, each turn is worth
  a second of sending. With nothing to record, a read looks first whether anything is due:
  an idle exchange takes no write-lock turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import aiohttp
from sqlalchemy import bindparam, literal, select, update

from mailroom.background import WorkerContext
from mailroom.core import metrics, urlguard
from mailroom.core.clock import utcnow
from mailroom.db import Database, claim_due, due_condition
from mailroom.models import Event, WebhookDelivery, WebhookEndpoint, Workspace
from mailroom.settings import Settings
from mailroom.webhooks import client
from mailroom.webhooks.envelope import request_for

log = logging.getLogger("mailroom.webhooks")

MAX_ATTEMPTS = 5
DISABLE_AFTER = 20
MAX_IN_FLIGHT = 200  # requests at once, all endpoints
MAX_HELD = 5000  # deliveries held (queued or in flight), all endpoints
PER_ENDPOINT = 16  # requests at once to one endpoint
LOW_WATER = 2 * PER_ENDPOINT  # the least a lane's queue is filled to
HIGH_WATER = 1000  # the most
BUFFER_SECONDS = 1.0  # a lane's queue holds about this long of its pace
CLAIM_BATCH = 500  # rows a claim: its write transaction stays short
LEASE_SECONDS = 120
RECORD_EVERY = 0.25  # seconds: outcomes wait at most about this long to be written
RECORD_AT = 500  # outcomes: written at once when this many are waiting
LANE_MEMORY = 60.0  # seconds an idle lane (and its pace) is kept


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
    request_id: str | None = None  # the request that caused the event: on its log lines
    send_by: float = 0.0  # time.monotonic(): not started after this, the lease is too short


@dataclass
class Outcome:
    job: Job
    attempt: client.Attempt | None  # None: abandoned without sending
    finished_at: datetime = field(default_factory=utcnow)


@dataclass
class Lane:
    """One endpoint's deliveries held by this worker."""

    queue: deque[Job] = field(default_factory=deque)
    running: int = 0
    more: bool = True  # more of its deliveries may be due than it holds
    gap: float = 0.0  # seconds between two of its requests ending, smoothed (0: not known)
    last_done: float = 0.0

    @property
    def held(self) -> int:
        return len(self.queue) + self.running

    @property
    def target(self) -> int:
        pace = 1.0 / self.gap if self.gap else 0.0  # deliveries per second
        return int(min(HIGH_WATER, max(LOW_WATER, pace * BUFFER_SECONDS)))

    @property
    def low(self) -> bool:
        return len(self.queue) * 2 < self.target

    def finished(self, now: float) -> None:
        if self.last_done:
            gap = now - self.last_done
            self.gap = gap if not self.gap else 0.9 * self.gap + 0.1 * gap
        self.last_done = now


class DeliveryWorker:
    """One per worker process; `tick` is its loop (see worker.py)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.allowed = urlguard.parse_networks(settings.webhook_allow_networks)
        self.tasks: set[asyncio.Task[None]] = set()
        self.lanes: dict[str, Lane] = {}
        self.outcomes: list[Outcome] = []
        self.expired: list[str] = []  # held too long: handed back at the next exchange
        self.wanted = asyncio.Event()  # a lane runs low, or outcomes pile up
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # No per-host cap: endpoints sharing a host (every Slack endpoint) must not queue
            # behind each other's connections; the lanes cap each endpoint.
            self._session = client.make_session(self.allowed, limit=MAX_IN_FLIGHT, per_host=0)
        return self._session

    @property
    def held(self) -> int:
        return sum(lane.held for lane in self.lanes.values())

    async def tick(self, ctx: WorkerContext) -> int:
        recorded, started = await self._exchange(ctx)
        if started:
            return started
        if not self.tasks:
            # Nothing running. Requests that ended while the exchange was writing left their
            # outcomes (and their lanes room): go again at once to record them and claim
            # more; only a tick with nothing at all to do lets the loop sleep.
            return recorded + len(self.outcomes) + len(self.expired)
        # Requests are running: wake when a lane runs low (while more is due) or outcomes
        # pile up, and record at least every RECORD_EVERY.
        self.wanted.clear()
        if not self._wants_exchange():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wanted.wait(), timeout=RECORD_EVERY)
        return 1

    def _wants_exchange(self) -> bool:
        if len(self.outcomes) >= RECORD_AT:
            return True
        return any(lane.more and lane.low for lane in self.lanes.values() if lane.running)

    async def _exchange(self, ctx: WorkerContext) -> tuple[int, int]:
        """Record what finished and claim what the lanes have room for, in one transaction;
        (outcomes recorded, deliveries taken on)."""
        outcomes, self.outcomes = self.outcomes, []
        expired, self.expired = self.expired, []
        self._forget_idle_lanes()
        room = {eid: lane.target - lane.held for eid, lane in self.lanes.items()}
        full = [eid for eid, free in room.items() if free <= 0]
        open_rooms = [free for free in room.values() if free > 0] or [LOW_WATER]
        limit = min(MAX_HELD - self.held, CLAIM_BATCH, max(sum(open_rooms), LOW_WATER))
        taken: list[str] = []
        lease = min(LEASE_SECONDS, ctx.settings.worker_lease_seconds)
        where = [WebhookDelivery.endpoint_id.not_in(full)] if full else []
        if not outcomes and not expired:
            # Nothing to write: open the write transaction only if a claim would find rows.
            # On SQLite that keeps idle ticks from taking write-lock turns from the API.
            try:
                if limit <= 0 or not await _any_due(ctx.db, where):
                    if limit > 0:
                        self._none_due(full)
                    return 0, 0
            except Exception:
                log.exception("could not look for due webhook deliveries")
                return 0, 0
        try:
            async with ctx.db.transaction() as session:
                disabled, settled = await self._record(session, outcomes, expired)
                if limit > 0:
                    taken = await self._claim(
                        session, ctx.worker_id, lease, limit, where, full, room
                    )
            # What to send is read after the write transaction: it holds no lock meanwhile.
            jobs = await _read_jobs(ctx.db, taken) if taken else []
        except Exception:
            # The rows keep their lease and come back when it ends: delivered again, never lost.
            log.exception("could not record %d webhook outcomes or claim", len(outcomes))
            return 0, 0
        _settled(settled)
        # Started after this, an attempt could outlast the lease (another worker may have it).
        send_by = time.monotonic() + max(lease / 2, lease - self.settings.webhook_timeout - 5)
        for job in jobs:
            job.send_by = send_by
        self._drop(disabled)
        self._start(jobs)
        return len(outcomes), len(jobs)

    def _none_due(self, full: list[str]) -> None:
        """What an empty claim would have learnt: lanes with room have all that is due."""
        for endpoint_id, lane in self.lanes.items():
            if endpoint_id not in full:
                lane.more = False

    def _forget_idle_lanes(self) -> None:
        """A lane outlives its queue a while: its pace sizes the next claim of a burst."""
        now = time.monotonic()
        for endpoint_id, lane in list(self.lanes.items()):
            if not lane.held and now - lane.last_done > LANE_MEMORY:
                del self.lanes[endpoint_id]

    async def _claim(
        self,
        session: Any,
        worker_id: str,
        lease: int,
        limit: int,
        where: list[Any],
        full: list[str],
        room: dict[str, int],
    ) -> list[str]:
        """Lease due deliveries of lanes with room; the ids kept, oldest first."""
        claimed = await claim_due(
            session,
            WebhookDelivery,
            worker_id=worker_id,
            limit=limit,
            lease_seconds=lease,
            where=where,
        )
        # A claim cut short by its limit leaves rows due; one that came back short found all
        # that was due for the lanes it looked at (those with room).
        more = len(claimed) >= limit
        for endpoint_id, lane in self.lanes.items():
            if endpoint_id not in full:
                lane.more = more
        # Keep what each lane has room for (a new endpoint: LOW_WATER); hand back the rest.
        keep: list[str] = []
        handed_back: list[str] = []
        for delivery in claimed:
            lane = self.lanes.setdefault(delivery.endpoint_id, Lane(more=more))
            free = room.setdefault(delivery.endpoint_id, lane.target - lane.held)
            if free <= 0:
                handed_back.append(delivery.id)
                lane.more = True
                continue
            room[delivery.endpoint_id] = free - 1
            keep.append(delivery.id)
        if handed_back:
            await _hand_back(session, handed_back)
        return keep

    async def _record(
        self, session: Any, outcomes: list[Outcome], expired: list[str]
    ) -> tuple[set[str], list[tuple[str, Outcome]]]:
        """Write outcomes and hand back expired holds; (the endpoints that got disabled, each
        outcome with its state, counted and logged once the transaction commits)."""
        disabled: set[str] = set()
        settled: list[tuple[str, Outcome]] = []
        if outcomes:
            disabled, settled = await record(session, outcomes, self.settings.webhook_retry_delays)
        if expired:
            await _hand_back(session, expired)
        return disabled, settled

    def _drop(self, endpoint_ids: set[str]) -> None:
        """A disabled endpoint's deliveries were abandoned: send none of those held."""
        for endpoint_id in endpoint_ids:
            lane = self.lanes.get(endpoint_id)
            if lane is not None:
                lane.queue.clear()

    def _start(self, jobs: list[Job]) -> None:
        for job in jobs:
            self.lanes.setdefault(job.endpoint_id, Lane()).queue.append(job)  # made by _claim
        for endpoint_id in {job.endpoint_id for job in jobs}:
            lane = self.lanes[endpoint_id]
            while lane.running < min(PER_ENDPOINT, len(lane.queue) + lane.running):
                lane.running += 1
                task = asyncio.create_task(self._run_lane(endpoint_id, lane))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)

    async def _run_lane(self, endpoint_id: str, lane: Lane) -> None:
        """One of a lane's requests in a row: each one that ends starts the next held one."""
        try:
            while lane.queue:
                job = lane.queue.popleft()
                if time.monotonic() > job.send_by:
                    self.expired.append(job.delivery_id)
                    continue
                attempt = await self._deliver(job)
                # Only now look up the list: an exchange may have taken the one from before.
                self.outcomes.append(Outcome(job, attempt))
                lane.finished(time.monotonic())
                if self._wants_exchange():
                    self.wanted.set()
        finally:
            lane.running -= 1
            if not self.tasks - {asyncio.current_task()}:
                self.wanted.set()  # the last request ended: record it now

    async def _deliver(self, job: Job) -> client.Attempt | None:
        if not job.enabled:
            return None
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
        return await client.post(
            self.session,
            job.url,
            body,
            headers,
            deadline_seconds=self.settings.webhook_timeout,
            allowed=self.allowed,
        )

    async def flush(self, db: Database) -> None:
        """Record the outcomes so far and hand back what expired (no claim)."""
        outcomes, self.outcomes = self.outcomes, []
        expired, self.expired = self.expired, []
        if not outcomes and not expired:
            return
        try:
            async with db.transaction() as session:
                disabled, settled = await self._record(session, outcomes, expired)
        except Exception:
            # The rows keep their lease and come back when it ends: delivered again, never lost.
            log.exception("could not record %d webhook outcomes", len(outcomes))
            return
        _settled(settled)
        self._drop(disabled)

    async def close(self, db: Database, grace_seconds: float = 10.0) -> None:
        # Queued deliveries are not started; the host's retire() hands their rows back.
        for lane in self.lanes.values():
            lane.queue.clear()
        if self.tasks:
            await asyncio.wait(self.tasks, timeout=grace_seconds)
        await self.flush(db)
        if self._session is not None:
            await self._session.close()


async def _hand_back(session: Any, delivery_ids: list[str]) -> None:
    """Release leases at once, for any worker's next claim."""
    await session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.id.in_(delivery_ids), WebhookDelivery.status == "pending")
        .values(locked_until=None, locked_by=None)
        .execution_options(synchronize_session=False)
    )


async def _any_due(db: Database, where: list[Any]) -> bool:
    """Whether `claim_due` would find a row (its condition, read-only: no lock, no lease)."""
    async with db.session(write=False) as session:
        due = due_condition(WebhookDelivery, session.get_bind().dialect.name, utcnow())
        found = await session.scalar(
            select(literal(1)).select_from(WebhookDelivery).where(*due, *where).limit(1)
        )
    return found is not None


async def _read_jobs(db: Database, delivery_ids: list[str]) -> list[Job]:
    """The deliveries' jobs, in the order of `delivery_ids`."""
    async with db.session(write=False) as session:
        jobs = {job.delivery_id: job for job in await _load_jobs(session, delivery_ids)}
    return [jobs[d] for d in delivery_ids if d in jobs]


async def _load_jobs(session: Any, delivery_ids: list[str]) -> list[Job]:
    # Columns, not entities: thousands of rows a claim, no identity map needed.
    rows = await session.execute(
        select(
            WebhookDelivery.id,
            WebhookDelivery.endpoint_id,
            WebhookDelivery.attempts,
            WebhookEndpoint.url,
            WebhookEndpoint.channel,
            WebhookEndpoint.secret,
            WebhookEndpoint.enabled,
            Event.type,
            Event.created_at,
            Event.data,
            Workspace.name,
            Event.request_id,
        )
        .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
        .join(Event, Event.id == WebhookDelivery.event_id)
        .join(Workspace, Workspace.id == WebhookDelivery.workspace_id)
        .where(WebhookDelivery.id.in_(delivery_ids))
    )
    return [
        Job(
            delivery_id=row[0],
            endpoint_id=row[1],
            attempts=row[2],
            url=row[3],
            channel=row[4],
            secret=row[5],
            enabled=row[6],
            event_type=row[7],
            created_at=row[8],
            data=row[9],
            workspace_name=row[10] or "",
            request_id=row[11],
        )
        for row in rows.all()
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


async def record(
    session: Any, outcomes: list[Outcome], delays: list[int]
) -> tuple[set[str], list[tuple[str, Outcome]]]:
    """Write a batch of outcomes, and the endpoints' health, in the caller's transaction;
    (the ids of the endpoints this disabled, each outcome with its state: delivered, retry,
    failed or abandoned, for the metrics and the log once committed)."""
    now = utcnow()
    params: list[dict[str, Any]] = []
    settled: list[tuple[str, Outcome]] = []
    by_endpoint: dict[str, list[tuple[str, Outcome]]] = {}
    for outcome in outcomes:
        job, attempt = outcome.job, outcome.attempt
        if attempt is None:
            params.append(
                _row(job.delivery_id, "abandoned", job.attempts, now, None, None, None, now)
            )
            settled.append(("abandoned", outcome))
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
        settled.append((state, outcome))
    if params:
        connection = await session.connection()
        await connection.execute(_UPDATE, params)
    disabled: set[str] = set()
    for endpoint_id in sorted(by_endpoint):  # one lock order for every worker
        if await _health(session, endpoint_id, by_endpoint[endpoint_id], now):
            disabled.add(endpoint_id)
    return disabled, settled


def _settled(settled: list[tuple[str, Outcome]]) -> None:
    """Counted and logged after the commit: outcomes that were not recorded come back, and
    count and are logged then (once)."""
    for state, outcome in settled:
        metrics.WEBHOOK_DELIVERIES.labels(state).inc()
        if state != "abandoned":
            _log_attempt(state, outcome)


# aiohttp's errors quote the whole URL (`url='https://discord.com/api/webhooks/1/TOKEN'`): a
# chat webhook's path is its secret.
_URL_IN_ERROR = re.compile(r"""\burl=(['"]).*?\1""")
# A delivered one is routine (thousands a minute); a retry or a failure is what is looked for.
_LEVELS = {"delivered": logging.DEBUG, "retry": logging.INFO, "failed": logging.WARNING}


def _log_attempt(state: str, outcome: Outcome) -> None:
    level = _LEVELS[state]
    if not log.isEnabledFor(level):
        return
    job, attempt = outcome.job, outcome.attempt
    assert attempt is not None
    log.log(
        level,
        "webhook delivery %s (%s) to endpoint %s, attempt %d: %s%s",
        job.delivery_id,
        job.event_type,
        job.endpoint_id,
        job.attempts + 1,
        state,
        f" ({attempt.status or _URL_IN_ERROR.sub('url=[redacted]', attempt.error or '')})"
        if state != "delivered"
        else "",
        extra={"request_id": job.request_id},
    )


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
) -> bool:
    """Update the endpoint's health; True when this disabled it."""
    query = select(WebhookEndpoint).where(WebhookEndpoint.id == endpoint_id)
    if session.get_bind().dialect.name == "postgresql":
        # NO KEY UPDATE: concurrent inserts of deliveries hold KEY SHARE locks on the endpoint
        # row (the foreign key); a plain FOR UPDATE would deadlock with them.
        query = query.with_for_update(key_share=True)
    endpoint = await session.scalar(query)
    if endpoint is None:
        return False
    disabling = False
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
        disabling = True
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
    return disabling
