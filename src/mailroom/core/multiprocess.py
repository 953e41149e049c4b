"""Where the processes of one installation keep their metrics (prometheus-client's multiprocess
mode), set up before `prometheus_client` is first imported: this module never imports it at
the top, so the commands that serve or work can call `use_directory` first."""

from __future__ import annotations

import os
from pathlib import Path

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def use_directory(data_dir: Path) -> Path:
    """The multiprocess directory (`PROMETHEUS_MULTIPROC_DIR`, else `<data dir>/metrics`),
    made and cleared of the live gauges of processes that are gone (their counters stay:
    totals never go back). Call it before anything imports `prometheus_client`."""
    chosen = Path(os.environ.get(MULTIPROC_ENV) or data_dir / "metrics")
    chosen.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.environ[MULTIPROC_ENV] = str(chosen)
    forget_dead_processes()
    return chosen


def forget_dead_processes() -> None:
    """The live gauges of processes that are gone (killed, or a server child uvicorn
    replaced) leave the sums: their files go. Run at start and at every scrape."""
    directory = os.environ.get(MULTIPROC_ENV)
    if not directory:
        return
    for path in Path(directory).glob("gauge_live*_*.db"):
        pid = path.stem.rsplit("_", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            path.unlink(missing_ok=True)


def process_exited() -> None:
    """This process's live gauges leave the sums (a clean stop; a killed process's files
    are cleared by the next `use_directory`)."""
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(os.getpid())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
