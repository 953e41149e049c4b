"""The background host and the claim-due-rows helper (crash safety, no double claims)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from mailroom.core.clock import utcnow
from mailroom.db import Database, claim_due
from mailroom.jobs import service as jobs_service
from mailroom.models import Job
from mailroom.worker import Loop, WorkerHost


async def _make_jobs(db: Database, count: int, kind: str = "noop") -> list[str]:
    async with db.transaction() as session:
        jobs = [Job(kind=kind, payload={"n": i}) for i in range(count)]
        session.add_all(jobs)
    return [job.id for job in jobs]


async def _claim(db: Database, worker: str, limit: int, lease: int = 300) -> list[str]:
    async with db.transaction() as session:
        rows = await claim_due(session, Job, worker_id=worker, limit=limit, lease_seconds=lease)
        return [row.id for row in rows]


async def test_claim_takes_only_due_unleased_rows(db):
    ids = await _make_jobs(db, 3)
    async with db.transaction() as session:
        later = await session.get(Job, ids[2])
        assert later is not None
        later.run_at = utcnow() + timedelta(hours=1)
    first = await _claim(db, "w1", 10)
    assert sorted(first) == sorted(ids[:2])
    assert await _claim(db, "w2", 10) == []


async def test_row_of_a_dead_worker_is_claimed_again(db):
    [job_id] = await _make_jobs(db, 1)
    leased_at = time.monotonic()
    assert await _claim(db, "dead-worker", 10, lease=1) == [job_id]
    assert await _claim(db, "other", 10) == []
    # The dead worker never releases: the row comes back once its 1 s lease runs out.
    while not (claimed := await _claim(db, "other", 10)):
        assert time.monotonic() - leased_at < 10, "the lease never ran out"
        await asyncio.sleep(0.05)
    assert claimed == [job_id]
    assert time.monotonic() - leased_at >= 0.9  # not before the lease ended
    async with db.session() as session:
        job = await session.get(Job, job_id)
        assert job is not None and job.locked_by == "other"


@pytest.mark.postgresql_only
async def test_concurrent_workers_never_claim_the_same_row(database_url):
    """Several processes' worth of engines claim from one table at once."""
    setup = Database(database_url)
    ids = await _make_jobs(setup, 400)
    await setup.dispose()
    workers = [Database(database_url) for _ in range(4)]
    claimed: dict[str, list[str]] = {f"w{i}": [] for i in range(4)}

    async def worker(name: str, db: Database) -> None:
        while True:
            got = await _claim(db, name, 7)
            if not got:
                return
            claimed[name].extend(got)

    try:
        await asyncio.gather(*(worker(f"w{i}", db) for i, db in enumerate(workers)))
    finally:
        for db in workers:
            await db.dispose()
    every = [job for jobs in claimed.values() for job in jobs]
    assert len(every) == len(set(every)) == 400
    assert set(every) == set(ids)
    assert sum(1 for jobs in claimed.values() if jobs) >= 2  # they really ran side by side


async def test_jobs_are_worked_once_and_failures_retry(db, settings):
    calls: list[str] = []

    @jobs_service.handler("test-record")
    async def record(session, job):
        calls.append(job.payload["n"])

    @jobs_service.handler("test-fail")
    async def fail(session, job):
        raise RuntimeError("nope")

    async with db.transaction() as session:
        await jobs_service.enqueue(session, "test-record", {"n": "a"})
        failing = await jobs_service.enqueue(session, "test-fail", {})
    worked = await jobs_service.work_due_jobs(db, worker_id="t", lease_seconds=60)
    assert worked == 2
    assert calls == ["a"]
    async with db.session() as session:
        failed = await session.get(Job, failing.id)
        assert failed is not None
        assert failed.status == "pending" and failed.attempts == 1
        assert failed.last_error == "RuntimeError: nope"
        assert failed.run_at > utcnow()
        done = await session.scalar(select(func.count()).where(Job.status == "done"))
        assert done == 1
    assert await jobs_service.work_due_jobs(db, worker_id="t", lease_seconds=60) == 0


async def test_host_runs_loops_and_stops_gracefully(db, settings):
    ticks: list[int] = []

    async def tick(ctx):
        ticks.append(1)
        return 0

    host = WorkerHost(db, settings, loops=[Loop("t", tick, 0.01)])
    host.start()
    started = time.monotonic()
    while len(ticks) < 3:
        assert time.monotonic() - started < 10, "the loop never ticked three times"
        await asyncio.sleep(0.01)
    host.stop()
    await host.join(grace_seconds=5)
    assert len(ticks) >= 3
    count = len(ticks)
    await asyncio.sleep(0.05)
    assert len(ticks) == count


def test_worker_command_stops_on_sigterm(cli_env):
    process = subprocess.Popen(
        [sys.executable, "-m", "mailroom", "worker"],
        env={**os.environ, **cli_env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # Wait until it reports running, then ask it to stop.
        assert process.stdout is not None
        for line in process.stdout:
            if "running loops" in line:
                break
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
