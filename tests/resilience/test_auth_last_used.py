"""Issue 12 item 2: recording a key's `last_used_at` never makes a request wait for the
database's write connection (SQLite has one), nor fails it.

Real uvicorn: what counts is when the client has its answer. Each test holds the write side
(SQLite's write connection in this process, SQLite's write lock from another connection, or
PostgreSQL's row lock on the key) while a never-used key makes its first request.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import select, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from mailroom.db import Database
from mailroom.models import ApiKey
from tests.conftest import BACKEND, Workspace, serve


async def _last_used(db: Database, key_id: str) -> Any:
    async with db.session(write=False) as session:
        return await session.scalar(select(ApiKey.last_used_at).where(ApiKey.id == key_id))


async def _until(check: Callable[[], Awaitable[bool]], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


@asynccontextmanager
async def _writer_in_this_process(db: Database, ws: Workspace) -> AsyncIterator[None]:
    async with db.transaction() as session:
        await session.execute(
            text("UPDATE workspaces SET name = name WHERE id = :id"), {"id": ws.workspace_id}
        )
        yield


@asynccontextmanager
async def _writer_elsewhere(db: Database, ws: Workspace) -> AsyncIterator[None]:
    if db.is_sqlite:
        # Another process's writer, as far as SQLite can tell: its own connection.
        other = sqlite3.connect(make_url(db.url).database or "", isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            yield
        finally:
            other.execute("ROLLBACK")
            other.close()
        return
    engine = create_async_engine(db.url)
    try:
        async with engine.begin() as conn:
            # The row `last_used_at` is written to, locked by somebody else's transaction.
            await conn.execute(
                text("SELECT 1 FROM api_keys WHERE id = :id FOR UPDATE"), {"id": ws.key_id}
            )
            yield
    finally:
        await engine.dispose()


HOLDERS = {"another connection": _writer_elsewhere}
if BACKEND == "sqlite":
    HOLDERS["this process"] = _writer_in_this_process


@pytest.mark.parametrize("holder", sorted(HOLDERS))
async def test_a_read_is_answered_while_the_write_side_is_held(app, db, factory, holder):
    ws = await factory.workspace(listen=False)
    assert await _last_used(db, ws.key_id) is None
    async with (
        serve(app) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as http,
    ):
        async with HOLDERS[holder](db, ws):
            # A never-used key: its use is due to be recorded, and the writer is busy.
            listed = await http.get("/api/v1/contacts", headers=ws.headers)
            assert listed.status_code == 200
            assert listed.json()["contacts"] == []
            exported = await http.get("/api/v1/contacts/export", headers=ws.headers)
            assert exported.status_code == 200

        # Once the writer is done, the use is recorded (by these requests or a later one).
        async def recorded() -> bool:
            assert (await http.get("/api/v1/contacts", headers=ws.headers)).status_code == 200
            return await _last_used(db, ws.key_id) is not None

        await _until(recorded)
