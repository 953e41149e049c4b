"""`check_domains`: which domains of an import cannot receive mail (MX, then A/AAAA).

Only a definite answer skips rows: a domain that does not exist, has a null MX, or has neither
MX nor address records. A timeout or server failure keeps the rows. Well-known mailbox
providers are not looked up, and at most 500 distinct domains are per import.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import dns.asyncresolver
import dns.exception
import dns.nameserver
import dns.rdatatype
import dns.resolver

MAX_DOMAINS = 500
CONCURRENCY = 32
TIMEOUT_SECONDS = 4.0

WELL_KNOWN = frozenset(
    [
        "gmail.com",
        "googlemail.com",
        "yahoo.com",
        "yahoo.co.uk",
        "yahoo.fr",
        "ymail.com",
        "outlook.com",
        "hotmail.com",
        "hotmail.co.uk",
        "hotmail.fr",
        "live.com",
        "msn.com",
        "icloud.com",
        "me.com",
        "mac.com",
        "aol.com",
        "protonmail.com",
        "proton.me",
        "pm.me",
        "gmx.com",
        "gmx.de",
        "gmx.net",
        "web.de",
        "yandex.com",
        "yandex.ru",
        "mail.ru",
        "zoho.com",
        "fastmail.com",
        "hey.com",
        "t-online.de",
        "orange.fr",
        "free.fr",
        "laposte.net",
        "libero.it",
        "qq.com",
        "163.com",
        "naver.com",
        "comcast.net",
        "att.net",
        "verizon.net",
    ]
)


@dataclass(frozen=True)
class DomainVerdict:
    domain: str
    reason: str  # why it cannot receive mail


def make_resolver(nameservers: list[str]) -> dns.asyncresolver.Resolver:
    """The system's resolver, or the `host:port` servers of MAILROOM_DNS_NAMESERVERS."""
    if not nameservers:
        resolver = dns.asyncresolver.Resolver()
    else:
        resolver = dns.asyncresolver.Resolver(configure=False)
        servers: list[dns.nameserver.Nameserver | str] = []
        for entry in nameservers:
            host, _, port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
            servers.append(dns.nameserver.Do53Nameserver(host or entry, int(port or 53)))
        resolver.nameservers = servers
    resolver.lifetime = TIMEOUT_SECONDS
    resolver.timeout = TIMEOUT_SECONDS
    return resolver


async def _verdict(resolver: dns.asyncresolver.Resolver, domain: str) -> DomainVerdict | None:
    try:
        answer = await resolver.resolve(domain, "MX")
        exchanges = [str(r.exchange).rstrip(".") for r in answer]
        if exchanges == [""]:
            return DomainVerdict(domain, "domain does not accept mail (null MX)")
        return None
    except dns.resolver.NXDOMAIN:
        return DomainVerdict(domain, "domain does not exist")
    except dns.resolver.NoAnswer:
        pass
    except (dns.exception.Timeout, dns.resolver.NoNameservers, dns.exception.DNSException):
        return None  # not a definite answer: keep the rows
    for record in ("A", "AAAA"):
        try:
            await resolver.resolve(domain, record)
            return None
        except dns.resolver.NXDOMAIN:
            return DomainVerdict(domain, "domain does not exist")
        except dns.resolver.NoAnswer:
            continue
        except dns.exception.DNSException:
            return None
    return DomainVerdict(domain, "no mail server (no MX, A or AAAA record)")


async def undeliverable(
    domains: list[str], nameservers: list[str]
) -> tuple[dict[str, DomainVerdict], bool]:
    """Verdicts for the domains that cannot receive mail, and whether the 500-domain limit
    left some unchecked."""
    candidates = [d for d in dict.fromkeys(domains) if d not in WELL_KNOWN]
    truncated = len(candidates) > MAX_DOMAINS
    candidates = candidates[:MAX_DOMAINS]
    if not candidates:
        return {}, truncated
    resolver = make_resolver(nameservers)
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(domain: str) -> DomainVerdict | None:
        async with gate:
            return await _verdict(resolver, domain)

    verdicts = await asyncio.gather(*(one(d) for d in candidates))
    return {v.domain: v for v in verdicts if v is not None}, truncated
