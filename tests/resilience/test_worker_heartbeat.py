"""Worker heartbeats: a dead worker's claims are free at once, a live one's are not, and a
clean stop hands every claim back and removes the worker's row."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

from sqlalchemy import select, update

from mailroom.core.clock import utcnow
from mailroom.db import HEARTBEAT_STALE_SECONDS, Database, claim_due
from mailroom.models import Job, WorkerProcess
from mailroom.worker import Loop, WorkerContext, WorkerHost, beat, register, retire

LEASE = 300  # far longer than any test: only heartbeats can free these rows


async def _jobs(db: Database, count: int) -> list[str]:
    async with db.transaction() as session:
        jobs = [Job(kind="noop", payload={"n": i}) for i in range(count)]
        session.add_all(jobs)
    return [job.id for job in jobs]


async def _claim(db: Database, worker_id: str, limit: int = 10) -> list[str]:
    async with db.transaction() as session:
        rows = await claim_due(session, Job, worker_id=worker_id, limit=limit, lease_seconds=LEASE)
        return sorted(row.id for row in rows)


async def _silence(db: Database, worker_id: str, seconds: float) -> None:
    """As if the worker's last heartbeat was `seconds` ago (it was killed then)."""
    async with db.transaction() as session:
        await session.execute(
            update(WorkerProcess)
            .where(WorkerProcess.id == worker_id)
            .values(heartbeat_at=utcnow() - timedelta(seconds=seconds))
        )


async def _job(db: Database, job_id: str) -> Job:
    async with db.session() as session:
        job = await session.get(Job, job_id)
        assert job is not None
        return job


async def test_claims_of_a_worker_with_a_stale_heartbeat_are_free_at_once(db):
    ids = await _jobs(db, 3)
    await register(db, "host:1:dead")
    await register(db, "host:2:live")
    dead_ids = await _claim(db, "host:1:dead", 2)
    [live_id] = await _claim(db, "host:2:live")
    assert sorted([*dead_ids, live_id]) == sorted(ids)
    assert await _claim(db, "host:3:new") == []  # every lease is live

    await _silence(db, "host:1:dead", HEARTBEAT_STALE_SECONDS - 5)
    assert await _claim(db, "host:3:new") == []  # a late beat is not a death

    await _silence(db, "host:1:dead", HEARTBEAT_STALE_SECONDS + 1)
    taken = await _claim(db, "host:3:new")
    assert taken == dead_ids  # the dead one's, long before their lease ends
    for job_id in taken:
        job = await _job(db, job_id)
        assert job.locked_by == "host:3:new"
        assert job.locked_until is not None and job.locked_until > utcnow() + timedelta(
            seconds=LEASE - 60
        )
    assert (await _job(db, live_id)).locked_by == "host:2:live"


async def test_a_claimer_without_a_heartbeat_row_keeps_its_lease(db):
    [job_id] = await _jobs(db, 1)
    assert await _claim(db, "one-off-command") == [job_id]
    await register(db, "host:9:other")
    assert await _claim(db, "host:9:other") == []
    assert (await _job(db, job_id)).locked_by == "one-off-command"


async def test_beat_refreshes_and_remakes_the_row(db):
    await register(db, "host:4:abcd")
    await _silence(db, "host:4:abcd", 60)
    await beat(db, "host:4:abcd")
    async with db.session() as session:
        row = await session.get(WorkerProcess, "host:4:abcd")
        assert row is not None and row.host == "host" and row.pid == 4
        assert row.heartbeat_at > utcnow() - timedelta(seconds=5)
        await session.rollback()
    async with db.transaction() as session:
        await session.delete(await session.get(WorkerProcess, "host:4:abcd"))
    await beat(db, "host:4:abcd")
    async with db.session() as session:
        assert await session.get(WorkerProcess, "host:4:abcd") is not None


async def test_retire_hands_back_only_pending_claims_of_that_worker(db):
    ids = await _jobs(db, 3)
    await register(db, "host:5:a")
    await register(db, "host:6:b")
    mine = await _claim(db, "host:5:a", 2)
    [theirs] = await _claim(db, "host:6:b")
    async with db.transaction() as session:
        done = await session.get(Job, mine[0])
        assert done is not None
        done.status = "done"
    assert await retire(db, "host:5:a") == 1
    async with db.session() as session:
        assert await session.get(WorkerProcess, "host:5:a") is None
        assert await session.get(WorkerProcess, "host:6:b") is not None
    assert (await _job(db, mine[1])).locked_by is None
    assert (await _job(db, theirs)).locked_by == "host:6:b"
    assert await _claim(db, "host:7:c") == [mine[1]]
    assert sorted(ids) == sorted([*mine, theirs])


async def test_host_beats_while_running_and_releases_on_a_clean_stop(db, settings):
    [job_id] = await _jobs(db, 1)
    holding = asyncio.Event()

    async def hold(ctx: WorkerContext) -> int:
        # Claims the job and never finishes it, like a send still in flight at shutdown.
        if not holding.is_set() and await _claim(ctx.db, ctx.worker_id) == [job_id]:
            holding.set()
        return 0

    host = WorkerHost(db, settings, loops=[Loop("hold", hold, 0.02)])
    host.start()
    await asyncio.wait_for(holding.wait(), timeout=10)
    async with db.session() as session:
        row = await session.get(WorkerProcess, host.ctx.worker_id)
        assert row is not None
    assert (await _job(db, job_id)).locked_by == host.ctx.worker_id
    assert await _claim(db, "host:8:other") == []

    host.stop()
    await host.join(grace_seconds=10)
    job = await _job(db, job_id)
    assert (job.status, job.locked_by, job.locked_until) == ("pending", None, None)
    async with db.session() as session:
        assert (await session.scalars(select(WorkerProcess.id))).all() == []
    started = time.monotonic()
    assert await _claim(db, "host:8:other") == [job_id]  # at once, not after the lease
    assert time.monotonic() - started < 5


async def test_two_hosts_never_share_an_id(db, settings):
    first = WorkerHost(db, settings, loops=[])
    second = WorkerHost(db, settings, loops=[])
    assert first.ctx.worker_id != second.ctx.worker_id  # same host and pid: the suffix differs
    assert len(first.ctx.worker_id) <= 64
