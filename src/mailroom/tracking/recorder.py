"""Gathering a process's opens and clicks and writing them a batch at a time (see
`service.store`): the first hit after a quiet spell schedules a write `FLUSH_SECONDS` later;
everything that arrived by then goes in one transaction. `flush()` writes now (shutdown,
tests); a failed write is logged and its hits dropped (they are counts, and retrying a write
that fails for good would grow without bound)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging

from mailroom.db import Database
from mailroom.settings import Settings
from mailroom.tracking.service import Hit, store

log = logging.getLogger("mailroom.tracking")

FLUSH_SECONDS = 0.05
MAX_PENDING = 50_000  # past this, new hits are dropped (a database that stopped answering)


class HitRecorder:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self._pending: list[Hit] = []
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    def add(self, hit: Hit) -> None:
        if len(self._pending) >= MAX_PENDING:
            return
        self._pending.append(hit)
        if self._task is None or self._task.done():
            # A context of its own: the request that happened to start the flush must not
            # lend its request id to the events of every hit in the batch.
            self._task = asyncio.create_task(
                self._later(), name="mailroom-tracking-flush", context=contextvars.Context()
            )

    async def _later(self) -> None:
        await asyncio.sleep(FLUSH_SECONDS)
        await self.flush()

    async def flush(self) -> None:
        async with self._lock:
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    await store(self.db, self.settings, batch)
                except Exception:
                    log.exception("storing %d opens/clicks failed", len(batch))

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.flush()
