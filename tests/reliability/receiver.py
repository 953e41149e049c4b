"""A webhook receiver on 127.0.0.1 for tests and benchmarks: answers 200 and records every
delivery id it sees (with the time it arrived)."""

from __future__ import annotations

import time
from collections import Counter

from aiohttp import web


class Receiver:
    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.arrivals: list[tuple[str, float, bytes]] = []

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        delivery = request.headers.get("X-Mailroom-Delivery", "")
        self.seen[delivery] += 1
        self.arrivals.append((delivery, time.time(), body))
        return web.Response(text="ok")

    async def __aenter__(self) -> Receiver:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.runner.cleanup()

    def url(self, path: str = "hook") -> str:
        return f"http://127.0.0.1:{self.port}/{path}"
