"""On a sending domain's link host (`links.news.example.com`, a CNAME to this installation),
only the paths of the links in mail are answered: clicks, the open pixel, unsubscribe,
preferences, the web view, hosted images (and the stylesheet those pages use). The API, the
dashboard and everything else answer 404 there, so a tenant's host never serves another
page of the installation.

Which hosts are link hosts is read from the database at most once a minute (one small
query); a request on the public host, or for a link's path, never waits on it.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy import select
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from mailroom.domains.dns import public_host
from mailroom.models import SendingDomain
from mailroom.sending.addresses import LINK_PATHS
from mailroom.settings import Settings

REFRESH_SECONDS = 60.0


class LinkHosts:
    """Every sending domain's link host, as last read (refreshed when older than a minute)."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.hosts: frozenset[str] = frozenset()
        self.read_at = float("-inf")
        self._lock = asyncio.Lock()

    async def contains(self, host: str) -> bool:
        if time.monotonic() - self.read_at > REFRESH_SECONDS:
            async with self._lock:
                if time.monotonic() - self.read_at > REFRESH_SECONDS:
                    await self._read()
        return host in self.hosts

    async def _read(self) -> None:
        async with self.db.session(write=False) as session:
            found = await session.scalars(
                select(SendingDomain.link_host)
                .where(SendingDomain.link_host.is_not(None))
                .distinct()
            )
            self.hosts = frozenset(h for h in found.all() if h)
        self.read_at = time.monotonic()

    def forget(self) -> None:
        """Read again on the next request (a link host was set or removed here)."""
        self.read_at = float("-inf")


def _host_of(scope: Scope) -> str:
    for name, value in scope.get("headers") or ():
        if name == b"host":
            host = value.decode("latin-1").strip().lower()
            if host.startswith("["):
                return host.partition("]")[0] + "]"
            return host.rpartition(":")[0] if ":" in host else host
    return ""


class LinkHostMiddleware:
    def __init__(self, app: ASGIApp, hosts: LinkHosts, settings: Settings) -> None:
        self.app = app
        self.hosts = hosts
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not str(scope.get("path", "")).startswith(LINK_PATHS):
            host = _host_of(scope).rstrip(".")
            if host and host != public_host(self.settings) and await self.hosts.contains(host):
                await JSONResponse({"error": "Not found"}, status_code=404)(scope, receive, send)
                return
        await self.app(scope, receive, send)


router = APIRouter(include_in_schema=False)


@router.get("/tls/allowed")
async def tls_allowed(request: Request, domain: str = "") -> Response:
    """For a reverse proxy that gets certificates on demand (Caddy's `on_demand_tls ask`):
    200 when `domain` is a sending domain's link host, else 404, so no certificate is asked
    for a name nobody set."""
    hosts: LinkHosts = request.app.state.link_hosts
    known = await hosts.contains(domain.strip().lower().rstrip("."))
    return Response(status_code=200 if known else 404)
