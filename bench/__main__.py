"""Run benchmarks: `python -m bench [name ...] [--backend sqlite|postgresql|both]`."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

from bench.common import BenchContext, pg_url


def available() -> list[str]:
    here = Path(__file__).parent
    return sorted(
        m.name.removeprefix("bench_")
        for m in pkgutil.iter_modules([str(here)])
        if m.name.startswith("bench_")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default all): {available()}")
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    args = parser.parse_args()
    names = args.names or available()
    unknown = set(names) - set(available())
    if unknown:
        sys.exit(f"unknown benchmark(s): {sorted(unknown)}; available: {available()}")
    if args.backend == "both" or len(names) > 1:
        # Each benchmark and backend in a fresh process: memory figures (peak RSS) are then
        # that run's own, not what an earlier run left in this process.
        backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
        for name in names:
            for backend in backends:
                command = [sys.executable, "-m", "bench", name, "--backend", backend]
                subprocess.run(command, check=True)
        return
    module = importlib.import_module(f"bench.bench_{names[0]}")
    asyncio.run(module.run(BenchContext(args.backend, pg_url())))


if __name__ == "__main__":
    main()
