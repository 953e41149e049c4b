"""Webhook delivery, worked by one `mailroom worker` process to a local receiver:

1. one endpoint, a 10,000-contact import (10,000 deliveries): deliveries per second, and the
   lag of the last delivery (its event's time to its arrival);
2. one endpoint again, while API clients write as fast as they can (on SQLite they take the
   one write lock turn about with the worker): deliveries per second over a window; then
   while they create contacts one by one (each a delivery): whether delivery keeps up, and
   the lag from each event to its arrival, p50/p99;
3. five endpoints, a 10,000-contact import (50,000 deliveries): deliveries per second and lag;
4. a steady trickle of events: the delay from event commit to first attempt (p50/p99).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time

import httpx

from bench.common import BenchApp, BenchContext, report

EVENTS = 10_000
ENDPOINTS = 5
WRITING_EVENTS = 3_000
WRITING_SECONDS = 15
WRITERS = 4
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


async def _hook(bench: BenchApp, port: int, n: int) -> None:
    response = await bench.client.post(
        "/api/v1/webhooks",
        json={"url": f"http://127.0.0.1:{port}/hook/{n}", "event_types": ["contact.created"]},
        headers=bench.headers,
    )
    assert response.status_code == 201, response.text


async def _import(bench: BenchApp, prefix: str, count: int) -> float:
    """Import `count` new contacts (one contact.created event each); the time.time() of the
    commit."""
    rows = "".join(f"{prefix}{i}@bench{i % 97}.io\n" for i in range(count))
    response = await bench.client.post(
        "/api/v1/contacts/import",
        files={"file": ("c.csv", f"email\n{rows}".encode())},
        headers=bench.headers,
    )
    assert response.status_code == 200, response.text
    return time.time()


async def _burst(
    ctx: BenchContext, bench: BenchApp, receiver: httpx.AsyncClient, prefix: str, hooks: int
) -> None:
    await receiver.post("/reset")
    started = time.time()
    committed = await _import(bench, prefix, EVENTS)
    stats = await _wait_for(receiver, EVENTS * hooks, 900)
    span = max(stats["last_at"] - committed, 1e-9)
    report(
        f"burst: {EVENTS:,} events x {hooks} endpoint{'s' if hooks > 1 else ''}",
        ctx.backend,
        deliveries=stats["count"],
        unique=stats["unique"],
        import_s=committed - started,
        drain_s=span,
        deliveries_per_s=stats["count"] / span,
        last_delivery_lag_s=stats["max_delay_s"],
    )


async def _while_writing(ctx: BenchContext, bench: BenchApp, receiver: httpx.AsyncClient) -> None:
    """Deliveries to one endpoint while API clients keep writing (contact updates: events
    no endpoint takes, so every delivery counted is from the import)."""
    listed = await bench.client.get(
        "/api/v1/contacts", params={"limit": 100}, headers=bench.headers
    )
    ids = [c["id"] for c in listed.json()["contacts"]]
    await _import(bench, "w", WRITING_EVENTS)
    await receiver.post("/reset")  # from here on
    writes = 0
    stop = time.monotonic() + WRITING_SECONDS

    async def writer(n: int) -> None:
        nonlocal writes
        while time.monotonic() < stop:
            contact = ids[(writes + n) % len(ids)]
            answer = await bench.client.patch(
                f"/api/v1/contacts/{contact}",
                json={"first_name": f"n{writes}"},
                headers=bench.headers,
            )
            assert answer.status_code == 200, answer.text
            writes += 1

    started = time.monotonic()
    await asyncio.gather(*(writer(n) for n in range(WRITERS)))
    elapsed = time.monotonic() - started
    stats = (await receiver.get("/stats")).json()
    report(
        f"one endpoint while {WRITERS} API clients write",
        ctx.backend,
        seconds=elapsed,
        api_writes_per_s=writes / elapsed,
        deliveries_per_s=stats["count"] / elapsed,
    )
    await _wait_for(receiver, WRITING_EVENTS, 900)  # the rest, before the next phase


async def _while_creating(ctx: BenchContext, bench: BenchApp, receiver: httpx.AsyncClient) -> None:
    """Deliveries to one endpoint while API clients create contacts one by one (each a
    `contact.created` event the endpoint takes): does delivery keep up with creation?"""
    await receiver.post("/reset")
    created = 0
    stop = time.monotonic() + WRITING_SECONDS

    async def writer(n: int) -> None:
        nonlocal created
        while time.monotonic() < stop:
            answer = await bench.client.post(
                "/api/v1/contacts",
                json={"email": f"created{n}x{created}@bench.io"},
                headers=bench.headers,
            )
            assert answer.status_code == 201, answer.text
            created += 1

    started = time.monotonic()
    await asyncio.gather(*(writer(n) for n in range(WRITERS)))
    elapsed = time.monotonic() - started
    during = (await receiver.get("/stats")).json()
    stats = await _wait_for(receiver, created, 120)
    report(
        f"one endpoint while {WRITERS} API clients create contacts",
        ctx.backend,
        seconds=elapsed,
        creates_per_s=created / elapsed,
        delivered_during=during["count"],
        deliveries_per_s=during["count"] / elapsed,
        p50_lag_s=stats["p50_delay_s"],
        p99_lag_s=stats["p99_delay_s"],
    )


async def _trickle(ctx: BenchContext, bench: BenchApp, receiver: httpx.AsyncClient) -> None:
    await receiver.post("/reset")
    sent = 0
    start = time.perf_counter()
    while time.perf_counter() - start < TRICKLE_SECONDS:
        tick = time.perf_counter()
        for _ in range(TRICKLE_PER_SECOND):
            await bench.client.post(
                "/api/v1/contacts", json={"email": f"t{sent}@trickle.io"}, headers=bench.headers
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
        await _hook(bench, port, 0)
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
            await _burst(ctx, bench, receiver, "one", 1)
            await _while_writing(ctx, bench, receiver)
            await _while_creating(ctx, bench, receiver)
            for n in range(1, ENDPOINTS):
                await _hook(bench, port, n)
            await _burst(ctx, bench, receiver, "five", ENDPOINTS)
            await _trickle(ctx, bench, receiver)
        finally:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
    receiver_proc.terminate()
    receiver_proc.wait(timeout=10)
