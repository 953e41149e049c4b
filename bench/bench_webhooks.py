"""Webhook delivery: 10,000 events to 5 endpoints on a local receiver (50,000 deliveries)
worked by one `mailroom worker` process: deliveries per second; then a steady trickle of
events for the delay from event commit to first attempt (p50/p99)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time

import httpx

from bench.common import BenchContext, report

EVENTS = 10_000
ENDPOINTS = 5
TRICKLE_SECONDS = 15
TRICKLE_PER_SECOND = 20


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _wait_for(receiver: httpx.AsyncClient, target: int, limit: float) -> dict:
    deadline = time.monotonic() + limit
    while True:
        stats = (await receiver.get("/stats")).json()
        if stats["count"] >= target or time.monotonic() > deadline:
            return stats
        await asyncio.sleep(0.1)


async def run(ctx: BenchContext) -> None:
    port = _free_port()
    receiver_proc = subprocess.Popen(
        [sys.executable, "-m", "bench.webhook_receiver", str(port)], cwd=os.getcwd()
    )
    await asyncio.sleep(1.0)
    async with (
        ctx.fresh_app(webhook_allow_networks=["127.0.0.0/8"]) as bench,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as receiver,
    ):
        for n in range(ENDPOINTS):
            response = await bench.client.post(
                "/api/v1/webhooks",
                json={
                    "url": f"http://127.0.0.1:{port}/hook/{n}",
                    "event_types": ["contact.created"],
                },
                headers=bench.headers,
            )
            assert response.status_code == 201, response.text
        env = {
            **os.environ,
            "MAILROOM_DATABASE_URL": bench.settings.resolved_database_url,
            "MAILROOM_SECRET_KEY": "bench",
            "MAILROOM_DATA_DIR": bench.tmp,
            "MAILROOM_WEBHOOK_ALLOW_NETWORKS": "127.0.0.0/8",
        }
        worker = subprocess.Popen(
            [sys.executable, "-m", "mailroom", "worker"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            await asyncio.sleep(2.0)  # let the worker start
            rows = "".join(f"u{i}@bench{i % 97}.io\n" for i in range(EVENTS))
            started = time.perf_counter()
            response = await bench.client.post(
                "/api/v1/contacts/import",
                files={"file": ("c.csv", f"email\n{rows}".encode())},
                headers=bench.headers,
            )
            assert response.status_code == 200, response.text
            committed = time.perf_counter()
            stats = await _wait_for(receiver, EVENTS * ENDPOINTS, 600)
            drained = time.perf_counter()
            report(
                f"burst: {EVENTS:,} events x {ENDPOINTS} endpoints",
                ctx.backend,
                deliveries=stats["count"],
                unique=stats["unique"],
                import_s=committed - started,
                drain_s=drained - committed,
                deliveries_per_s=stats["count"] / (drained - committed),
            )
            await receiver.post("/reset")
            sent = 0
            start = time.perf_counter()
            while time.perf_counter() - start < TRICKLE_SECONDS:
                tick = time.perf_counter()
                for _ in range(TRICKLE_PER_SECOND):
                    await bench.client.post(
                        "/api/v1/contacts",
                        json={"email": f"t{sent}@trickle.io"},
                        headers=bench.headers,
                    )
                    sent += 1
                await asyncio.sleep(max(0.0, 1.0 - (time.perf_counter() - tick)))
            stats = await _wait_for(receiver, sent * ENDPOINTS, 60)
            report(
                f"steady: {TRICKLE_PER_SECOND} events/s x {ENDPOINTS} endpoints",
                ctx.backend,
                deliveries=stats["count"],
                p50_delay_s=stats["p50_delay_s"],
                p99_delay_s=stats["p99_delay_s"],
            )
        finally:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
    receiver_proc.terminate()
    receiver_proc.wait(timeout=10)
