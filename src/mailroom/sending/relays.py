"""Several SMTP relays, as listmonk users run them: `MAILROOM_SMTP_URL` may list more than one
(separated by commas), each with its own `max_connections`, `max_per_second` and `weight`:

    MAILROOM_SMTP_URL="smtp://u:p@relay-a:587?weight=3&max_connections=8,
                       smtps://u:p@relay-b:465?weight=1&max_per_second=20"

A batch is spread over the relays by weight. A relay that cannot be reached, or that answers
`421` (service not available) to anything but a recipient, is rested, 30 s doubling to 10 min
while it keeps failing, and the messages it could not take are tried on another relay in the
same batch; the others carry on. A recipient's own 4xx or 5xx is the recipient's provider
speaking (pacing per provider, bounces), never the relay's. Each relay's state is in the
worker's memory and, for the Sending page, in its `workers` row (`states`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mailroom.sending.transport import (
    NO_ANSWER,
    Delivery,
    Outbox,
    Result,
    SmtpPool,
    Transport,
    parse_smtp_url,
    relay_urls,
)

REST_FIRST = 30.0
REST_MAX = 600.0


def relay_trouble(result: Result) -> bool:
    """The relay itself failed the message: no connection or answer, or `421` outside RCPT."""
    return result.code == NO_ANSWER or (result.code == 421 and not result.at_recipient)


@dataclass
class Relay:
    pool: SmtpPool
    weight: int
    rest_until: float = 0.0
    rest: float = 0.0
    last_error: str = ""
    sent: int = 0
    failed: int = 0
    credit: float = 0.0  # smooth weighted round robin
    changed: bool = field(default=True)

    @property
    def name(self) -> str:
        return f"{self.pool.target.host}:{self.pool.target.port}"

    def resting(self, now: float) -> bool:
        return self.rest_until > now

    def failing(self, now: float, why: str) -> None:
        self.rest = min(REST_MAX, self.rest * 2) if self.rest else REST_FIRST
        self.rest_until = now + self.rest
        self.last_error = why[:300]
        self.changed = True

    def working(self) -> None:
        if self.rest or self.last_error:
            self.changed = True
        self.rest = 0.0
        self.last_error = ""

    def state(self, now: float) -> dict[str, Any]:
        resting = self.resting(now)
        until = time.time() + (self.rest_until - now) if resting else None
        return {
            "relay": self.name,
            "weight": self.weight,
            "connections": self.pool.size,
            "max_per_second": self.pool.target.max_per_second,
            "state": "resting" if resting else "ok",
            "resting_until": (
                datetime.fromtimestamp(until, UTC).isoformat() if until is not None else None
            ),
            "last_error": self.last_error or None,
            "sent": self.sent,
            "failed": self.failed,
        }


class Relays:
    """A transport over several relays (see the module's docstring)."""

    def __init__(self, urls: Sequence[str], connections: int, helo: str) -> None:
        self.relays = []
        for url in urls:
            target = parse_smtp_url(url)
            pool = SmtpPool(url, size=target.max_connections or connections, helo=helo)
            self.relays.append(Relay(pool, target.weight))

    def _pick(self, live: list[Relay]) -> Relay:
        """Smooth weighted round robin (as nginx's): each relay in proportion to its weight,
        interleaved rather than in runs."""
        total = sum(r.weight for r in live)
        for relay in live:
            relay.credit += relay.weight
        chosen = max(live, key=lambda r: r.credit)
        chosen.credit -= total
        return chosen

    async def send(self, deliveries: Sequence[Delivery]) -> list[Result]:
        results: dict[str, Result] = {}
        tried: dict[str, set[int]] = {d.key: set() for d in deliveries}
        pending = list(deliveries)
        while pending:
            now = time.monotonic()
            live = [r for r in self.relays if not r.resting(now)]
            parts: dict[int, list[Delivery]] = {}
            for delivery in pending:
                fresh = [r for r in live if id(r) not in tried[delivery.key]]
                if not fresh:
                    results.setdefault(
                        delivery.key,
                        Result(
                            delivery.key, NO_ANSWER, "every SMTP relay is resting after failures"
                        ),
                    )
                    continue
                relay = self._pick(fresh)
                tried[delivery.key].add(id(relay))
                parts.setdefault(id(relay), []).append(delivery)
            if not parts:
                break
            chosen = {id(r): r for r in self.relays}
            answers = await asyncio.gather(
                *(chosen[key].pool.send(part) for key, part in parts.items())
            )
            pending = []
            by_key = {d.key: d for d in deliveries}
            for key, answered in zip(parts, answers, strict=True):
                relay = chosen[key]
                trouble = [a for a in answered if relay_trouble(a)]
                if trouble:
                    relay.failing(time.monotonic(), trouble[0].detail)
                elif answered:
                    relay.working()
                for answer in answered:
                    if relay_trouble(answer):
                        relay.failed += 1
                        results[answer.key] = answer  # kept unless another relay takes it
                        pending.append(by_key[answer.key])
                    else:
                        relay.sent += answer.sent
                        results[answer.key] = answer
        return [results[d.key] for d in deliveries]

    def states(self) -> list[dict[str, Any]]:
        now = time.monotonic()
        return [r.state(now) for r in self.relays]

    def take_changed(self) -> bool:
        """Whether a relay's state changed since the last call (for the `workers` row)."""
        changed = any(r.changed for r in self.relays)
        for relay in self.relays:
            relay.changed = False
        return changed

    async def close(self) -> None:
        for relay in self.relays:
            await relay.pool.close()


def transport_for(
    smtp_url: str | None, outbox: Path, connections: int, helo: str = "localhost"
) -> Transport:
    """The SMTP pool of the one relay (greeting as `helo`: `Settings.resolved_smtp_helo`), the
    relays when MAILROOM_SMTP_URL lists several, or the outbox."""
    urls = relay_urls(smtp_url or "")
    if len(urls) > 1:
        return Relays(urls, connections, helo)
    if urls:
        target = parse_smtp_url(urls[0])
        return SmtpPool(urls[0], size=target.max_connections or connections, helo=helo)
    return Outbox(outbox)
