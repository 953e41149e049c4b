"""An installation of several processes as an operator runs it: `mailroom serve --workers 2
--no-worker` beside a `mailroom worker`, `MAILROOM_LOG_FORMAT=json`. `/metrics` (from either
server process) sums what every process counted (prometheus-client's multiprocess mode) and
shows the worker's heartbeat; every line the processes write is one JSON object."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

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


def sample(text: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and all(found.labels.get(k) == v for k, v in labels.items()):
                return float(found.value)
    return 0.0


async def test_two_servers_and_a_worker_report_as_one(cli_env: Any, ws: Any, tmp_path: Path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith("MAILROOM_") and k != "PROMETHEUS_MULTIPROC_DIR"
        },
        **cli_env,
        "MAILROOM_PUBLIC_URL": base,
        "MAILROOM_LOG_FORMAT": "json",
        "MAILROOM_SEND_PROCESSES": "0",
    }
    server_log, worker_log = tmp_path / "serve.log", tmp_path / "worker.log"
    server = start(["serve", "--port", str(port), "--workers", "2", "--no-worker"], env, server_log)
    worker = start(["worker"], env, worker_log)
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            deadline = time.monotonic() + 90
            while True:
                assert server.poll() is None, server_log.read_text()[-3000:]
                with contextlib.suppress(httpx.TransportError):
                    if (await client.get("/healthz")).status_code == 200:
                        break
                assert time.monotonic() < deadline, "mailroom serve did not answer"
                await asyncio.sleep(0.2)
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
        assert sample(scraped, "mailroom_workers") == 1
        assert sample(scraped, "mailroom_worker_heartbeat_age_seconds") < 15
    finally:
        stop(server)
        stop(worker)

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
