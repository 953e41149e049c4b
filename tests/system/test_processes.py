"""An installation of several processes as an operator runs it: `mailroom serve --workers 2
--no-worker` beside a `mailroom worker`, `MAILROOM_LOG_FORMAT=json`. `/metrics` (from either
server process) sums what every process counted (prometheus-client's multiprocess mode) and
shows the worker's heartbeat; every line the processes write is one JSON object. Each server
process beats on a row of its own (role "server") while it runs, so `mailroom restore` refuses
to replace the database under it, and removes the row when it stops cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select

from mailroom.core.clock import utcnow
from mailroom.db import Database
from mailroom.models import WorkerProcess
from mailroom.worker import FORGET_DEAD_AFTER, SERVER, register, retire
from tests.conftest import BACKEND

REQUESTS = 24


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "mailroom", *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=out,
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def environment(cli_env: dict[str, str], **extra: str) -> dict[str, str]:
    """The test run's environment without its MAILROOM_* settings, with the installation's."""
    inherited = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MAILROOM_") and k != "PROMETHEUS_MULTIPROC_DIR"
    }
    return {**inherited, **cli_env, **extra}


async def answering(client: httpx.AsyncClient, process: subprocess.Popen[bytes], log: Path) -> None:
    """Poll /healthz until the server answers (it has started: its lifespan ran)."""
    deadline = time.monotonic() + 90
    while True:
        assert process.poll() is None, log.read_text()[-3000:]
        with contextlib.suppress(httpx.TransportError):
            if (await client.get("/healthz")).status_code == 200:
                return
        assert time.monotonic() < deadline, "mailroom serve did not answer"
        await asyncio.sleep(0.2)


async def heartbeat_rows(db: Database) -> list[Any]:
    """The `workers` table's rows (id, role, host, pid, heartbeat_at)."""
    columns = (WorkerProcess.id, WorkerProcess.role, WorkerProcess.host, WorkerProcess.pid)
    async with db.session() as session:
        return list((await session.execute(select(*columns, WorkerProcess.heartbeat_at))).all())


async def roles_until(db: Database, expected: dict[str, int], deadline: float) -> None:
    """Poll the `workers` table until it holds `expected` rows of each role."""
    while True:
        rows = await heartbeat_rows(db)
        found = {role: sum(row.role == role for row in rows) for role in expected}
        if found == expected and len(rows) == sum(expected.values()):
            return
        assert time.monotonic() < deadline, f"{found} heartbeat rows, not {expected}"
        await asyncio.sleep(0.2)


def sample(text: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and all(found.labels.get(k) == v for k, v in labels.items()):
                return float(found.value)
    return 0.0


async def test_two_servers_and_a_worker_report_as_one(
    cli_env: Any, ws: Any, db: Database, tmp_path: Path
):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = environment(
        cli_env,
        MAILROOM_PUBLIC_URL=base,
        MAILROOM_LOG_FORMAT="json",
        MAILROOM_SEND_PROCESSES="0",
    )
    server_log, worker_log = tmp_path / "serve.log", tmp_path / "worker.log"
    server = start(["serve", "--port", str(port), "--workers", "2", "--no-worker"], env, server_log)
    worker = start(["worker"], env, worker_log)
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            await answering(client, server, server_log)
            deadline = time.monotonic() + 90
            for _ in range(REQUESTS):  # new connections: both server processes take some
                async with httpx.AsyncClient(base_url=base, timeout=30) as one:
                    answer = await one.get(
                        "/api/v1/contacts?q=jane.doe%40mail.example&token=QuerySecret123",
                        headers=ws.headers,
                    )
                    assert answer.status_code == 200, answer.text
            # The worker's first heartbeat (it beats every 5 s).
            while True:
                scraped = (await client.get("/metrics")).text
                if sample(scraped, "mailroom_workers") >= 1 or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.3)
        served = {"route": "/api/v1/contacts", "method": "GET", "status": "200"}
        assert sample(scraped, "mailroom_http_requests_total", **served) == REQUESTS
        assert sample(scraped, "mailroom_workers") == 1  # the servers' rows are not workers
        assert sample(scraped, "mailroom_worker_heartbeat_age_seconds") < 15
        # Each server process beats on its own row; the worker on one.
        await roles_until(db, {"server": 2, "worker": 1}, time.monotonic() + 60)
        assert {row.pid for row in await heartbeat_rows(db) if row.role == "worker"} == {worker.pid}
    finally:
        stop(server)
        stop(worker)
    assert (server.returncode, worker.returncode) == (0, 0)
    assert await heartbeat_rows(db) == []  # every process removed its row on the way out

    logged = server_log.read_text().splitlines() + worker_log.read_text().splitlines()
    entries = [json.loads(line) for line in logged if line.strip()]  # every line is JSON
    access = [e for e in entries if e["logger"] == "mailroom.access"]
    assert sum(e.get("route") == "/api/v1/contacts" for e in access) == REQUESTS
    assert all(e["request_id"] and e["level"] == "info" for e in access)
    assert {e["workspace_id"] for e in access if e.get("route") == "/api/v1/contacts"} == {
        ws.workspace_id
    }
    everything = "\n".join(logged)
    for secret in (ws.headers["x-api-key"], "QuerySecret123", "jane.doe"):
        assert secret not in everything
    assert not [e for e in entries if e["logger"] == "uvicorn.access"]  # ours alone, redacted
    metrics_dir = Path(cli_env["MAILROOM_DATA_DIR"]) / "metrics"
    assert any(metrics_dir.glob("counter_*.db"))  # where the processes kept their counts


@pytest.mark.skipif(
    BACKEND == "postgresql" and not all(shutil.which(t) for t in ("pg_dump", "pg_restore")),
    reason="a PostgreSQL backup needs pg_dump and pg_restore (Debian: postgresql-client)",
)
async def test_restore_refuses_while_a_server_without_worker_runs(
    cli_env: Any, db: Database, tmp_path: Path
):
    """`mailroom serve --no-worker` runs no worker loops, yet restore sees it running: its row
    (role "server") is there from start-up, refreshed every few seconds, gone after SIGTERM."""
    archive = tmp_path / "backup.tar.gz"
    env = environment(cli_env, MAILROOM_SEND_PROCESSES="0")
    made = subprocess.run(
        [sys.executable, "-m", "mailroom", "backup", str(archive)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr

    def restore_check() -> tuple[int, str]:
        ran = subprocess.run(
            [sys.executable, "-m", "mailroom", "restore", str(archive), "--force", "--check"],
            env={**env, "COLUMNS": "300"},
            capture_output=True,
            text=True,
            check=False,
        )
        return ran.returncode, " ".join((ran.stdout + " " + ran.stderr).split())

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    server = start(
        ["serve", "--port", str(port), "--no-worker"], {**env, "MAILROOM_PUBLIC_URL": base}, log
    )
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            await answering(client, server, log)
        [row] = await heartbeat_rows(db)  # made before the server answered
        host = socket.gethostname()[:40]
        assert (row.role, row.pid, row.host) == ("server", server.pid, host)

        code, said = restore_check()
        assert code == 1
        assert (
            f"Mailroom is running on the target database (server pid {server.pid} on {host}): "
            "stop `mailroom serve` and `mailroom worker` first; nothing was changed." in said
        )

        # Refreshed on the workers' cadence (every 5 s), not only written at start-up.
        deadline = time.monotonic() + 20
        while True:
            [again] = await heartbeat_rows(db)
            if again.heartbeat_at > row.heartbeat_at:
                break
            assert time.monotonic() < deadline, "the server's heartbeat was not refreshed"
            await asyncio.sleep(0.2)
        assert again.id == row.id
    finally:
        stop(server)
    # Stopped by SIGTERM, not killed: uvicorn shuts down, then raises the signal again.
    assert server.returncode in (0, -signal.SIGTERM), log.read_text()[-3000:]
    assert await heartbeat_rows(db) == []  # a clean stop removes its row
    code, said = restore_check()
    assert code == 0, said
    assert "The archive can be restored here (nothing was changed: --check)." in said


async def test_a_server_row_dead_for_a_day_is_forgotten_and_a_server_retires_its_row(
    db: Database,
):
    """`register` (of any role) removes every row dead for a day, a killed server's too; a
    server's `retire` only removes its row (a server never holds claimed rows)."""
    long_dead = utcnow() - FORGET_DEAD_AFTER - timedelta(minutes=1)
    quiet = utcnow() - timedelta(hours=1)
    async with db.transaction() as session:
        for worker_id, role, at in (
            ("web:1:dead", "server", long_dead),
            ("work:2:dead", "worker", long_dead),
            ("web:3:quiet", "server", quiet),
        ):
            host, pid, _ = worker_id.split(":")
            session.add(
                WorkerProcess(
                    id=worker_id, host=host, pid=int(pid), role=role, started_at=at, heartbeat_at=at
                )
            )
    await register(db, "web:4:new", SERVER)
    rows = await heartbeat_rows(db)
    assert sorted((row.id, row.role) for row in rows) == [
        ("web:3:quiet", "server"),
        ("web:4:new", "server"),
    ]
    assert await retire(db, "web:4:new", SERVER) == 0
    assert [row.id for row in await heartbeat_rows(db)] == ["web:3:quiet"]
