"""Issue 12: a client that opens an export and never reads must cost the other tenants nothing.

Real uvicorn, raw sockets that send the request and never read. The server's send buffer and
the client's receive buffer are fixed small (tests.conftest.serve), so a response stalls after
~100 KB instead of megabytes: each stalled export has hundreds of KB still to send.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
import socket
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest

from mailroom.contacts import exporter
from mailroom.suppressions import exporter as suppressions_exporter
from mailroom.web import downloads
from tests.conftest import BACKEND, serve

# A server socket's send buffer (see tests.conftest.serve) and a client's receive buffer this
# small make a response stall after ~100 KB once the client stops reading.
SEND_BUFFER = 8192
RECEIVE_BUFFER = 4096
# Wide contacts (~1.2 KB of CSV each): 400 of them are ~500 KB, far past what the buffers take.
PAD = "x" * 100
FIELD = "y" * 200


def wide_contacts_csv(prefix: str, count: int) -> bytes:
    rows = [["email", "first_name", "last_name", "f1", "f2", "f3", "f4", "f5"]]
    rows += [[f"{prefix}{i}@shop.io", PAD, PAD, *([FIELD] * 5)] for i in range(count)]
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue().encode()


async def seed_contacts(http: httpx.AsyncClient, headers: dict[str, str], prefix: str, n: int):
    """`n` wide contacts imported through the API; returns their addresses."""
    response = await http.post(
        "/api/v1/contacts/import",
        files={"file": ("contacts.csv", wide_contacts_csv(prefix, n), "text/csv")},
        headers=headers,
    )
    assert response.status_code == 200, response.text
    assert response.json()["imported"] == n
    return {f"{prefix}{i}@shop.io" for i in range(n)}


_opened: list[socket.socket] = []


@pytest.fixture(autouse=True)
def _close_stalled_clients() -> Iterator[None]:
    """A failed test leaves no stalled client behind."""
    yield
    while _opened:
        _opened.pop().close()


def open_stalled(
    base_url: str, api_key: str, path: str, *, method: str = "GET", body: Any = None
) -> socket.socket:
    """Send one request and never read the answer (HTTP/1.0: the server closes the
    connection after it)."""
    host, port = base_url.removeprefix("http://").split(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    _opened.append(sock)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    sock.connect((host, int(port)))
    payload = b"" if body is None else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.0\r\nHost: {host}\r\nx-api-key: {api_key}\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
    sock.sendall(head.encode() + b"\r\n" + payload)
    sock.setblocking(False)
    return sock


async def status_lines(sockets: list[socket.socket], timeout: float = 30) -> list[bytes]:
    """The status line's start ("HTTP/1.1 200") each socket has waiting, peeked, not taken."""
    deadline = time.monotonic() + timeout
    heads = [b""] * len(sockets)
    while any(len(head) < 12 for head in heads):
        assert time.monotonic() < deadline, "no answer came"
        await asyncio.sleep(0.05)
        for n, sock in enumerate(sockets):
            with contextlib.suppress(BlockingIOError):  # nothing there yet
                heads[n] = sock.recv(12, socket.MSG_PEEK)
    return heads


async def until_answering(sockets: list[socket.socket]) -> None:
    """Wait until every socket has a 200 answer started, and leave it unread."""
    assert await status_lines(sockets) == [b"HTTP/1.1 200"] * len(sockets)


def _read_to_end(sock: socket.socket, timeout: float) -> bytes:
    sock.setblocking(True)
    sock.settimeout(timeout)
    parts = []
    while chunk := sock.recv(65536):
        parts.append(chunk)
    sock.close()
    return b"".join(parts)


async def read_to_end(sock: socket.socket, timeout: float = 60) -> tuple[int, bytes]:
    """Read a stalled response to its end now (in a thread: the server shares this loop);
    returns the status and the body."""
    raw = await asyncio.to_thread(_read_to_end, sock, timeout)
    head, _, body = raw.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        body = _dechunk(body)
    return int(head.split(b" ", 2)[1]), body


def _dechunk(body: bytes) -> bytes:
    """The data of a chunked body, as far as it goes (a body cut off mid-way is kept)."""
    parts = []
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        parts.append(rest[:size])
        body = rest[size + 2 :]
    return b"".join(parts)


def csv_rows(body: bytes | str) -> list[list[str]]:
    text = body.decode() if isinstance(body, bytes) else body
    return list(csv.reader(io.StringIO(text)))


async def timed(call: Callable[[], Awaitable[httpx.Response]], into: list[float]) -> httpx.Response:
    started = time.perf_counter()
    response = await call()
    into.append((time.perf_counter() - started) * 1000)
    return response


def summary(samples_ms: list[float]) -> str:
    ordered = sorted(samples_ms)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return f"n={len(ordered)} p50={statistics.median(ordered):.1f} ms p99={p99:.1f} ms"


EXPORT = "/api/v1/contacts/export"
BULK = "/api/v1/contacts/bulk"
CAP = downloads.EXPORTS_PER_WORKSPACE
TOO_MANY = (
    f"Too many exports in progress ({CAP} at once per workspace). "
    f"Retry in {downloads.EXPORT_RETRY_AFTER} seconds."
)
# More stalled exports than the read pool has connections (SQLite 5 + 10 overflow,
# PostgreSQL 10 + 20): before exports let go of their connection, this many starved everyone.
STALLED = 33 if BACKEND == "postgresql" else 18
ROWS = 400


async def _until(check: Callable[[], Awaitable[bool]], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.1)


async def test_stalled_exports_leave_other_tenants_answered(app, db, factory, monkeypatch, capsys):
    # Small batches: each stalled export is many batches, most of them read after the stall.
    monkeypatch.setattr(exporter, "BATCH", 50)
    attackers = [await factory.workspace(listen=False) for _ in range(-(-STALLED // CAP))]
    victim = await factory.workspace(listen=False)
    async with (
        serve(app, send_buffer=SEND_BUFFER) as url,
        httpx.AsyncClient(base_url=url, timeout=20) as http,
    ):
        seeded = [
            await seed_contacts(http, ws.headers, f"a{n}-", ROWS) for n, ws in enumerate(attackers)
        ]
        owners = [n % len(attackers) for n in range(STALLED)]
        stalled = [open_stalled(url, attackers[n].api_key, EXPORT) for n in owners]
        await until_answering(stalled)

        # The other tenant reads, writes and exports as usual, while every export is stalled.
        latencies: list[float] = []
        for n in range(8):
            listed = await timed(
                lambda: http.get("/api/v1/contacts", headers=victim.headers), latencies
            )
            assert listed.status_code == 200, listed.text
            assert listed.json()["pagination"]["total"] == n
            made = await timed(
                lambda n=n: http.post(
                    "/api/v1/contacts", json={"email": f"v{n}@victim.io"}, headers=victim.headers
                ),
                latencies,
            )
            assert made.status_code == 201, made.text
            contact_id = made.json()["contact"]["id"]
            read = await timed(
                lambda c=contact_id: http.get(f"/api/v1/contacts/{c}", headers=victim.headers),
                latencies,
            )
            assert read.status_code == 200
            assert read.json()["contact"]["email"] == f"v{n}@victim.io"
            export = await timed(lambda: http.get(EXPORT, headers=victim.headers), latencies)
            assert export.status_code == 200
            assert [row[0] for row in csv_rows(export.content)[1:]] == [
                f"v{i}@victim.io" for i in range(n, -1, -1)
            ]

        # Every stalled export is still running (its workspace has no place left) and none of
        # them holds a database connection.
        for ws in attackers:
            refused = await http.get(EXPORT, headers=ws.headers)
            assert refused.status_code == 429
            assert refused.json() == {"error": TOO_MANY}
        await _until(lambda: asyncio.sleep(0, db.engine.pool.checkedout() == 0))

        # Read now, each stalled export is whole: every contact once, in the usual order.
        bodies = [await read_to_end(sock) for sock in stalled]
        for owner, (status, body) in zip(owners, bodies, strict=True):
            assert status == 200
            emails = [row[0] for row in csv_rows(body)[1:]]
            assert len(emails) == ROWS
            assert set(emails) == seeded[owner]
        for n, ws in enumerate(attackers):
            fresh = await http.get(EXPORT, headers=ws.headers)
            assert fresh.status_code == 200
            assert all(
                body == fresh.content for owner, (_, body) in zip(owners, bodies) if owner == n
            )
    with capsys.disabled():
        print(f"\n[{BACKEND}] other tenant during {STALLED} stalled exports: {summary(latencies)}")


async def test_a_workspace_runs_at_most_three_exports_at_once(app, factory):
    ws = await factory.workspace(listen=False)
    other = await factory.workspace(listen=False)
    async with (
        serve(app, send_buffer=SEND_BUFFER) as url,
        httpx.AsyncClient(base_url=url, timeout=20) as http,
    ):
        await seed_contacts(http, ws.headers, "w", ROWS)
        await seed_contacts(http, other.headers, "o", 3)
        stalled = [
            open_stalled(url, ws.api_key, EXPORT),
            open_stalled(
                url, ws.api_key, BULK, method="POST", body={"action": "export", "filter": {}}
            ),
            open_stalled(url, ws.api_key, EXPORT + "?status=subscribed"),
        ]
        await until_answering(stalled)
        for request in (
            http.build_request("GET", EXPORT, headers=ws.headers),
            http.build_request("GET", "/api/v1/suppressions/export", headers=ws.headers),
            http.build_request(
                "POST", BULK, json={"action": "export", "filter": {}}, headers=ws.headers
            ),
        ):
            refused = await http.send(request)
            assert refused.status_code == 429, request.url
            assert refused.json() == {"error": TOO_MANY}
            assert refused.headers["retry-after"] == str(downloads.EXPORT_RETRY_AFTER)
        # The cap is per workspace: the other one exports as usual.
        theirs = await http.get(EXPORT, headers=other.headers)
        assert theirs.status_code == 200
        assert len(csv_rows(theirs.content)) == 1 + 3

        # A client that goes away gives its place back.
        stalled[0].close()

        async def exports_again() -> bool:
            answer = await http.get(EXPORT, headers=ws.headers)
            assert answer.status_code in (200, 429), answer.text
            return answer.status_code == 200 and len(csv_rows(answer.content)) == 1 + ROWS

        await _until(exports_again)
        for sock in stalled[1:]:
            status, body = await read_to_end(sock)
            assert status == 200
            assert len(csv_rows(body)) == 1 + ROWS


async def test_a_client_that_stops_reading_is_cut_off_after_the_send_deadline(
    app, factory, monkeypatch
):
    monkeypatch.setattr(downloads, "SEND_DEADLINE", 1.5)
    ws = await factory.workspace(listen=False)
    async with (
        serve(app, send_buffer=SEND_BUFFER) as url,
        httpx.AsyncClient(base_url=url, timeout=20) as http,
    ):
        await seed_contacts(http, ws.headers, "w", ROWS)
        stalled = [open_stalled(url, ws.api_key, EXPORT) for _ in range(CAP)]
        await until_answering(stalled)

        async def every_place_back() -> bool:
            # As many new exports as the cap are all let in only once the server has given
            # up on every stalled one.
            probes = [open_stalled(url, ws.api_key, EXPORT) for _ in range(CAP)]
            heads = await status_lines(probes)
            for probe in probes:
                probe.close()
            assert set(heads) <= {b"HTTP/1.1 200", b"HTTP/1.1 429"}, heads
            return heads == [b"HTTP/1.1 200"] * CAP

        await _until(every_place_back)
        whole = await http.get(EXPORT, headers=ws.headers)  # a reader that keeps up
        assert whole.status_code == 200
        assert len(csv_rows(whole.content)) == 1 + ROWS
        for sock in stalled:
            status, body = await read_to_end(sock)
            assert status == 200
            assert 0 < len(body) < len(whole.content)  # the server closed it mid-way


async def test_small_batches_give_the_same_export(client, ws, monkeypatch):
    # One import gives many contacts the same created_at: the keyset's id breaks the tie.
    rows = "".join(f"t{i}@shop.io,Name{i}\n" for i in range(7))
    imported = await client.post(
        "/api/v1/contacts/import",
        files={"file": ("c.csv", f"email,first_name\n{rows}".encode(), "text/csv")},
        headers=ws.headers,
    )
    assert imported.status_code == 200 and imported.json()["imported"] == 7
    for i in range(3):
        made = await client.post(
            "/api/v1/contacts", json={"email": f"s{i}@shop.io"}, headers=ws.headers
        )
        assert made.status_code == 201
    added = await client.post(
        "/api/v1/suppressions",
        json={"entries": [f"x{i}@mall.io" for i in range(5)], "reason": "bounced"},
        headers=ws.headers,
    )
    assert added.status_code == 200, added.text

    async def exports() -> list[bytes]:
        bulk_body = {"action": "export", "filter": {}}
        answers = [
            await client.get(EXPORT, headers=ws.headers),
            await client.post(BULK, json=bulk_body, headers=ws.headers),
            await client.get("/api/v1/suppressions/export", headers=ws.headers),
        ]
        assert [a.status_code for a in answers] == [200, 200, 200]
        return [a.content for a in answers]

    whole = await exports()
    assert len(csv_rows(whole[0])) == 1 + 10
    assert len(csv_rows(whole[2])) == 1 + 5
    monkeypatch.setattr(exporter, "BATCH", 2)
    monkeypatch.setattr(suppressions_exporter, "BATCH", 2)
    assert await exports() == whole


async def test_a_contact_changed_mid_export_appears_once_as_its_batch_read_it(
    app, factory, monkeypatch
):
    monkeypatch.setattr(exporter, "BATCH", 100)
    ws = await factory.workspace(listen=False)
    async with (
        serve(app, send_buffer=SEND_BUFFER) as url,
        httpx.AsyncClient(base_url=url, timeout=20) as http,
    ):
        emails = await seed_contacts(http, ws.headers, "m", 2000)  # ~2.5 MB of CSV
        ordinary = await http.get(EXPORT, headers=ws.headers)
        order = [row[0] for row in csv_rows(ordinary.content)[1:]]
        changed, deleted = order[-1], order[-2]  # the last rows the export reaches
        ids = {}
        for email in (changed, deleted):
            found = await http.get("/api/v1/contacts", params={"q": email}, headers=ws.headers)
            ids[email] = found.json()["contacts"][0]["id"]

        sock = open_stalled(url, ws.api_key, EXPORT)
        await until_answering([sock])
        patched = await http.patch(
            f"/api/v1/contacts/{ids[changed]}", json={"first_name": "Changed"}, headers=ws.headers
        )
        assert patched.status_code == 200
        gone = await http.delete(f"/api/v1/contacts/{ids[deleted]}", headers=ws.headers)
        assert gone.status_code == 200
        made = await http.post(
            "/api/v1/contacts", json={"email": "new@shop.io"}, headers=ws.headers
        )
        assert made.status_code == 201

        status, body = await read_to_end(sock)
        assert status == 200
        rows = csv_rows(body)[1:]
        exported = [row[0] for row in rows]
        assert len(exported) == len(set(exported)) == len(emails) - 1
        assert set(exported) == emails - {deleted}
        assert "new@shop.io" not in exported
        assert [row[1] for row in rows if row[0] == changed] == ["Changed"]
