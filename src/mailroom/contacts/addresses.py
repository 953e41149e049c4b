"""Checking the many addresses of one upload at a bounded cost, with the same verdicts as
`core.emails.is_valid_email`.

Everyday addresses are judged by two compiled patterns. email-validator (exact, ~50 us for an
unusual local part, 0.3-2 ms for a non-ASCII domain) sees only what the patterns cannot
decide: once per distinct domain, and once per distinct unusual address. Those calls are
capped per upload, so a file of distinct, deliberately slow addresses costs at most
MAX_FULL_CHECKS of them (about a second) before it is refused.
"""

from __future__ import annotations

import re
import time

from mailroom.core.emails import MAX_EMAIL_LENGTH, MAX_LOCAL_LENGTH, is_valid_email
from mailroom.core.errors import ApiError

MAX_FULL_CHECKS = 1000
# The everyday shapes (core.emails' fast path, split at the @).
PLAIN_LOCAL = re.compile(r"[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*\Z")
PLAIN_DOMAIN = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}\Z")
# Never valid, whatever else the address holds: ASCII outside a dot-atom in the local part
# (quoted local parts are refused too), dots out of place, ASCII outside letters, digits,
# hyphens and dots in the domain, or an empty domain label.
IMPOSSIBLE_LOCAL = re.compile(r'[\x00-\x20"(),:;<>@\[\\\]\x7f]|\A\.|\.\Z|\.\.')
IMPOSSIBLE_DOMAIN = re.compile(r"[\x00-\x2c/:-@\[-`{-\x7f]|\A\.|\.\Z|\.\.|\A\Z")
# An IDNA-encoded domain (and its normalised form) is at most this many times its UTF-8 size
# (punycode needs at most ~3.5 ASCII characters per 2-byte character, "xn--" included).
IDNA_GROWTH = 5


def yield_gil() -> None:
    """In a worker thread: hand the GIL to a waiting thread (the event loop) now, rather than
    after the interpreter's 5 ms switch interval. Costs ~1 us when nobody waits."""
    time.sleep(0)


def too_many_message(what: str) -> str:
    return (
        f"The {what} has more than {MAX_FULL_CHECKS:,} distinct addresses or domains in an "
        "unusual form (non-ASCII or odd punctuation); split it"
    )


class AddressCheck:
    """`check(address) -> bool` for normalised addresses; raises 400 once an upload needs
    more than MAX_FULL_CHECKS full checks."""

    def __init__(self, what: str = "file") -> None:
        self.what = what
        self.full_checks = 0
        self._domains: dict[str, bool] = {}
        self._addresses: dict[str, bool] = {}

    def __call__(self, email: str) -> bool:
        if not email or len(email) > MAX_EMAIL_LENGTH:
            return False
        local, at, domain = email.rpartition("@")
        if not at or not local:
            return False
        if PLAIN_LOCAL.match(local):
            if len(local) > MAX_LOCAL_LENGTH:
                return False
            if PLAIN_DOMAIN.match(domain):
                return True
            if IMPOSSIBLE_DOMAIN.search(domain) or not self._domain(domain):
                return False
            # A valid unusual domain: only a long address can still fail (on length).
            if len(local) + 1 + IDNA_GROWTH * len(domain.encode()) <= MAX_EMAIL_LENGTH:
                return True
            return self._full(email)
        if IMPOSSIBLE_LOCAL.search(local) or IMPOSSIBLE_DOMAIN.search(domain):
            return False
        if not PLAIN_DOMAIN.match(domain) and not self._domain(domain):
            return False
        return self._full(email)

    def _spend(self) -> None:
        self.full_checks += 1
        if self.full_checks > MAX_FULL_CHECKS:
            raise ApiError(400, too_many_message(self.what))
        yield_gil()  # a full check can take 2 ms: let the event loop in first

    def _domain(self, domain: str) -> bool:
        """Whether any address at `domain` can be valid, checked once per domain."""
        verdict = self._domains.get(domain)
        if verdict is None:
            self._spend()
            verdict = self._domains[domain] = is_valid_email(f"a@{domain}")
        return verdict

    def _full(self, email: str) -> bool:
        verdict = self._addresses.get(email)
        if verdict is None:
            self._spend()
            verdict = self._addresses[email] = is_valid_email(email)
        return verdict
