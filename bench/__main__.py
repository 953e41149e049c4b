"""Run benchmarks: `python -m bench [name ...] [--backend sqlite|postgresql|both]`."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import pkgutil
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
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    for name in names:
        module = importlib.import_module(f"bench.bench_{name}")
        for backend in backends:
            asyncio.run(module.run(BenchContext(backend, pg_url())))


if __name__ == "__main__":
    main()
