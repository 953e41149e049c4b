"""An A/B test survives a SIGKILLed worker, mid-test and mid-remainder: a `mailroom worker` is
killed while the test's share goes out, and again while the winner goes to the rest. Each
recipient gets exactly one variant (the winner if it was not in the test), none is skipped,
and the duplicates at the sink (one Message-ID twice) are at most the rows the dead worker
held. The split lives on the send-log rows, so the restarted worker sends what was planned."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections import Counter, defaultdict

from sqlalchemy import func, select

from mailroom.core.clock import utcnow
from mailroom.models import SendLog
from tests.reliability.campaign_run import (
    send_status,
    start_worker,
    stop_worker,
    verified_campaign,
)
from tests.sending.helpers import ok
from tests.sending.sink import Sink

RECIPIENTS = 4_000
TEST_SHARE = 50  # 2,000 in the test, 1,000 a variant; 2,000 wait for the winner
LIMIT = 120.0


async def _held(db) -> int:
    async with db.session() as session:
        return int(
            await session.scalar(
                select(func.count()).where(
                    SendLog.status == "pending", SendLog.locked_until > utcnow()
                )
            )
            or 0
        )


async def _until(db, campaign_id: str, done) -> None:
    deadline = time.monotonic() + LIMIT
    while not done(await send_status(db, campaign_id)):
        assert time.monotonic() < deadline, await send_status(db, campaign_id)
        await asyncio.sleep(0.2)


def _kill_after(worker: subprocess.Popen[bytes], sink: Sink, count: int) -> None:
    deadline = time.monotonic() + LIMIT
    while len(sink.received) < count:
        assert time.monotonic() < deadline, f"{len(sink.received)} of {count} before the kill"
        time.sleep(0.02)
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=10)


async def test_a_test_and_its_remainder_survive_a_killed_worker(client, db, ws, settings, cli_env):
    campaign = await verified_campaign(client, db, ws, RECIPIENTS)
    test = {
        "variants": [{"subject": "Subject A"}, {"subject": "Subject B"}],
        "test_share": TEST_SHARE,
        "winner_by": "manual",
    }
    path = f"/api/v1/campaigns/{campaign['id']}"
    await ok(await client.patch(path, json={"ab_test": test}, headers=ws.headers))
    tested = RECIPIENTS * TEST_SHARE // 100
    held: list[int] = []
    with Sink.threaded() as sink:
        settings.smtp_url = sink.url
        await ok(await client.post(f"{path}/send", headers=ws.headers), 202)

        # Mid-test: killed with a third of the test out, then another worker finishes it.
        worker = start_worker(cli_env, sink.url)
        try:
            await asyncio.to_thread(_kill_after, worker, sink, tested // 3)
        finally:
            stop_worker(worker)
        held.append(await _held(db))
        worker = start_worker(cli_env, sink.url)
        try:
            await _until(db, campaign["id"], lambda s: s.get("sent", 0) == tested)
            assert await send_status(db, campaign["id"]) == {
                "sent": tested,
                "waiting": RECIPIENTS - tested,
            }
        finally:
            stop_worker(worker)

        # Mid-remainder: the winner picked, a worker killed a third of the way through it.
        picked = await client.post(
            f"{path}/ab-test/winner", json={"variant_id": "b"}, headers=ws.headers
        )
        assert (await ok(picked))["campaign"]["ab_test"]["status"] == "decided"
        before = len(sink.received)
        worker = start_worker(cli_env, sink.url)
        try:
            await asyncio.to_thread(_kill_after, worker, sink, before + (RECIPIENTS - tested) // 3)
        finally:
            stop_worker(worker)
        held.append(await _held(db))
        worker = start_worker(cli_env, sink.url)
        try:
            await _until(db, campaign["id"], lambda s: s == {"sent": RECIPIENTS})
        finally:
            stop_worker(worker)
        received = sink.received

    subjects: dict[str, set[str]] = defaultdict(set)
    for item in received:
        subjects[item.recipients[0]].add(str(item.parsed()["Subject"]))
    assert set(subjects) == {f"r{i:05d}@mailtest.io" for i in range(RECIPIENTS)}
    assert all(len(seen) == 1 for seen in subjects.values())  # one variant each
    assert Counter(next(iter(s)) for s in subjects.values()) == {
        "Subject A": tested // 2,
        "Subject B": tested // 2 + RECIPIENTS - tested,
    }
    by_id = Counter(item.message_id for item in received)
    assert len(by_id) == RECIPIENTS
    duplicates = sum(n - 1 for n in by_id.values())
    assert duplicates <= sum(held), (duplicates, held)
    finished = await ok(await client.get(path, headers=ws.headers))
    assert finished["campaign"]["status"] == "sent"
    print(f"\nA/B crash drill: {duplicates} duplicates, rows held at the kills {held}")
