"""The metrics files of processes that are gone (prometheus-client's multiprocess mode: one
`counter_<pid>.db`, `histogram_<pid>.db`, ... per process) are added up into one archive per
type, at a process's start and at a scrape, and removed: the directory stops growing with every
restart, and `GET /metrics` (read with prometheus-client's own parser) shows the very same
totals, never doubled nor dropped, whether compactions race each other and the scrapes or one
is killed half-way; a live process's files are never merged."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, values
from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from mailroom.core import metrics, multiprocess

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
GONE = 2**30  # past any pid_max (2**22 at most): never a live process

# A process of the installation: counts with core.metrics, then ends (or stays, until its
# stdin closes). Every observation is a binary fraction, so the sums are exact in any order.
COUNTING = """
import sys
from mailroom.core import metrics

emails, stay = int(sys.argv[1]), sys.argv[2] == "stay"
metrics.EMAILS.labels(kind="campaign", outcome="sent").inc(emails)
metrics.EMAILS.labels(kind="transactional", outcome="bounced").inc()
for seconds in (0.25, 2.0, 60.0):
    metrics.HTTP_LATENCY.labels(route="/api/v1/contacts", method="GET").observe(seconds)
metrics.DKIM_SIGNING.observe(0.0009765625)
metrics.SMTP_OPEN.inc()
if stay:
    print("ready", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A multiprocess directory the app's /metrics reads (as `serve` sets it up)."""
    chosen = tmp_path / "metrics"
    chosen.mkdir()
    monkeypatch.setenv(multiprocess.MULTIPROC_ENV, str(chosen))
    monkeypatch.setattr(metrics, "MULTIPROCESS", True)
    return chosen


def process_env(directory: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("MAILROOM_")},
        multiprocess.MULTIPROC_ENV: str(directory),
    }


def counted(directory: Path, *emails: int) -> list[int]:
    """Processes that counted and ended: their pids."""
    started = [
        subprocess.Popen(
            [sys.executable, "-c", COUNTING, str(n), "end"], env=process_env(directory)
        )
        for n in emails
    ]
    for process in started:
        assert process.wait(60) == 0
    return [process.pid for process in started]


def added_up(text: str) -> Samples:
    """The counters' and histograms' samples of an exposition."""
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        if family.type in ("counter", "histogram", "summary"):
            for sample in family.samples:
                found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def as_is(directory: Path) -> Samples:
    """What the files hold now, read by the collector without compacting anything."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))
    return added_up(generate_latest(registry).decode())


async def scrape(client: httpx.AsyncClient) -> tuple[Samples, str]:
    answer = await client.get("/metrics")
    assert answer.status_code == 200, answer.text
    return added_up(answer.text), answer.text


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def files(directory: Path) -> set[str]:
    return {path.name for path in directory.iterdir()} - {multiprocess.LOCK_NAME}


def archived(directory: Path, kind: str) -> dict[str, float]:
    path = directory / f"{kind}_archive.db"
    return {k: v for k, v, _, _ in MmapedDict.read_all_values_from_file(str(path))}


def assert_totals(samples: Samples, emails: list[int]) -> None:
    """What processes that counted `emails` each (COUNTING) add up to."""
    n = len(emails)
    assert value(samples, "mailroom_emails_total", kind="campaign", outcome="sent") == sum(emails)
    assert value(samples, "mailroom_emails_total", kind="transactional", outcome="bounced") == n
    route = {"route": "/api/v1/contacts", "method": "GET"}
    assert value(samples, "mailroom_http_request_duration_seconds_count", **route) == 3 * n
    assert value(samples, "mailroom_http_request_duration_seconds_sum", **route) == 62.25 * n
    buckets = {"0.1": 0, "0.25": n, "1.0": n, "2.5": 2 * n, "30.0": 2 * n, "+Inf": 3 * n}
    for le, count in buckets.items():
        assert value(samples, "mailroom_http_request_duration_seconds_bucket", le=le, **route) == (
            count
        )
    assert value(samples, "mailroom_dkim_signing_seconds_count") == n
    assert value(samples, "mailroom_dkim_signing_seconds_sum") == 0.0009765625 * n


async def test_dead_processes_are_archived_and_the_scrape_keeps_every_total(
    client: httpx.AsyncClient, directory: Path, tmp_path: Path
) -> None:
    live = subprocess.Popen(
        [sys.executable, "-c", COUNTING, "4", "stay"],
        env=process_env(directory),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert live.stdout is not None and live.stdin is not None
        assert live.stdout.readline() == b"ready\n"
        dead = counted(directory, 1, 2, 3)
        assert {f"counter_{pid}.db" for pid in dead} <= files(directory)
        before = as_is(directory)

        scraped, text = await scrape(client)

        assert scraped == before  # every counter, bucket, sum and count
        assert_totals(scraped, [1, 2, 3, 4])
        assert files(directory) == {
            "counter_archive.db",
            "histogram_archive.db",
            f"counter_{live.pid}.db",
            f"histogram_{live.pid}.db",
            f"gauge_livesum_{live.pid}.db",  # the live process's connection, still open
        }
        # The archive holds the dead processes' counts, not the live one's.
        sent = '"kind": "campaign", "outcome": "sent"'
        assert [v for k, v in archived(directory, "counter").items() if sent in k] == [6.0]
        gauges = {f.name: f for f in text_string_to_metric_families(text)}
        assert gauges["mailroom_smtp_connections_open"].samples[0].value == 1  # the live one's
        assert (await scrape(client))[0] == before  # a scrape with nothing to compact
    finally:
        if live.stdin:
            live.stdin.close()
        live.wait(60)
        if live.stdout:
            live.stdout.close()

    # Later: the live process has ended too, two more came and went, and a process starts.
    counted(directory, 5, 6)
    before = as_is(directory)
    assert multiprocess.use_directory(tmp_path / "unused") == directory

    assert files(directory) == {"counter_archive.db", "histogram_archive.db"}
    scraped, _ = await scrape(client)
    assert scraped == before
    assert_totals(scraped, [1, 2, 3, 4, 5, 6])


def left_by(pid: int, emails: int) -> None:
    """The files a process `pid` (gone) left, written by prometheus-client itself."""
    kept = values.ValueClass
    values.ValueClass = values.MultiProcessValue(lambda: pid)
    try:
        Counter("mailroom_emails", "Emails.", ["kind", "outcome"], registry=None).labels(
            kind="campaign", outcome="sent"
        ).inc(emails)
        latency = Histogram(
            "mailroom_http_request_duration_seconds",
            "Latency.",
            ["route", "method"],
            buckets=metrics.LATENCY_BUCKETS,
            registry=None,
        ).labels(route="/api/v1/contacts", method="GET")
        for seconds in (0.25, 2.0, 60.0):
            latency.observe(seconds)
    finally:
        values.close_all_multiprocess_files()
        values.ValueClass = kept


class Killed(BaseException):
    """The compacting process killed at that point."""


def killed_at(point: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if point == "removing the merged files":
        unlink = Path.unlink

        def removing(path: Path, missing_ok: bool = False) -> None:
            if path.name.split("_")[0] in ("counter", "histogram") and "archive" not in path.name:
                raise Killed
            unlink(path, missing_ok=missing_ok)

        monkeypatch.setattr(Path, "unlink", removing)
        return
    interrupted = {
        "before its commit": multiprocess.JOURNAL_NAME + multiprocess.NEW_SUFFIX,
        "after its commit, one archive in place": "histogram_archive.db" + multiprocess.NEW_SUFFIX,
    }[point]
    replace = os.replace

    def replacing(source: Any, target: Any) -> None:
        if Path(source).name == interrupted:
            raise Killed
        replace(source, target)

    monkeypatch.setattr(os, "replace", replacing)


@pytest.mark.parametrize(
    "point",
    ["before its commit", "after its commit, one archive in place", "removing the merged files"],
)
async def test_a_compaction_killed_half_way_neither_doubles_nor_drops(
    client: httpx.AsyncClient, directory: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    for n in range(3):
        left_by(GONE + n, emails=n + 1)
    multiprocess.compact(directory)
    assert files(directory) == {"counter_archive.db", "histogram_archive.db"}
    for n in range(3, 6):
        left_by(GONE + n, emails=n + 1)
    before = as_is(directory)
    with monkeypatch.context() as patched:
        killed_at(point, patched)
        with pytest.raises(Killed):
            multiprocess.compact(directory)
    assert files(directory) != {"counter_archive.db", "histogram_archive.db"}

    scraped, _ = await scrape(client)  # the next scrape finishes or forgets it first

    assert scraped == before
    assert value(scraped, "mailroom_emails_total", kind="campaign", outcome="sent") == 21
    assert files(directory) == {"counter_archive.db", "histogram_archive.db"}


def race(directory: Path, compactors: int, readers: int) -> list[Samples | Exception]:
    """Processes starting at once (each compacts) while threads scrape as /metrics does (a
    compaction if one is needed, then a read under the shared lock) or only read (under the
    shared lock): what every read saw."""
    seen: list[Samples | Exception] = []
    go, done = threading.Event(), threading.Event()

    def scraping(compacting: bool) -> None:
        go.wait()
        while not done.is_set() or len(seen) < 4 * readers:
            try:
                if compacting:
                    multiprocess.forget_dead_processes()
                registry = CollectorRegistry()
                MultiProcessCollector(registry, path=str(directory))
                with multiprocess.reading():
                    text = generate_latest(registry).decode()
                seen.append(added_up(text))
            except Exception as error:  # a file gone between the listing and its reading
                seen.append(error)

    starting = (
        "import sys; from pathlib import Path; from mailroom.core import multiprocess; "
        "print('ready', flush=True); sys.stdin.read(); "
        "multiprocess.use_directory(Path(sys.argv[1]))"
    )
    threads = [threading.Thread(target=scraping, args=(i % 2 == 0,)) for i in range(readers)]
    started = [
        subprocess.Popen(
            [sys.executable, "-c", starting, str(directory)],
            env=process_env(directory),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        for _ in range(compactors)
    ]
    try:
        for process in started:
            assert process.stdout is not None and process.stdout.readline() == b"ready\n"
        for thread in threads:
            thread.start()
        for process in started:  # all at once
            assert process.stdin is not None
            process.stdin.close()
        go.set()
        assert [process.wait(120) for process in started] == [0] * compactors
    finally:
        go.set()
        done.set()
        for thread in threads:
            thread.join(120)
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait()
            if process.stdout:
                process.stdout.close()
    return seen


def test_processes_starting_at_once_and_scrapes_never_double_or_drop(directory: Path) -> None:
    pids: Iterator[int] = iter(range(GONE, GONE + 10_000))
    emails: list[int] = []
    for _ in range(3):
        for n in range(120):
            left_by(next(pids), emails=n % 7 + 1)
            emails.append(n % 7 + 1)
        expected = as_is(directory)
        assert value(expected, "mailroom_emails_total", kind="campaign", outcome="sent") == sum(
            emails
        )

        seen = race(directory, compactors=4, readers=4)

        wrong = [samples for samples in seen if samples != expected]
        assert not wrong, (len(wrong), len(seen))
        assert files(directory) == {"counter_archive.db", "histogram_archive.db"}
        assert as_is(directory) == expected


def test_only_files_of_processes_that_are_gone_are_touched(directory: Path) -> None:
    live: Callable[[int], bool] = multiprocess._alive
    assert live(os.getpid()) and not live(GONE) and not live(2**40)
    left_by(os.getpid(), emails=3)  # as if this very process counted
    left_by(GONE, emails=4)
    before = as_is(directory)
    (directory / f"counter_{GONE + 1}.db").touch()  # killed before its first value

    multiprocess.compact(directory)

    assert files(directory) == {
        "counter_archive.db",
        "histogram_archive.db",
        f"counter_{os.getpid()}.db",
        f"histogram_{os.getpid()}.db",
    }
    assert as_is(directory) == before
    sent = '"kind": "campaign", "outcome": "sent"'
    assert [v for k, v in archived(directory, "counter").items() if sent in k] == [4.0]
