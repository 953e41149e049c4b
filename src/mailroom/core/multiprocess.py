"""Where the processes of one installation keep their metrics (prometheus-client's multiprocess
mode), set up before `prometheus_client` is first imported: this module never imports it at
the top, so the commands that serve or work can call `use_directory` first.

Every process writes its own files (`counter_<pid>.db`, `histogram_<pid>.db`,
`gauge_livesum_<pid>.db`, ...) and a scrape sums every `*.db` of the directory. The files of
processes that are gone would pile up (every restart, every server child uvicorn replaces), so
they are compacted, at start and at a scrape that finds some:

- a dead process's live gauges (the only gauges core.metrics has: `livesum`) leave the sums;
- its counters, histograms and summaries are added, key by key, into one archive per type
  (`counter_archive.db`, ...: the collector takes the type from the name's first part and
  reads any `*.db`), written with prometheus-client's own `MmapedDict`; then its files go.

Totals never go back and never double: a compaction holds `metrics.lock` exclusively and a
scrape holds it shared while it reads the files (`reading`), so a scrape sees every value either
in a dead file or in the archive, never both nor neither. A compaction writes the new archives
beside the old (`*.db.new`, which no scrape reads), then commits by writing `compaction.json`
(the archives to put in place, the files they took in), then replaces the archives and removes
the files; one interrupted after its commit is finished by the next (before anything is read),
one interrupted before it is forgotten. A process that calls `use_directory` before it writes
waits for any compaction under way, so a new process given a dead one's pid never writes into a
file being merged.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
ARCHIVED_TYPES = ("counter", "histogram", "summary")  # values that only add up
LOCK_NAME = "metrics.lock"
JOURNAL_NAME = "compaction.json"
NEW_SUFFIX = ".new"  # an archive being written: not `*.db`, so never read by a scrape
log = logging.getLogger("mailroom.metrics")


def use_directory(data_dir: Path) -> Path:
    """The multiprocess directory (`PROMETHEUS_MULTIPROC_DIR`, else `<data dir>/metrics`),
    made, and compacted of the processes that are gone (waiting for a compaction another
    process is making). Call it before anything imports `prometheus_client`."""
    chosen = Path(os.environ.get(MULTIPROC_ENV) or data_dir / "metrics")
    chosen.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.environ[MULTIPROC_ENV] = str(chosen)  # before `compact` may import prometheus_client
    compact(chosen, wait=True)
    return chosen


def forget_dead_processes() -> None:
    """A scrape's pass (cheap: a listing of the directory and one signal-0 per process): the
    files of processes that are gone, when there are some, are compacted (`compact`)."""
    directory = os.environ.get(MULTIPROC_ENV)
    if directory:
        compact(Path(directory))


def compact(directory: Path, *, wait: bool = False) -> None:
    """Remove the live gauges of processes that are gone and add their counters, histograms
    and summaries into the archives, under the directory's lock held exclusively. Without
    `wait` the lock is taken only when there is something to do. A failure is logged: the
    metrics never stop a process from starting or a scrape from answering."""
    try:
        if not wait and not _pending(directory):
            return
        with _locked(directory, fcntl.LOCK_EX):
            _finish(directory)
            gauges, merged = _dead_files(directory)
            for path in gauges:
                path.unlink(missing_ok=True)
            if merged:
                _merge(directory, merged)
    except Exception:
        log.warning("metrics: the files of past processes could not be compacted", exc_info=True)


@contextlib.contextmanager
def reading() -> Iterator[None]:
    """Held while a scrape reads the directory: no compaction moves values meanwhile."""
    directory = os.environ.get(MULTIPROC_ENV)
    if not directory:
        yield
        return
    with _locked(Path(directory), fcntl.LOCK_SH):
        yield


def process_exited() -> None:
    """This process's live gauges leave the sums (a clean stop; a killed process's files
    are cleared by the next compaction)."""
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(os.getpid())


@contextlib.contextmanager
def _locked(directory: Path, operation: int) -> Iterator[None]:
    fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, operation)
        yield
    finally:
        os.close(fd)  # releases the lock


def _pending(directory: Path) -> bool:
    gauges, merged = _dead_files(directory)
    return bool(gauges or merged) or (directory / JOURNAL_NAME).exists()


def _dead_files(directory: Path) -> tuple[list[Path], dict[str, list[Path]]]:
    """The live gauges, and the counters, histograms and summaries by type, of processes that
    are gone."""
    gauges: list[Path] = []
    merged: dict[str, list[Path]] = {}
    alive: dict[int, bool] = {}
    for path in directory.glob("*.db"):
        kind, _, rest = path.name[: -len(".db")].partition("_")
        pid = rest.rsplit("_", 1)[-1]
        if not pid.isdecimal():
            continue  # an archive
        if int(pid) not in alive:
            alive[int(pid)] = _alive(int(pid))
        if alive[int(pid)]:
            continue
        if kind == "gauge" and rest.startswith("live"):
            gauges.append(path)
        elif kind in ARCHIVED_TYPES and rest == pid:
            merged.setdefault(kind, []).append(path)
    return gauges, merged


def _merge(directory: Path, dead: dict[str, list[Path]]) -> None:
    """Each type's archive plus its dead files, written aside, then committed (`_finish`)."""
    from prometheus_client.mmap_dict import MmapedDict

    taken: list[str] = []
    archives: list[str] = []
    for kind, paths in sorted(dead.items()):
        totals: dict[str, float] = {}
        took: list[str] = []
        for path in sorted(paths):
            if path.stat().st_size == 0:
                took.append(path.name)  # killed before its first value: nothing to add
                continue
            try:
                values = list(MmapedDict.read_all_values_from_file(str(path)))
            except Exception:
                log.warning("metrics: %s cannot be read; left where it is", path, exc_info=True)
                continue
            for key, value, _timestamp, _pos in values:
                totals[key] = totals.get(key, 0.0) + value
            took.append(path.name)
        taken += took
        archive = directory / f"{kind}_archive.db"
        if archive.exists():
            for key, value, _timestamp, _pos in MmapedDict.read_all_values_from_file(str(archive)):
                totals[key] = totals.get(key, 0.0) + value
        if not took or not totals:
            continue
        new = directory / (archive.name + NEW_SUFFIX)
        new.unlink(missing_ok=True)
        written = MmapedDict(str(new))
        try:
            for key, value in totals.items():
                written.write_value(key, value, 0.0)
        finally:
            written.close()
        _sync(new)
        archives.append(archive.name)
    if not taken:
        return
    journal = directory / JOURNAL_NAME
    draft = directory / (JOURNAL_NAME + NEW_SUFFIX)
    draft.write_text(json.dumps({"archives": archives, "taken": taken}))
    _sync(draft)
    os.replace(draft, journal)  # the commit
    _sync(directory)
    _finish(directory)


def _finish(directory: Path) -> None:
    """A committed compaction put in place (its archives, then its files removed), or an
    uncommitted one's drafts removed. Run under the exclusive lock, before anything else."""
    journal = directory / JOURNAL_NAME
    if not journal.exists():
        for draft in directory.glob(f"*{NEW_SUFFIX}"):
            draft.unlink(missing_ok=True)
        return
    committed = json.loads(journal.read_text())
    for name in committed["archives"]:
        new = directory / (name + NEW_SUFFIX)
        if new.exists():  # else already in place
            os.replace(new, directory / name)
    for name in committed["taken"]:
        (directory / name).unlink(missing_ok=True)
    _sync(directory)
    journal.unlink()


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OverflowError:
        return False  # past any pid
    except PermissionError:
        return True
    return True
