"""Issue 4's figures: import 50,000 rows (~5 MB) into an empty workspace and again over the same
contacts; export 50,000 contacts with 10 custom fields; bulk add_tag and unsubscribe over a
50,000-contact filter. Rows/s, seconds and peak RSS (this process: the app runs in-process).

Issue 34: each import and export is printed beside its raw floor (contacts_floor), measured
just before it in the same process, with the ratio of the two, in wall seconds and in this
process's CPU seconds (steadier than wall on a shared machine)."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import random
import threading

import psutil

from bench.common import BenchContext, report
from bench.contacts_floor import Measure, export_floor, import_floor

ROWS = 50_000
FIELDS = [f"field_{i}" for i in range(10)]


def make_csv() -> bytes:
    rng = random.Random(11)
    header = ["Email Address", "First Name", "Last Name", "Status", "Tags", *FIELDS]
    lines = [",".join(header)]
    for i in range(ROWS):
        values = [
            f"person{i}@domain{i % 400}.io",
            rng.choice(["Anna", "Bob", "Carla", "Dmitri"]),
            rng.choice(["Smith", "Garcia", "Rossi"]),
            "subscribed" if i % 10 else "unsubscribed",
            rng.choice(["vip", "news", "vip;news", ""]),
            *(str((i * (n + 3)) % 997) for n in range(10)),
        ]
        lines.append(",".join(values))
    return ("\n".join(lines) + "\n").encode()


class PeakRss:
    """Samples this process's resident memory every 20 ms while a step runs."""

    def __init__(self) -> None:
        self.process = psutil.Process()
        self.peak = 0
        self._stop = threading.Event()

    def __enter__(self) -> PeakRss:
        # Hand memory freed by earlier steps back to the OS first, so a step's peak is its own
        # and not what the allocator kept from the previous one.
        gc.collect()
        with contextlib.suppress(OSError):
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        self.start = self.peak = self.process.memory_info().rss
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def mb(self) -> float:
        return self.peak / 1024 / 1024

    @property
    def growth_mb(self) -> float:
        """How much this step added on top of what the process already held."""
        return (self.peak - self.start) / 1024 / 1024


async def run(ctx: BenchContext) -> None:
    """Twice: with no webhook endpoint (events have no reader, so none are written), and with
    one endpoint subscribed to every event (an event and a delivery row per contact)."""
    for subscribed in (False, True):
        await _run(ctx, subscribed)


async def _run(ctx: BenchContext, subscribed: bool) -> None:
    content = make_csv()
    async with ctx.fresh_app(webhook_allow_networks=["127.0.0.0/8"]) as bench:
        client, headers = bench.client, bench.headers
        suffix = " [webhook on every event]" if subscribed else ""
        if subscribed:
            from mailroom.events.catalog import EVENT_NAMES

            response = await client.post(
                "/api/v1/webhooks",
                json={"url": "http://127.0.0.1:9/hook", "event_types": list(EVENT_NAMES)},
                headers=headers,
            )
            assert response.status_code == 201, response.text
        # One-off start-up work (the route permission index is built on the first request)
        # belongs to no step: one cheap request first.
        warm = await client.get("/api/v1/contacts?limit=1", headers=headers)
        assert warm.status_code == 200, warm.text
        for label in ("import 50k into empty workspace", "import same 50k again (skip_duplicates)"):
            floor = await import_floor(bench.app, content)
            with PeakRss() as rss, Measure() as timer:
                response = await client.post(
                    "/api/v1/contacts/import",
                    files={"file": ("contacts.csv", content, "text/csv")},
                    headers=headers,
                )
            assert response.status_code == 200, response.text
            body = response.json()
            report(
                label + suffix,
                ctx.backend,
                bytes=len(content),
                seconds=timer.seconds,
                rows_per_s=ROWS / timer.seconds,
                floor_s=floor.seconds,
                ratio=timer.seconds / floor.seconds,
                cpu_s=timer.cpu,
                floor_cpu_s=floor.cpu,
                cpu_ratio=timer.cpu / floor.cpu,
                peak_rss_mb=rss.mb,
                rss_growth_mb=rss.growth_mb,
                imported=body["imported"],
                updated=body["updated"],
            )
        floor = await export_floor(bench.app, bench.workspace_id, FIELDS)
        with PeakRss() as rss, Measure() as timer:
            size = 0
            async with client.stream("GET", "/api/v1/contacts/export", headers=headers) as stream:
                async for chunk in stream.aiter_bytes():
                    size += len(chunk)
        report(
            "export 50k contacts, 10 custom fields" + suffix,
            ctx.backend,
            seconds=timer.seconds,
            rows_per_s=ROWS / timer.seconds,
            floor_s=floor.seconds,
            ratio=timer.seconds / floor.seconds,
            cpu_s=timer.cpu,
            floor_cpu_s=floor.cpu,
            cpu_ratio=timer.cpu / floor.cpu,
            mb=size / 1024 / 1024,
            peak_rss_mb=rss.mb,
            rss_growth_mb=rss.growth_mb,
        )
        tag = await client.post("/api/v1/tags", json={"name": "bench"}, headers=headers)
        tag_id = tag.json()["tag"]["id"]
        for label, body in (
            ("bulk add_tag over 50k filter", {"action": "add_tag", "tag_id": tag_id, "filter": {}}),
            (
                "bulk unsubscribe over 50k filter",
                {"action": "unsubscribe", "filter": {"status": "subscribed"}},
            ),
        ):
            with PeakRss() as rss, Measure() as timer:
                response = await client.post("/api/v1/contacts/bulk", json=body, headers=headers)
            assert response.status_code == 200, response.text
            report(
                label + suffix,
                ctx.backend,
                seconds=timer.seconds,
                peak_rss_mb=rss.mb,
                rss_growth_mb=rss.growth_mb,
                result=response.json(),
            )
