"""Pacing per mailbox provider: each provider its own rate and connection budget, slowed when
it answers "try later" while the others go on at full speed.

A provider starts unpaced: as fast as the relay takes mail, on up to every connection of the
pool. A deferral (a 4xx answer: 421, 450, 451, ...) halves its rate (from `FIRST_RATE` the first
time) and its connections, and rests it with backoff (30 s doubling to 15 min):
its mail waits, none of it is tried meanwhile. Each batch it then takes without a deferral
adds back a step of rate and a connection (additive increase, multiplicative decrease), and
once it is back to full speed it is unpaced again. The state lives in the worker's memory:
a restarted worker starts everyone unpaced and learns again from the answers.

A block (a 5xx naming policy, spam or reputation, e.g. `550 5.7.1 ... blocked`) is not the
address's fault: the message is not a bounce, it waits, and the provider is paused for the
workspace for `BLOCK_FOR` (stored in `sending_settings.provider_blocks`, with
`workspace.health_warning`); see `sending.outcomes`.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

MIN_RATE = 1.0  # messages a second: a deferring provider is never stopped altogether
RATE_STEP = 5.0  # messages a second added back per clean batch
FULL_SPEED = 500.0  # a rate this high is unpaced again
FIRST_RATE = 100.0  # what an unpaced provider is taken to have been taking at its first 4xx
REST_FIRST = 30.0
REST_MAX = 900.0
BLOCK_FOR = timedelta(hours=1)

# A permanent refusal about the sender's reputation or content, not the address.
_BLOCK_WORDS = re.compile(
    r"\b(?:policy|spam|spamhaus|blocked|block ?list|blacklist|denylist|reputation|"
    r"rate ?limited|5\.7\.(?:1|26|27|28|350|509|606|708|750))\b",
    re.IGNORECASE,
)
_NOT_A_BLOCK = re.compile(
    r"\b(?:no such user|user unknown|does not exist|mailbox unavailable|unknown user|"
    r"recipient rejected|address rejected|5\.1\.\d)\b",
    re.IGNORECASE,
)


def monotonic() -> float:
    """The pacer's clock (a module function, so tests can move it)."""
    return time.monotonic()


def is_block(code: int, text: str) -> bool:
    """A 5xx that refuses the sender (policy, spam, reputation), not the recipient."""
    if not 500 <= code < 600:
        return False
    return bool(_BLOCK_WORDS.search(text)) and not _NOT_A_BLOCK.search(text)


def key_of(provider: str, recipient: str) -> str:
    """What is paced: the provider, or for `other` (no MX known) the recipient's own domain,
    so that one unknown domain deferring does not slow every other unknown one."""
    if provider != "other":
        return provider
    return "other:" + recipient.rpartition("@")[2].lower()


def block_ends(blocks: dict[str, Any] | None, provider: str, now: datetime) -> datetime | None:
    """When `provider`'s block (an entry of `sending_settings.provider_blocks`) ends, if it
    is blocked now."""
    found = (blocks or {}).get(provider)
    if not found:
        return None
    try:
        until = datetime.fromisoformat(str(found.get("until")))
    except ValueError:
        return None
    return until if until > now else None


def is_deferral(code: int) -> bool:
    return 400 <= code < 500


@dataclass
class ProviderPace:
    rate: float = math.inf  # messages a second; inf: unpaced
    connections: int = 0  # 0: the whole pool
    tokens: float = 0.0
    refilled: float = field(default_factory=lambda: monotonic())
    rest_until: float = 0.0
    rest: float = 0.0  # the last rest, doubled on a deferral while resting

    @property
    def paced(self) -> bool:
        return self.rate != math.inf


class Pacer:
    """One per sending engine: the pace of each provider as its answers say."""

    def __init__(self, pool_size: int) -> None:
        self.pool_size = max(1, pool_size)
        self.providers: dict[str, ProviderPace] = {}

    def _pace(self, provider: str) -> ProviderPace:
        pace = self.providers.get(provider)
        if pace is None:
            pace = self.providers[provider] = ProviderPace()
        return pace

    def resting(self, provider: str, now: float | None = None) -> float:
        """Seconds until `provider` may be tried again (0: now)."""
        pace = self.providers.get(provider)
        if pace is None:
            return 0.0
        return max(0.0, pace.rest_until - (monotonic() if now is None else now))

    def take(self, provider: str, now: float | None = None) -> bool:
        """Whether one more message may go to `provider` now (it is then counted)."""
        pace = self.providers.get(provider)
        if pace is None:
            return True
        now = monotonic() if now is None else now
        if pace.rest_until > now:
            return False
        if not pace.paced:
            return True
        # A bucket of one second's worth: a paced provider gets at most `rate` a second.
        pace.tokens = min(pace.rate, pace.tokens + (now - pace.refilled) * pace.rate)
        pace.refilled = now
        if pace.tokens < 1:
            return False
        pace.tokens -= 1
        return True

    def wait(self, provider: str, ahead: int, now: float | None = None) -> float:
        """Seconds until a message refused by `take` may go, `ahead` others of the same batch
        already waiting before it (so a batch's held messages come back spread at the rate,
        not all at once)."""
        pace = self.providers.get(provider)
        if pace is None:
            return 0.0
        now = monotonic() if now is None else now
        rest = max(0.0, pace.rest_until - now)
        rate = pace.rate if pace.paced else FULL_SPEED
        return rest + (ahead + 1) / rate

    def connections(self, provider: str) -> int:
        pace = self.providers.get(provider)
        if pace is None or pace.connections <= 0:
            return self.pool_size
        return pace.connections

    def deferred(self, provider: str, now: float | None = None) -> None:
        """`provider` answered "try later": halve its rate and connections, rest it."""
        now = monotonic() if now is None else now
        pace = self._pace(provider)
        pace.rate = max(MIN_RATE, (pace.rate if pace.paced else FIRST_RATE) / 2)
        pace.connections = max(1, (pace.connections or self.pool_size) // 2)
        pace.rest = min(REST_MAX, pace.rest * 2 if now < pace.rest_until + REST_MAX else 0.0)
        pace.rest = max(REST_FIRST, pace.rest)
        pace.rest_until = now + pace.rest
        pace.tokens = 0.0
        pace.refilled = pace.rest_until

    def went_well(self, provider: str) -> None:
        """A batch to `provider` without a deferral: a step faster, a connection more."""
        pace = self.providers.get(provider)
        if pace is None or not pace.paced:
            return
        pace.rate += RATE_STEP
        pace.connections = min(self.pool_size, pace.connections + 1)
        if pace.rate >= FULL_SPEED and pace.connections >= self.pool_size:
            self.providers.pop(provider, None)  # back to full speed: unpaced
