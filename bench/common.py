"""What every benchmark needs: a fresh migrated database, the app, timing and memory figures."""

from __future__ import annotations

import gc
import os
import resource
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from mailroom.accounts import service as accounts_service
from mailroom.app import create_app, freeze_startup_heap
from mailroom.migrations import upgrade
from mailroom.settings import Settings

# A database of the benchmarks' own (made when missing): they rebuild its `public` schema, so
# never the test suite's.
DEFAULT_PG = "postgresql+asyncpg://postgres@127.0.0.1:5432/mailroom_bench"


@dataclass
class BenchContext:
    backend: str  # sqlite | postgresql
    pg_url: str

    @asynccontextmanager
    async def fresh_app(self, plan: str = "business", **overrides: Any) -> AsyncIterator[BenchApp]:
        with tempfile.TemporaryDirectory(prefix="mailroom-bench-") as tmp:
            url = await self._fresh_database(Path(tmp))
            settings = Settings(
                database_url=url, data_dir=Path(tmp) / "var", secret_key="bench", **overrides
            )
            app = create_app(settings)
            freeze_startup_heap()  # as the server's start-up does (no lifespan in process)
            try:
                async with app.state.db.transaction() as session:
                    _account, workspace = await accounts_service.create_workspace(
                        session, plan=plan
                    )
                    created = await accounts_service.create_key(session, workspace.id)
                transport = httpx.ASGITransport(app=app)
                async with httpx.AsyncClient(
                    transport=transport, base_url="http://bench", timeout=120
                ) as client:
                    yield BenchApp(
                        app, client, workspace.id, {"x-api-key": created.secret}, tmp, settings
                    )
            finally:
                gc.unfreeze()
                await app.state.db.dispose()

    async def _fresh_database(self, tmp: Path) -> str:
        if self.backend == "sqlite":
            url = f"sqlite+aiosqlite:///{tmp / 'bench.db'}"
        else:
            url = self.pg_url
            await ensure_database(url)
            engine = create_async_engine(url)
            async with engine.begin() as conn:
                await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
                await conn.execute(text("CREATE SCHEMA public"))
            await engine.dispose()
        await upgrade(url)
        return url


@dataclass
class BenchApp:
    app: Any
    client: httpx.AsyncClient
    workspace_id: str
    headers: dict[str, str]
    tmp: str
    settings: Settings


def percentiles(samples_ms: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    if not ordered:
        return {"p50": 0.0, "p99": 0.0}

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return {"p50": pick(0.50), "p99": pick(0.99), "mean": statistics.fmean(ordered)}


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Timer:
    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start


def report(name: str, backend: str, **figures: Any) -> None:
    parts = []
    for key, value in figures.items():
        parts.append(f"{key}={value:,.2f}" if isinstance(value, float) else f"{key}={value}")
    print(f"[{backend}] {name}: " + "  ".join(parts), flush=True)


def pg_url() -> str:
    return os.environ.get("MAILROOM_BENCH_DATABASE_URL") or DEFAULT_PG


async def ensure_database(url: str) -> None:
    """Create the benchmark database when the server does not have it yet."""
    base, _, name = url.rpartition("/")
    engine = create_async_engine(f"{base}/postgres", isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            found = await conn.scalar(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
            )
            if not found:
                await conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        await engine.dispose()
