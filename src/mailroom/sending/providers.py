"""Which mailbox provider a recipient's mail goes to: `google`, `microsoft`, `yahoo` (Yahoo and
AOL), `apple`, or for anyone else the host of the domain's best MX (`mx.example.net`), or
`other` when that is not known (no MX, no answer).

The big providers' own domains are known without DNS; any other domain is looked up once (its
MX record) and the answer kept in memory for a day (a failed lookup for ten minutes), so a
campaign costs one lookup per distinct domain, never one per message. Lookups happen while
the engine holds no database connection.
"""

from __future__ import annotations

import asyncio
import time

import dns.exception
import dns.resolver

from mailroom.domains.dns import LookupFailed, make_resolver
from mailroom.settings import Settings

PROVIDERS = ("google", "microsoft", "yahoo", "apple", "other")

# Domains whose mailboxes a provider hosts, known without asking DNS.
KNOWN_DOMAINS = {
    **dict.fromkeys(("gmail.com", "googlemail.com", "google.com"), "google"),
    **dict.fromkeys(
        (
            "outlook.com",
            "hotmail.com",
            "live.com",
            "msn.com",
            "hotmail.co.uk",
            "hotmail.fr",
            "outlook.fr",
            "live.co.uk",
            "live.fr",
            "hotmail.de",
            "outlook.de",
            "hotmail.it",
            "hotmail.es",
        ),
        "microsoft",
    ),
    **dict.fromkeys(
        (
            "yahoo.com",
            "ymail.com",
            "rocketmail.com",
            "aol.com",
            "aim.com",
            "yahoo.co.uk",
            "yahoo.fr",
            "yahoo.de",
            "yahoo.es",
            "yahoo.it",
            "yahoo.co.jp",
            "yahoo.com.br",
        ),
        "yahoo",
    ),
    **dict.fromkeys(("icloud.com", "me.com", "mac.com"), "apple"),
}

# A provider's MX hosts end with one of these (Google Workspace, Microsoft 365, ...).
MX_SUFFIXES = (
    ("google.com", "google"),
    ("googlemail.com", "google"),
    ("outlook.com", "microsoft"),  # *.mail.protection.outlook.com, *.olc.protection...
    ("hotmail.com", "microsoft"),
    ("yahoodns.net", "yahoo"),
    ("yahoo.com", "yahoo"),
    ("aol.com", "yahoo"),
    ("icloud.com", "apple"),
    ("me.com", "apple"),
)

FOUND_FOR = 24 * 3600.0
FAILED_FOR = 600.0
LOOKUPS_AT_ONCE = 16
LOOKUP_SECONDS = 2.0


def of_mx_host(host: str) -> str:
    """The provider an MX host belongs to, else the host itself."""
    name = host.strip().rstrip(".").lower()
    for suffix, provider in MX_SUFFIXES:
        if name == suffix or name.endswith("." + suffix):
            return provider
    return name[:100] or "other"


class Providers:
    """The provider of each recipient domain, MX answers cached in this process."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._known: dict[str, tuple[str, float]] = {}  # domain -> (provider, good until)
        self._gate = asyncio.Semaphore(LOOKUPS_AT_ONCE)

    def cached(self, domain: str) -> str | None:
        name = domain.lower()
        if name in KNOWN_DOMAINS:
            return KNOWN_DOMAINS[name]
        found = self._known.get(name)
        if found is not None and found[1] > time.monotonic():
            return found[0]
        return None

    async def of_domains(self, domains: set[str]) -> dict[str, str]:
        """Each domain's provider (lookups only for those not known or cached)."""
        answer: dict[str, str] = {}
        missing: list[str] = []
        for domain in domains:
            found = self.cached(domain)
            if found is None:
                missing.append(domain.lower())
            else:
                answer[domain] = found
        if missing:
            looked = await asyncio.gather(*(self._look_up(d) for d in missing))
            for domain, provider in zip(missing, looked, strict=True):
                answer[domain] = provider
        for domain in domains:
            answer.setdefault(domain, answer.get(domain.lower(), "other"))
        return answer

    async def _look_up(self, domain: str) -> str:
        async with self._gate:
            provider, seconds = await self._mx(domain)
        self._known[domain] = (provider, time.monotonic() + seconds)
        if len(self._known) > 100_000:  # a bound on memory: forget the oldest half
            for name in list(self._known)[:50_000]:
                del self._known[name]
        return provider

    async def _mx(self, domain: str) -> tuple[str, float]:
        try:
            resolver = make_resolver(self.settings.dns_nameservers)
            # Shorter than a domain check's: a batch waits for it (once per domain).
            resolver.lifetime = LOOKUP_SECONDS
            resolver.timeout = LOOKUP_SECONDS / 2
            answer = await resolver.resolve(domain, "MX")
        except dns.resolver.NXDOMAIN:
            return "other", FOUND_FOR
        except (LookupFailed, dns.exception.DNSException, OSError, ValueError):
            return "other", FAILED_FOR
        records = sorted(answer, key=lambda r: (int(getattr(r, "preference", 0)), str(r)))
        if not records:
            return "other", FOUND_FOR
        host = str(getattr(records[0], "exchange", "")).rstrip(".")
        if not host:  # a null MX (RFC 7505): the domain takes no mail
            return "other", FOUND_FOR
        return of_mx_host(host), FOUND_FOR
