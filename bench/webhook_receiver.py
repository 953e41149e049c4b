"""A receiver process for the webhook benchmark: answers 200 at once, and measures for each
delivery the delay between the event's `created_at` and its arrival. `GET /stats` reports
(count, delays, the longest of them: the lag of the last delivery of a burst, and the first
and last arrival times); `POST /reset` starts over. Run: python -m bench.webhook_receiver PORT"""

from __future__ import annotations

import statistics
import sys
import time
from datetime import datetime

import orjson
from aiohttp import web

delays: list[float] = []
ids: set[str] = set()
arrivals: list[float] = []  # the first and the last arrival (time.time())
count = 0


async def hook(request: web.Request) -> web.Response:
    global count
    body = orjson.loads(await request.read())
    created = datetime.fromisoformat(body["created_at"].replace("Z", "+00:00")).timestamp()
    now = time.time()
    delays.append(now - created)
    if not arrivals:
        arrivals.append(now)
    arrivals[1:] = [now]
    ids.add(body["id"])
    count += 1
    return web.Response(text="ok")


async def stats(_request: web.Request) -> web.Response:
    ordered = sorted(delays)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0

    return web.json_response(
        {
            "count": count,
            "unique": len(ids),
            "p50_delay_s": pick(0.5),
            "p99_delay_s": pick(0.99),
            "mean_delay_s": statistics.fmean(ordered) if ordered else 0.0,
            "max_delay_s": ordered[-1] if ordered else 0.0,
            "first_at": arrivals[0] if arrivals else 0.0,
            "last_at": arrivals[-1] if arrivals else 0.0,
        }
    )


async def reset(_request: web.Request) -> web.Response:
    global count
    delays.clear()
    ids.clear()
    arrivals.clear()
    count = 0
    return web.Response(text="ok")


def main() -> None:
    app = web.Application()
    app.router.add_post("/hook/{n}", hook)
    app.router.add_get("/stats", stats)
    app.router.add_post("/reset", reset)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)


if __name__ == "__main__":
    main()
