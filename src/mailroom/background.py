"""What every background loop is made of, apart from the host that runs them (`worker.py`):
a loop's domain code (the sending engine, webhook delivery, the automation runner, ...) takes
a `WorkerContext` and is a `Loop`'s tick, so it never imports the host that imports it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mailroom.db import Database
from mailroom.settings import Settings


@dataclass(frozen=True)
class WorkerContext:
    db: Database
    settings: Settings
    worker_id: str


@dataclass(frozen=True)
class Loop:
    name: str
    tick: Callable[[WorkerContext], Awaitable[int]]  # returns how much work it did
    idle_seconds: float  # pause after a tick that did nothing
    close: Callable[[WorkerContext], Awaitable[None]] | None = None  # after the last tick
