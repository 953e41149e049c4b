"""Shared pieces of the webhook tests: a real HTTP receiver on 127.0.0.1, a driver for the
delivery worker, signature checks done independently of the application, and API shortcuts.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import json
import socket
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import stripe
from aiohttp import web
from sqlalchemy import func, select

from mailroom.accounts import service as accounts
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.events import service as events
from mailroom.models import WebhookDelivery
from mailroom.webhooks.delivery import DeliveryWorker
from mailroom.worker import WorkerContext

ENVELOPE_KEYS = {"id", "event", "created_at", "data"}
ENTRY_KEYS = {
    "id",
    "event_type",
    "status",
    "attempts",
    "last_status_code",
    "last_error",
    "delivered_at",
    "created_at",
}
CONTACT_KEYS = {
    "id",
    "email",
    "status",
    "first_name",
    "last_name",
    "source",
    "custom_fields",
    "created_at",
    "subscribed_at",
    "unsubscribed_at",
    "tags",
}
CHAT_EVENTS = (
    "workspace.paused",
    "workspace.resumed",
    "workspace.health_warning",
    "automation.failed",
    "campaign.sent",
    "domain.verified",
    "domain.failed",
)
SIGNATURE_SHAPE = r"^t=\d+,v1=[0-9a-f]{64}$"
PUBLIC_IP = ipaddress.ip_address("93.184.216.34")


# --- receiver ------------------------------------------------------------------------------


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None


class Receiver:
    """Answers by the first path segment:
    ok 200 | fail 500 | flaky 500 then 200 | redirect 302 to /target | accepted 202 |
    slow (answers after 5 s) | trickle (headers at once, then one body byte per 0.3 s) |
    stall (headers at once, then no body for 5 s)."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.hits: Counter[str] = Counter()
        self.port = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        path = request.path
        self.hits[path] += 1
        self.requests.append(Recorded(path, dict(request.headers), body, time.time()))
        kind = path.strip("/").split("/")[0]
        if kind == "fail":
            return web.Response(status=500, text="boom")
        if kind == "flaky":
            return web.Response(status=500 if self.hits[path] == 1 else 200, text="x")
        if kind == "redirect":
            return web.Response(status=302, headers={"Location": self.url("target" + path)})
        if kind == "accepted":
            return web.Response(status=202, text="")
        if kind == "slow":
            await asyncio.sleep(5)
            return web.Response(status=200, text="late")
        if kind == "trickle":
            response = web.StreamResponse(status=200, headers={"Content-Length": "40"})
            await response.prepare(request)
            try:
                for _ in range(40):
                    await response.write(b"x")
                    await asyncio.sleep(0.3)
            except (ConnectionError, asyncio.CancelledError, RuntimeError):
                pass
            return response
        if kind == "stall":
            response = web.StreamResponse(status=200, headers={"Content-Length": "40"})
            await response.prepare(request)
            await asyncio.sleep(5)
            return response
        return web.Response(status=200, text="ok")

    async def __aenter__(self) -> Receiver:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=0.2
        )
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.runner.cleanup()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def at(self, path: str) -> list[Recorded]:
        path = "/" + path.lstrip("/")
        return [r for r in self.requests if r.path == path]


class ConnectionCounter:
    """A bare TCP listener that counts connections and never answers (proves nothing came)."""

    def __init__(self) -> None:
        self.connections = 0

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.close()

    async def __aenter__(self) -> ConnectionCounter:
        self.server = await asyncio.start_server(self._on_connect, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()


class SlowHeaders:
    """Reads the request, then sends the status line one byte every 0.3 s (no answer in time)."""

    def __init__(self) -> None:
        self.connections = 0

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await reader.readuntil(b"\r\n\r\n")
            for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n":
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.3)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def __aenter__(self) -> SlowHeaders:
        self.server = await asyncio.start_server(self._on_connect, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()


def dead_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- worker driver -------------------------------------------------------------------------


class Driver:
    """Runs the delivery worker by hand. Built lazily so a test can change settings first."""

    def __init__(self, db: Any, settings: Any) -> None:
        self.db = db
        self.settings = settings
        self._worker: DeliveryWorker | None = None

    @property
    def worker(self) -> DeliveryWorker:
        if self._worker is None:
            self._worker = DeliveryWorker(self.settings)
        return self._worker

    async def due(self) -> int:
        async with self.db.session() as s:
            return int(
                await s.scalar(
                    select(func.count())
                    .select_from(WebhookDelivery)
                    .where(WebhookDelivery.status == "pending", WebhookDelivery.run_at <= utcnow())
                )
                or 0
            )

    async def drain(
        self, until: Any = None, max_seconds: float = 60, max_ticks: int = 20000
    ) -> None:
        """Tick until nothing is due or in flight (or, with `until`, until it holds with nothing
        in flight; the last outcomes then stay unrecorded until the next tick)."""
        worker = self.worker
        ctx = WorkerContext(self.db, self.settings, "test-worker")
        deadline = time.monotonic() + max_seconds
        for _ in range(max_ticks):
            if time.monotonic() > deadline:
                break
            await worker.tick(ctx)
            if worker.tasks:
                continue
            if until is not None:
                if until():
                    return
                continue
            if worker.outcomes:
                continue
            if await self.due() == 0:
                return
        raise AssertionError("the delivery worker did not settle")

    async def close(self) -> None:
        if self._worker is not None:
            await self._worker.close(self.db)


# --- signatures ----------------------------------------------------------------------------


def parse_signature(header: str) -> tuple[int, str]:
    parts = dict(item.split("=", 1) for item in header.split(","))
    return int(parts["t"]), parts["v1"]


def verify_by_hand(secret: str, body: bytes, header: str, tolerance: int = 300) -> bool:
    t, v1 = parse_signature(header)
    expected = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, v1) and abs(time.time() - t) <= tolerance


def verify_with_stripe(secret: str, body: bytes, header: str) -> bool:
    try:
        return bool(
            stripe.WebhookSignature.verify_header(body.decode(), header, secret, tolerance=300)
        )
    except stripe.SignatureVerificationError:
        return False


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


# --- events and API shortcuts --------------------------------------------------------------


async def emit(
    db: Any, settings: Any, workspace_id: str, event_type: str, data: dict[str, Any], **dims: Any
) -> Any:
    async with db.session() as s:
        principal = await accounts.principal_for_workspace(s, workspace_id)
    async with db.transaction() as s:
        return await events.emit(Context(s, principal, settings), event_type, data, **dims)


async def create_hook(
    client: Any, ws: Any, url: str, event_types: list[str], **extra: Any
) -> dict[str, Any]:
    response = await client.post(
        "/api/v1/webhooks",
        json={"url": url, "event_types": event_types, **extra},
        headers=ws.headers,
    )
    assert response.status_code == 201, response.text
    return response.json()


async def hook_list(client: Any, ws: Any) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/webhooks", headers=ws.headers)
    assert response.status_code == 200, response.text
    return response.json()["webhooks"]


async def hook_by_id(client: Any, ws: Any, hook_id: str) -> dict[str, Any]:
    return next(h for h in await hook_list(client, ws) if h["id"] == hook_id)


async def deliveries(client: Any, ws: Any, hook_id: str, **params: Any) -> dict[str, Any]:
    response = await client.get(
        f"/api/v1/webhooks/{hook_id}/deliveries", params=params, headers=ws.headers
    )
    assert response.status_code == 200, response.text
    return response.json()


async def create_contact(client: Any, ws: Any, email: str, **extra: Any) -> dict[str, Any]:
    response = await client.post(
        "/api/v1/contacts", json={"email": email, **extra}, headers=ws.headers
    )
    assert response.status_code == 201, response.text
    return response.json()["contact"]


async def create_list(client: Any, ws: Any, name: str) -> dict[str, Any]:
    response = await client.post("/api/v1/lists", json={"name": name}, headers=ws.headers)
    assert response.status_code == 201, response.text
    return response.json()["list"]


async def create_tag(client: Any, ws: Any, name: str) -> dict[str, Any]:
    response = await client.post("/api/v1/tags", json={"name": name}, headers=ws.headers)
    assert response.status_code == 201, response.text
    return response.json()["tag"]


async def join_list(client: Any, ws: Any, list_id: str, contact_id: str) -> None:
    response = await client.post(
        f"/api/v1/lists/{list_id}/contacts", json={"contact_ids": [contact_id]}, headers=ws.headers
    )
    assert response.status_code == 200, response.text
    assert response.json()["added"] == 1, response.text


async def attach_tag(client: Any, ws: Any, contact_id: str, tag_id: str) -> None:
    response = await client.post(
        f"/api/v1/contacts/{contact_id}/tags", json={"tag_id": tag_id}, headers=ws.headers
    )
    assert response.status_code == 201, response.text
