"""The scale-out drill: Mailroom as it runs on more than one machine's worth of processes, on
PostgreSQL. Two `mailroom serve --no-worker` processes sit behind a small TCP balancer
(round-robin, skipping a backend that refuses connections), two `mailroom worker` processes
share the background work, and every message goes to one SMTP sink.

Through the balancer, at once: contacts created one by one, CSV imports, transactional sends
to the contacts just created, a 20,000-recipient campaign, and the `contact.created` webhook
deliveries all of that causes. Once a third of the campaign is out, one worker and one server
are killed with SIGKILL. The survivors finish: the balancer sends new connections to the live
server, and the dead worker's claimed rows come back through its stale heartbeat.

Then: every recipient got the campaign at least once, duplicates (one Message-ID twice at the
sink) no more than the dead worker had claimed; every send answered 202 was sent; every
contact answered 201 (or imported in an import answered 200) exists and its `contact.created`
reached the receiver; the only requests without an answer are those that were in flight at
the kill. The figures are printed (run with -s to see them)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from mailroom.models import Campaign, Contact, SendLog, WebhookDelivery
from mailroom.models.workers import WorkerProcess
from mailroom.sending.engine import EXPRESS_BATCH, LANES
from tests.conftest import BACKEND
from tests.reliability.balancer import Balancer
from tests.reliability.campaign_run import alive, children_of, verified_campaign
from tests.reliability.receiver import Receiver
from tests.sending.helpers import ok
from tests.sending.sink import Sink

pytestmark = pytest.mark.skipif(
    BACKEND != "postgresql",
    reason="several server and worker processes share one database: PostgreSQL only "
    "(MAILROOM_TEST_BACKEND=postgresql with MAILROOM_TEST_DATABASE_URL)",
)

RECIPIENTS = 20_000
KILL_AT = RECIPIENTS // 3  # messages at the sink when a worker and a server are killed
# The load generator: tasks with one request each in flight at a time, so at most this many
# requests can be in flight on the killed server. Its pace is an offered load (a busy
# installation's API traffic beside the campaign), not as much as the machine takes.
CREATORS, SENDERS, IMPORTERS = 3, 2, 1
CONCURRENCY = CREATORS + SENDERS + IMPORTERS
CREATE_RATE = 4.0  # contacts a second from each creator
MAIL_EVERY = 2  # a transactional message to every second contact created
IMPORT_EVERY = 4.0  # seconds between CSV imports
IMPORT_ROWS = 200  # contacts per CSV import
AFTER_KILL = 100  # requests the surviving server answers before the load stops
SEND_BATCH = 200  # MAILROOM_SEND_BATCH, the workers' claim batch (its default)
# Limits that only stop a stuck drill (the figures say how fast it went): the start of the
# processes, the first third of the campaign, and the rest from the kill on (heartbeat
# staleness, 15 s, plus what is left to send).
START_LIMIT = 120.0
KILL_LIMIT = 240.0
FINISH_LIMIT = 300.0
MESSAGE_ID = re.compile(rb"^Message-ID:[ \t]*<([^>]+)>", re.IGNORECASE | re.MULTILINE)

Processes = dict[str, subprocess.Popen[bytes]]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "mailroom", *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:] if log.exists() else ""


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _ms(seconds: list[float]) -> str:
    """p50/p99 in milliseconds."""
    return f"{_percentile(seconds, 0.5) * 1000:.0f}/{_percentile(seconds, 0.99) * 1000:.0f} ms"


@dataclass
class Call:
    kind: str
    started: float  # time.monotonic()
    ended: float
    status: int | None  # None: no answer (the connection failed)
    error: str = ""


@dataclass
class Load:
    """What the load generator asked and what it was told."""

    client: httpx.AsyncClient
    headers: dict[str, str]
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    calls: list[Call] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)  # answers other than the expected
    created: dict[str, str] = field(default_factory=dict)  # email -> id, answered 201
    imported: list[str] = field(default_factory=list)  # emails of imports answered 200
    accepted: dict[str, str] = field(default_factory=dict)  # message id -> email, 202
    to_mail: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)
    numbers: Any = field(default_factory=itertools.count)
    killed_at: float | None = None

    async def call(self, kind: str, expected: int, method: str, url: str, **kw: Any) -> Any:
        started = time.monotonic()
        try:
            answer = await self.client.request(method, url, headers=self.headers, **kw)
        except httpx.TransportError as error:  # no answer: the connection failed
            self.calls.append(Call(kind, started, time.monotonic(), None, repr(error)))
            return None
        self.calls.append(Call(kind, started, time.monotonic(), answer.status_code))
        if answer.status_code != expected:
            self.unexpected.append(f"{kind}: {answer.status_code} {answer.text[:300]}")
            return None
        return answer.json()

    def answered_after_kill(self) -> int:
        if self.killed_at is None:
            return 0
        return sum(c.status is not None and c.started > self.killed_at for c in self.calls)

    async def paced(self, every: float) -> AsyncIterator[None]:
        """Yield once per `every` seconds at most (an offered load, not a flood) until the
        load stops; a request that takes longer only delays the next one."""
        due = time.monotonic()
        while not self.stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), due - time.monotonic())
            if self.stop.is_set():
                return
            due = max(due, time.monotonic() - every) + every
            yield

    async def creator(self) -> None:
        async for _ in self.paced(1 / CREATE_RATE):
            number = next(self.numbers)
            email = f"c{number:05d}@mailtest.io"
            body = {"email": email, "first_name": "Casey"}
            made = await self.call("create", 201, "POST", "/api/v1/contacts", json=body)
            if made is not None:
                self.created[email] = made["contact"]["id"]
                if number % MAIL_EVERY == 0:
                    self.to_mail.put_nowait(email)

    async def sender(self) -> None:
        while (email := await self.to_mail.get()) is not None and not self.stop.is_set():
            body = {
                "to": email,
                "subject": "Your receipt",
                "text_content": "Paid, thank you.",
                "from_email": "billing@shop.example",
            }
            sent = await self.call("send", 202, "POST", "/api/v1/send", json=body)
            if sent is not None:
                self.accepted[sent["message"]["id"]] = email

    async def importer(self) -> None:
        batches = itertools.count()
        async for _ in self.paced(IMPORT_EVERY):
            batch = next(batches)
            emails = [f"i{batch:03d}x{row:03d}@mailtest.io" for row in range(IMPORT_ROWS)]
            done = await self.call(
                "import",
                200,
                "POST",
                "/api/v1/contacts/import",
                files={"file": ("more.csv", "\n".join(["email", *emails]).encode(), "text/csv")},
                data={"check_domains": "false"},
            )
            if done is not None:
                assert done["imported"] == IMPORT_ROWS, done
                self.imported.extend(emails)

    def finish(self) -> None:
        self.stop.set()
        for _ in range(SENDERS):
            self.to_mail.put_nowait(None)


async def _count(db: Any, query: Any) -> int:
    async with db.session(write=False) as session:
        return int(await session.scalar(query) or 0)


async def test_two_servers_two_workers_one_of_each_killed_mid_campaign(
    client, db, factory, cli_env, tmp_path
):
    began = time.monotonic()
    ws = await factory.workspace("business", listen=False)  # 20,000 is past Pro's hourly cap
    ports = [_free_port(), _free_port()]
    logs: dict[str, Path] = {}
    processes: Processes = {}
    with Sink.threaded() as sink:
        async with (
            Balancer([("127.0.0.1", port) for port in ports]) as balancer,
            Receiver() as receiver,
        ):
            env = {
                **{
                    k: v
                    for k, v in os.environ.items()
                    if not k.startswith("MAILROOM_") and k != "PROMETHEUS_MULTIPROC_DIR"
                },
                **cli_env,
                "MAILROOM_PUBLIC_URL": balancer.url,
                "MAILROOM_SMTP_URL": sink.url,
                "MAILROOM_WEBHOOK_ALLOW_NETWORKS": "127.0.0.0/8",
                "MAILROOM_SEND_PROCESSES": "1",
                "MAILROOM_SEND_BATCH": str(SEND_BATCH),
                "MAILROOM_WORKER_POLL_INTERVAL": "0.1",
            }
            for i, port in enumerate(ports):
                logs[f"server{i}"] = tmp_path / f"server{i}.log"
                processes[f"server{i}"] = _start(
                    ["serve", "--no-worker", "--port", str(port)], env, logs[f"server{i}"]
                )
            for i in range(2):
                logs[f"worker{i}"] = tmp_path / f"worker{i}.log"
                processes[f"worker{i}"] = _start(["worker"], env, logs[f"worker{i}"])
            try:
                # The audience while the processes start: imported here, in the test's app.
                campaign = await verified_campaign(client, db, ws, RECIPIENTS)
                set_up = time.monotonic() - began
                await _until_up(db, processes, logs, ports)
                up = time.monotonic() - began
                await _drill(db, client, ws, campaign, sink, balancer, receiver, processes, logs)
            finally:
                for process in processes.values():
                    _stop(process)
    print(
        f"  set-up: {RECIPIENTS:,} contacts imported (in-process) {set_up:.1f} s and the 4 "
        f"processes up {up:.1f} s after the test began; the whole test "
        f"{time.monotonic() - began:.1f} s",
        file=sys.stderr,
    )


async def _until_up(db: Any, processes: Processes, logs: dict[str, Path], ports: list[int]) -> None:
    """Both servers answer /healthz and both workers have a heartbeat row."""
    deadline = time.monotonic() + START_LIMIT
    pids = [processes[f"worker{i}"].pid for i in range(2)]
    async with httpx.AsyncClient(timeout=5) as probe:
        for i, port in enumerate(ports):
            while True:
                assert processes[f"server{i}"].poll() is None, _tail(logs[f"server{i}"])
                with contextlib.suppress(httpx.TransportError):
                    if (await probe.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200:
                        break
                assert time.monotonic() < deadline, f"server{i} did not answer /healthz"
                await asyncio.sleep(0.2)
    query = select(func.count()).select_from(WorkerProcess).where(WorkerProcess.pid.in_(pids))
    while await _count(db, query) < 2:
        for i in range(2):
            assert processes[f"worker{i}"].poll() is None, _tail(logs[f"worker{i}"])
        assert time.monotonic() < deadline, "the workers did not start"
        await asyncio.sleep(0.2)


async def _drill(
    db: Any,
    client: httpx.AsyncClient,
    ws: Any,
    campaign: dict[str, Any],
    sink: Sink,
    balancer: Balancer,
    receiver: Receiver,
    processes: Processes,
    logs: dict[str, Path],
) -> None:
    ports = [port for _host, port in balancer.backends]
    async with httpx.AsyncClient(
        base_url=balancer.url,
        timeout=60,
        # One connection per request, so the balancer spreads requests (not connections that
        # carry many) and a request that fails was in flight on the killed server, never one
        # sent later on a kept-alive connection to it.
        limits=httpx.Limits(max_connections=CONCURRENCY + 2, max_keepalive_connections=0),
    ) as api:
        hook = await api.post(
            "/api/v1/webhooks",
            json={"url": receiver.url(), "event_types": ["contact.created"]},
            headers=ws.headers,
        )
        endpoint_id = (await ok(hook, 201))["id"]
        started = await api.post(f"/api/v1/campaigns/{campaign['id']}/send", headers=ws.headers)
        assert (await ok(started, 202))["campaign"]["stats"]["recipients"] == RECIPIENTS
        sending_from = time.monotonic()

        load = Load(api, ws.headers)
        tasks = [
            *(asyncio.create_task(load.creator()) for _ in range(CREATORS)),
            *(asyncio.create_task(load.sender()) for _ in range(SENDERS)),
            *(asyncio.create_task(load.importer()) for _ in range(IMPORTERS)),
        ]
        try:
            # A third of the campaign out: kill one worker and one server.
            deadline = time.monotonic() + KILL_LIMIT
            while len(sink.received) < KILL_AT:
                assert time.monotonic() < deadline, f"{len(sink.received)} sent in {KILL_LIMIT} s"
                assert not any(t.done() for t in tasks), [t for t in tasks if t.done()]
                await asyncio.sleep(0.05)
            victim, doomed = processes["worker0"], processes["server0"]
            async with db.session(write=False) as session:
                dead_id = await session.scalar(
                    select(WorkerProcess.id).where(WorkerProcess.pid == victim.pid)
                )
            assert dead_id is not None
            builders = children_of(victim.pid)
            victim.send_signal(signal.SIGKILL)
            doomed.send_signal(signal.SIGKILL)
            victim.wait(10)
            doomed.wait(10)
            killed_at = load.killed_at = time.monotonic()
            sent_at_kill = len(sink.received)
            # The rows the dead worker held: claimed and not recorded. Only these can go out
            # twice. Each claim takes at most MAILROOM_SEND_BATCH rows (engine.py
            # `self.batch_size`, SEND_BATCH here) and the engine keeps at most LANES (3) such
            # batches in flight, plus one express batch of EXPRESS_BATCH (20) transactional
            # rows: LANES * SEND_BATCH + EXPRESS_BATCH bounds the duplicates.
            held = select(func.count()).where(
                SendLog.status == "pending", SendLog.locked_by == dead_id
            )
            in_flight = await _count(db, held)
            held_hooks = select(func.count()).where(
                WebhookDelivery.status == "pending", WebhookDelivery.locked_by == dead_id
            )
            hooks_in_flight = await _count(db, held_hooks)
            assert in_flight > 0, "the dead worker held no rows: nothing was measured"

            # The survivors take the traffic: the load goes on until the live server has
            # answered AFTER_KILL more requests.
            while load.answered_after_kill() < AFTER_KILL:
                assert time.monotonic() - killed_at < 60, "the surviving server answers nothing"
                assert not any(t.done() for t in tasks), [t for t in tasks if t.done()]
                await asyncio.sleep(0.05)
        finally:
            load.finish()
            await asyncio.gather(*tasks)
        load_ended = time.monotonic()

    # Drained: the campaign is sent, nothing waits to be sent or delivered.
    first_taken: float | None = None  # the first of the dead worker's rows claimed again
    taken_over: float | None = None  # the last
    sent_done: float | None = None
    pending = select(func.count()).where(
        SendLog.workspace_id == ws.workspace_id, SendLog.status == "pending"
    )
    undelivered = select(func.count()).where(
        WebhookDelivery.endpoint_id == endpoint_id, WebhookDelivery.status == "pending"
    )
    while True:
        now = time.monotonic()
        if taken_over is None:
            still = await _count(db, held) + await _count(db, held_hooks)
            if first_taken is None and still < in_flight + hooks_in_flight:
                first_taken = now - killed_at
            if still == 0:
                taken_over = now - killed_at
        async with db.session(write=False) as session:
            status = await session.scalar(
                select(Campaign.status).where(Campaign.id == campaign["id"])
            )
        if status == "sent" and sent_done is None:
            sent_done = now
        if (
            sent_done
            and taken_over is not None
            and not await _count(db, pending)
            and not await _count(db, undelivered)
        ):
            break
        assert now - killed_at < FINISH_LIMIT, (
            f"not drained {FINISH_LIMIT:.0f} s after the kill: campaign {status}, "
            f"{await _count(db, pending)} messages and {await _count(db, undelivered)} "
            f"deliveries pending, dead worker's rows taken over: {taken_over is not None}"
        )
        await asyncio.sleep(0.2)
    drained = time.monotonic()
    assert not alive(builders), "the dead worker's build processes are still running"
    for name in ("server1", "worker1"):
        assert processes[name].poll() is None, f"{name} died:\n{_tail(logs[name])}"
        # No 500, no failed batch or delivery loop: the survivors logged no error.
        text = logs[name].read_text(errors="replace")
        errors = [line for line in text.splitlines() if " ERROR " in line or "Traceback" in line]
        assert errors == [], f"{name}:\n" + _tail(logs[name])

    # ---------------------------------------------------------------- what the sink got
    by_id: Counter[str] = Counter()
    to: dict[str, str] = {}
    for item in sink.received:
        header = MESSAGE_ID.search(item.data.partition(b"\r\n\r\n")[0])
        assert header, item.data[:2000]
        message_id = header.group(1).decode()
        by_id[message_id] += 1
        to[message_id] = item.recipients[0]
    duplicates = sum(n - 1 for n in by_id.values())
    async with db.session(write=False) as session:
        rows = (
            await session.execute(
                select(
                    SendLog.id, SendLog.kind, SendLog.status, SendLog.message_id, SendLog.email
                ).where(SendLog.workspace_id == ws.workspace_id)
            )
        ).all()
    campaign_rows = [r for r in rows if r.kind == "campaign"]
    assert Counter(r.status for r in campaign_rows) == {"sent": RECIPIENTS}
    everyone = {f"r{i:05d}@mailtest.io" for i in range(RECIPIENTS)}
    assert {r.email for r in campaign_rows} == everyone
    mailed = set(to.values())
    assert everyone <= mailed, f"{len(everyone - mailed)} recipients never got the campaign"
    for row in campaign_rows:  # the Message-ID recorded (no <>) is the one that arrived
        assert to.get(row.message_id) == row.email, row
    finished = await ok(await client.get(f"/api/v1/campaigns/{campaign['id']}", headers=ws.headers))
    assert finished["campaign"]["status"] == "sent"
    assert finished["campaign"]["stats"]["sent"] == RECIPIENTS
    assert duplicates <= in_flight <= LANES * SEND_BATCH + EXPRESS_BATCH, (
        duplicates,
        in_flight,
    )

    # Every send answered 202 went out (and the ones without an answer changed nothing).
    by_row = {r.id: r for r in rows}
    for message_id, email in load.accepted.items():
        row = by_row.get(message_id)
        assert row is not None and row.kind == "transactional", message_id
        assert (row.status, row.email) == ("sent", email), row
        assert to.get(row.message_id) == email, row
    assert Counter(r.status for r in rows if r.kind == "transactional") == {
        "sent": sum(r.kind == "transactional" for r in rows)
    }

    # ------------------------------------------------------------------- the API's answers
    failed = [c for c in load.calls if c.status is None]
    answered = [c for c in load.calls if c.status is not None]
    assert load.unexpected == [], load.unexpected[:10]
    # Only requests in flight at the kill went unanswered: sent before it, and at most one
    # per task of the load generator.
    assert all(c.started < killed_at for c in failed), (killed_at, failed)
    assert len(failed) <= CONCURRENCY, failed
    assert balancer.unserved == 0
    assert balancer.served[("127.0.0.1", ports[0])] > 0
    assert balancer.refused[("127.0.0.1", ports[0])] > 0  # after the kill: skipped
    assert balancer.refused[("127.0.0.1", ports[1])] == 0
    # What was answered is in the database.
    async with db.session(write=False) as session:
        ids = list(load.created.values())
        found = set((await session.scalars(select(Contact.id).where(Contact.id.in_(ids)))).all())
        assert found == set(ids), f"{len(set(ids) - found)} created contacts missing"
        there = set(
            (
                await session.scalars(
                    select(Contact.email).where(
                        Contact.workspace_id == ws.workspace_id,
                        Contact.email.in_(load.imported),
                    )
                )
            ).all()
        )
        assert there == set(load.imported), f"{len(set(load.imported) - there)} imported missing"
        deliveries = (
            await session.execute(
                select(WebhookDelivery.id, WebhookDelivery.status).where(
                    WebhookDelivery.endpoint_id == endpoint_id
                )
            )
        ).all()
        unanswered_made = int(
            await session.scalar(
                select(func.count()).where(
                    Contact.workspace_id == ws.workspace_id,
                    Contact.email.like("c%@mailtest.io"),
                    Contact.id.not_in(ids),
                )
            )
            or 0
        )

    # ------------------------------------------------------------------------- webhooks
    assert Counter(status for _id, status in deliveries) == {"delivered": len(deliveries)}
    assert {delivery for delivery, _status in deliveries} <= set(receiver.seen)
    first: dict[str, tuple[float, dict[str, Any]]] = {}
    for delivery, at, body in receiver.arrivals:
        if delivery not in first:
            first[delivery] = (at, json.loads(body))
    told = {
        envelope["data"]["contact"]["email"]
        for _at, envelope in first.values()
        if envelope["event"] == "contact.created"
    }
    missing = (set(load.created) | set(load.imported)) - told
    assert not missing, (
        f"{len(missing)} contact.created never delivered, e.g. {sorted(missing)[:3]}"
    )
    lags = [
        at - datetime.fromisoformat(envelope["created_at"].replace("Z", "+00:00")).timestamp()
        for at, envelope in first.values()
    ]
    webhook_duplicates = sum(n - 1 for n in receiver.seen.values())
    # Only a delivery the dead worker had claimed and not recorded can arrive twice.
    assert webhook_duplicates <= hooks_in_flight, (webhook_duplicates, hooks_in_flight)

    # -------------------------------------------------------------------------- figures
    latencies = [c.ended - c.started for c in answered]
    kinds = Counter(c.kind for c in answered)
    sent_seconds = (sent_done or drained) - sending_from
    lines = [
        f"[scale-out {BACKEND}] 2 servers + 2 workers; SIGKILL of one of each after "
        f"{sent_at_kill:,} messages at the sink ({killed_at - sending_from:.1f} s into the send)",
        f"  campaign: {RECIPIENTS:,} recipients sent in {sent_seconds:.1f} s = "
        f"{RECIPIENTS / sent_seconds:.0f} msg/s overall; "
        f"{sent_at_kill / (killed_at - sending_from):.0f} msg/s before the kill",
        f"  duplicates at the sink: {duplicates} (dead worker held {in_flight} send rows, "
        f"{hooks_in_flight} webhook deliveries; bound {LANES * SEND_BATCH + EXPRESS_BATCH})",
        f"  dead worker's rows: the first claimed again {first_taken or 0:.1f} s after the "
        f"kill, the last {taken_over:.1f} s after it; all drained {drained - killed_at:.1f} s "
        f"after it",
        f"  API: {len(answered):,} requests answered ({dict(kinds)}) in "
        f"{load_ended - sending_from:.1f} s, p50 {_percentile(latencies, 0.5) * 1000:.0f} ms, "
        f"p99 {_percentile(latencies, 0.99) * 1000:.0f} ms; {len(failed)} unanswered (in flight "
        f"on the killed server), {unanswered_made} of them creates that committed anyway",
        "  by kind, p50/p99: "
        + ", ".join(
            f"{kind} {_ms([c.ended - c.started for c in answered if c.kind == kind])}"
            for kind in sorted(kinds)
        ),
        f"  balancer connections: served {dict(balancer.served)}, refused {dict(balancer.refused)}",
        f"  webhooks: {len(deliveries):,} contact.created delivered, {webhook_duplicates} "
        f"delivered twice; lag p50 {_percentile(lags, 0.5):.2f} s, p99 "
        f"{_percentile(lags, 0.99):.2f} s",
        f"  transactional: {len(load.accepted)} accepted, all sent",
    ]
    print("\n" + "\n".join(lines), file=sys.stderr)
