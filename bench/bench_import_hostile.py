"""Issue 12 item 4: what a hostile upload costs everyone else. The app is served by a real uvicorn
in this process (its event loop is the one under test); a thread polls `/healthz` over a real
socket while another thread sends the upload. Per upload: its answer and duration, `/healthz`
p50/p99/max while it ran, and peak RSS.

Uploads (each about 5 MB, the upload limit):
- idn_rows: ~143,000 rows whose addresses all have a distinct non-ASCII domain;
- invalid_distinct: ~14,000 distinct invalid addresses that are slow to prove invalid;
- tiny_rows: ~446,000 tiny rows;
- suppressions_json: 5,000 non-ASCII-domain addresses in one JSON suppression import;
- valid_50k: a legitimate 50,000-row import, for comparison.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import uvicorn

from bench.bench_contacts_bulk import PeakRss, make_csv
from bench.common import BenchContext, percentiles, report

LIMIT = 5 * 1024 * 1024


def _fill(header: str, line: Callable[[int], str]) -> bytes:
    """Rows from `line(i)` until just under the upload limit."""
    parts, size, i = [header], len(header) + 1, 0
    while True:
        row = line(i)
        if size + len(row.encode()) + 1 > LIMIT - 1024:
            break
        parts.append(row)
        size += len(row.encode()) + 1
        i += 1
    return ("\n".join(parts) + "\n").encode()


def idn_rows() -> bytes:
    return _fill("email", lambda i: f"u{i}@dö{i}.de")


def invalid_distinct() -> bytes:
    # Each a distinct domain of 11 labels of ~20 non-ASCII letters: only the full IDNA check
    # (~2 ms each) proves it too long.
    tail = ".".join(["ü" * 20] * 10)
    return _fill("email", lambda i: f"x@ü{i}{'ü' * 14}.{tail}")


def tiny_rows() -> bytes:
    return _fill("email", lambda i: f"{i}@b.io")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HealthPoller:
    """Calls /healthz every INTERVAL from its own thread, one request at a time. A request
    that stalls also stands for the calls a steady client would have made meanwhile (each
    counted from when it was due), so a long stall weighs in the percentiles as it would for
    real clients rather than as one sample."""

    INTERVAL = 0.01

    def __init__(self, base: str) -> None:
        self.base = base
        self.samples: list[float] = []
        self.answered = 0
        self.failures = 0
        self._stop = threading.Event()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        with httpx.Client(base_url=self.base, timeout=300) as client:
            due = time.perf_counter()
            while not self._stop.is_set():
                start = time.perf_counter()
                try:
                    ok = client.get("/healthz").status_code == 200
                except httpx.HTTPError:
                    ok = False
                end = time.perf_counter()
                self.answered += 1
                self.failures += 0 if ok else 1
                while due <= end:  # every call due while this one was out
                    self.samples.append((end - max(due, start)) * 1000)
                    due += self.INTERVAL
                time.sleep(max(0.0, due - time.perf_counter()))

    def stop(self) -> None:
        """Blocks until the last request is answered: call it off the served event loop."""
        self._stop.set()
        self._thread.join()


def _send(base: str, headers: dict[str, str], kind: str, payload: Any) -> httpx.Response:
    with httpx.Client(base_url=base, timeout=600, headers=headers) as client:
        if kind == "suppressions_json":
            return client.post("/api/v1/suppressions", json=payload)
        return client.post(
            "/api/v1/contacts/import", files={"file": ("hostile.csv", payload, "text/csv")}
        )


async def run(ctx: BenchContext) -> None:
    uploads: list[tuple[str, str, Any]] = [
        ("idn_rows", "import", idn_rows()),
        ("invalid_distinct", "import", invalid_distinct()),
        ("tiny_rows", "import", tiny_rows()),
        (
            "suppressions_json",
            "suppressions_json",
            {"entries": [f"p{i}@dö{i}.de" for i in range(5000)]},
        ),
        ("valid_50k", "import", make_csv()),
    ]
    only = os.environ.get("BENCH_UPLOADS")  # e.g. "idn_rows,tiny_rows"
    if only:
        uploads = [u for u in uploads if u[0] in only.split(",")]
    async with ctx.fresh_app() as bench:
        port = _free_port()
        server = uvicorn.Server(
            uvicorn.Config(bench.app, host="127.0.0.1", port=port, log_level="warning")
        )
        serving = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.02)
        base = f"http://127.0.0.1:{port}"
        try:
            for name, kind, payload in uploads:
                size = len(payload) if isinstance(payload, bytes) else len(str(payload))
                poller = HealthPoller(base)
                with PeakRss() as rss:
                    poller.start()
                    await asyncio.sleep(0.2)  # a few calm samples first
                    start = time.perf_counter()
                    response = await asyncio.to_thread(_send, base, bench.headers, kind, payload)
                    seconds = time.perf_counter() - start
                    await asyncio.to_thread(poller.stop)
                figures = percentiles(poller.samples)
                report(
                    f"hostile upload {name}",
                    ctx.backend,
                    bytes=size,
                    status=response.status_code,
                    answer=response.text[:90],
                    seconds=seconds,
                    healthz_answered=poller.answered,
                    healthz_p50_ms=figures["p50"],
                    healthz_p99_ms=figures["p99"],
                    healthz_max_ms=max(poller.samples, default=0.0),
                    healthz_failed=poller.failures,
                    peak_rss_mb=rss.mb,
                )
        finally:
            server.should_exit = True
            await serving
