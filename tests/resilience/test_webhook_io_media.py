"""Outbound I/O of hosted images (an S3 store is network I/O): bytes are stored and deleted
while the request holds no database connection, refused uploads send no bytes (or take them
back), and the quota still holds when uploads race."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import os
import re
import time
from typing import Any

import pytest
from PIL import Image

from mailroom.core import plans
from mailroom.media import service as media_service


def checked_out(db: Any) -> int:
    engines = {id(db.engine): db.engine, id(db.write_engine): db.write_engine}
    return sum(engine.pool.checkedout() for engine in engines.values())


def png(side: int = 8, noisy: bool = False) -> bytes:
    image = (
        Image.frombytes("RGB", (side, side), os.urandom(side * side * 3))
        if noisy
        else Image.new("RGB", (side, side), (200, 30, 30))
    )
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


class RemoteStore:
    """A store that answers slowly and notes how many connections were out while it worked;
    during each put another tenant writes, as would happen during a slow S3 call."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.objects: dict[str, bytes] = {}
        self.held: list[int] = []
        self.puts = 0
        self.other_write: Any = None  # set by the test: an awaitable factory
        self.other_write_seconds: list[float] = []

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        self.puts += 1
        self.held.append(checked_out(self.db))
        if self.other_write is not None:
            started = time.monotonic()
            await asyncio.wait_for(self.other_write(), timeout=5)
            self.other_write_seconds.append(time.monotonic() - started)
        await asyncio.sleep(0.05)
        self.objects[key] = data

    async def delete(self, key: str) -> None:
        self.held.append(checked_out(self.db))
        await asyncio.sleep(0.05)
        self.objects.pop(key, None)

    def url(self, key: str) -> str:
        return f"https://bucket.example.com/{key}"


@pytest.fixture
def store(db, monkeypatch) -> RemoteStore:
    remote = RemoteStore(db)
    monkeypatch.setattr(media_service, "make_store", lambda settings: remote)
    return remote


async def _upload(client, headers, data: bytes, name: str):
    return await client.post(
        "/api/v1/media", files={"file": (name, data, "image/png")}, headers=headers
    )


async def _count(client, headers) -> int:
    listing = await client.get("/api/v1/media", headers=headers)
    assert listing.status_code == 200, listing.text
    return int(listing.json()["count"])


async def test_bytes_move_while_no_connection_is_held(client, factory, store):
    ws = await factory.workspace("pro", listen=False)
    other = await factory.workspace("pro", listen=False)

    async def other_tenant_write() -> None:
        response = await client.post("/api/v1/tags", json={"name": "vip"}, headers=other.headers)
        assert response.status_code == 201, response.text

    store.other_write = other_tenant_write
    data = png()
    uploaded = await _upload(client, ws.headers, data, "a.png")
    assert uploaded.status_code == 201, uploaded.text
    file = uploaded.json()["file"]
    assert uploaded.json()["used_bytes"] == len(data)
    assert store.objects == {file["id"]: data}
    assert store.other_write_seconds and store.other_write_seconds[0] < 1.5
    assert await _count(client, ws.headers) == 1
    tags = await client.get("/api/v1/tags", headers=other.headers)
    assert [t["name"] for t in tags.json()["tags"]] == ["vip"]

    deleted = await client.delete(f"/api/v1/media/{file['id']}", headers=ws.headers)
    assert deleted.status_code == 200, deleted.text
    assert store.objects == {}
    assert await _count(client, ws.headers) == 0
    assert store.held == [0, 0]  # the put and the delete


async def test_an_upload_over_the_rate_sends_no_bytes(client, factory, store, monkeypatch):
    monkeypatch.setattr(media_service, "UPLOADS_PER_HOUR", 2)
    ws = await factory.workspace("pro", listen=False)
    for name in ("a.png", "b.png"):
        assert (await _upload(client, ws.headers, png(), name)).status_code == 201
    refused = await _upload(client, ws.headers, png(), "c.png")
    assert refused.status_code == 429, refused.text
    assert re.fullmatch(
        r"Upload limit reached \(2 images per hour\)\. Retry in \d+ seconds\.",
        refused.json()["error"],
    )
    assert store.puts == 2
    assert len(store.objects) == 2
    assert await _count(client, ws.headers) == 2


async def test_racing_uploads_keep_the_quota_and_leave_no_stray_bytes(
    client, factory, store, monkeypatch
):
    first, second = png(24, noisy=True), png(24, noisy=True)
    quota = max(len(first), len(second)) + 10  # room for one of them only
    monkeypatch.setitem(
        plans.PLANS, "pro", dataclasses.replace(plans.PLANS["pro"], media_quota_bytes=quota)
    )
    ws = await factory.workspace("pro", listen=False)
    responses = await asyncio.gather(
        _upload(client, ws.headers, first, "one.png"),
        _upload(client, ws.headers, second, "two.png"),
    )
    assert sorted(r.status_code for r in responses) == [201, 403], [r.text for r in responses]
    [kept] = [r.json()["file"] for r in responses if r.status_code == 201]
    [refused] = [r.json() for r in responses if r.status_code == 403]
    assert refused["quota_bytes"] == quota and refused["used_bytes"] == kept["size"]
    assert list(store.objects) == [kept["id"]]  # the refused upload's bytes were taken back
    assert await _count(client, ws.headers) == 1
