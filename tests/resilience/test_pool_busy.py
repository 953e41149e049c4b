"""Issue 12: when no pooled database connection comes free in time, a request is told to retry
(503 with Retry-After), never answered 500: overload is not the client's fault."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import text

from mailroom.db import Database

BUSY = {"error": "The server is busy. Retry in 5 seconds."}


@asynccontextmanager
async def _every_read_connection_taken(db: Database, monkeypatch: Any) -> AsyncIterator[None]:
    pool: Any = db.engine.pool
    # Give up waiting for a connection after 0.2 s rather than the configured 30-120 s.
    monkeypatch.setattr(pool, "_timeout", 0.2)
    held = []
    try:
        for _ in range(pool.size() + pool._max_overflow):
            conn = await db.engine.connect()
            await conn.execute(text("SELECT 1"))
            held.append(conn)
        yield
    finally:
        for conn in held:
            await conn.close()


async def test_the_key_check_answers_503_when_no_connection_is_free(client, db, ws, monkeypatch):
    async with _every_read_connection_taken(db, monkeypatch):
        for method, path in (("GET", "/api/v1/contacts"), ("POST", "/mcp")):
            busy = await client.request(method, path, headers=ws.headers, json={})
            assert busy.status_code == 503, path
            assert busy.json() == BUSY
            assert busy.headers["retry-after"] == "5"
    answered = await client.get("/api/v1/contacts", headers=ws.headers)
    assert answered.status_code == 200
    assert answered.json()["contacts"] == []
