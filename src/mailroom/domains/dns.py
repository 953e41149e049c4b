"""The DNS records a sending domain publishes, and looking them up (dnspython, through
MAILROOM_DNS_NAMESERVERS or the system's resolver).

- DKIM (required): TXT `<selector>._domainkey.<domain>` = `v=DKIM1; k=rsa; p=<public key>`.
  Verified only when exactly one DKIM record is there and its key is ours, exactly.
- SPF (advised, when MAILROOM_SPF_INCLUDE is set): the domain's one `v=spf1` TXT record
  includes it.
- DMARC (advised): a `v=DMARC1` TXT record at `_dmarc.<domain>` or at a parent domain's
  `_dmarc` (a subdomain inherits its organisation's policy); any policy counts. The value asked
  for names `rua=mailto:dmarc@<MAILROOM_RETURN_PATH_DOMAIN>` when that is set, so aggregate
  reports reach the inbound listener.
- Return path (advised, when MAILROOM_RETURN_PATH_DOMAIN is set): CNAME
  `<MAILROOM_RETURN_PATH_SUBDOMAIN>.<domain>` to it, so bounces reach this installation.
- Link host (when the domain has one): CNAME `<link_host>` to the host of
  MAILROOM_PUBLIC_URL; the domain's campaign and automation links use it once it verifies.

TXT values are compared folded: the strings of a record joined, quote characters (pasted by
hand into many DNS consoles) dropped, whitespace ignored inside tags. A lookup that gets no
definite answer (timeout, SERVFAIL, refused) fails with its reason, marked `definite=False`
so that the daily re-check does not lapse a verified domain over a resolver's bad minute.

Callers hold no database connection while these run.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import dns.asyncresolver
import dns.exception
import dns.nameserver
import dns.resolver
import dns.reversename

from mailroom.sending.transport import relay_urls
from mailroom.settings import Settings

TIMEOUT_SECONDS = 5.0  # per lookup, retries included; the lookups of a check run together
EDNS_PAYLOAD = 1232  # a 2048-bit DKIM record (~420 bytes) fits UDP either way

DKIM, SPF, DMARC, RETURN_PATH = "dkim", "spf", "dmarc", "return_path"
LINK_HOST = "link_host"
LABELS = {
    DKIM: "DKIM",
    SPF: "SPF",
    DMARC: "DMARC",
    RETURN_PATH: "Return path",
    LINK_HOST: "Link host",
}
DMARC_MAILBOX = "dmarc"  # rua=mailto:dmarc@<return-path domain> (domains.dmarc)


@dataclass(frozen=True)
class Record:
    type: str  # TXT | CNAME
    host: str
    value: str
    purpose: str  # dkim | spf | dmarc | return_path | link_host


@dataclass(frozen=True)
class Check:
    status: str  # verified | failed
    reason: str | None = None
    definite: bool = True  # False: the DNS gave no answer either way (timeout, SERVFAIL)

    @property
    def ok(self) -> bool:
        return self.status == "verified"


def dkim_host(domain: str, selector: str) -> str:
    return f"{selector}._domainkey.{domain}"


def public_host(settings: Settings) -> str:
    """The host of MAILROOM_PUBLIC_URL: what a link host is a CNAME to."""
    return (urlsplit(settings.public_url).hostname or "").rstrip(".").lower()


def expected_records(
    settings: Settings, domain: str, selector: str, public_key: str, link_host: str | None = None
) -> list[Record]:
    """What to publish, DKIM first; advised records only where the operator set their value,
    and the link host's CNAME once the domain has one."""
    records = [Record("TXT", dkim_host(domain, selector), f"v=DKIM1; k=rsa; p={public_key}", DKIM)]
    if settings.spf_include:
        records.append(Record("TXT", domain, f"v=spf1 include:{settings.spf_include} ~all", SPF))
    dmarc = f"v=DMARC1; p={settings.dmarc_policy}"
    if settings.return_path_domain:  # aggregate reports come back to the inbound listener
        dmarc += f"; rua=mailto:{DMARC_MAILBOX}@{settings.return_path_domain}"
    records.append(Record("TXT", f"_dmarc.{domain}", dmarc, DMARC))
    if settings.return_path_domain:
        host = f"{settings.return_path_subdomain}.{domain}"
        records.append(Record("CNAME", host, settings.return_path_domain, RETURN_PATH))
    if link_host:
        records.append(Record("CNAME", link_host, public_host(settings), LINK_HOST))
    return records


# ------------------------------------------------------------------------------ lookups


class LookupFailed(Exception):
    def __init__(self, reason: str, *, definite: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.definite = definite


def _nameserver(entry: str) -> dns.nameserver.Nameserver:
    """`ip`, `ip:port`, `[v6]:port` or a bare IPv6 address (ValueError for anything else:
    dnspython would take a name and only time out)."""
    host, port = entry, 53
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = int(rest.removeprefix(":") or 53)
    elif entry.count(":") == 1:
        host, _, number = entry.partition(":")
        port = int(number)
    return dns.nameserver.Do53Nameserver(str(ipaddress.ip_address(host)), port)


def make_resolver(nameservers: list[str]) -> dns.asyncresolver.Resolver:
    """The `host:port` servers of MAILROOM_DNS_NAMESERVERS, else the system's. No cache: a
    check must see what is published now. Raises LookupFailed for unusable settings."""
    try:
        if nameservers:
            resolver = dns.asyncresolver.Resolver(configure=False)
            resolver.nameservers = [_nameserver(entry) for entry in nameservers]
        else:
            resolver = dns.asyncresolver.Resolver()
    except (ValueError, dns.exception.DNSException) as exc:
        raise LookupFailed(f"no usable DNS resolver ({exc})", definite=False) from None
    resolver.use_edns(0, 0, EDNS_PAYLOAD)
    resolver.lifetime = TIMEOUT_SECONDS
    resolver.timeout = TIMEOUT_SECONDS / 2  # a second try within the lifetime
    return resolver


async def _answer(resolver: dns.asyncresolver.Resolver, host: str, rdtype: str) -> list[str]:
    """The record values at `host` (TXT strings joined), or LookupFailed saying why not."""
    try:
        answer = await resolver.resolve(host, rdtype)
    except dns.resolver.NXDOMAIN:
        raise LookupFailed(f"{host} does not exist in DNS", definite=True) from None
    except dns.resolver.NoAnswer:
        raise LookupFailed(f"no {rdtype} record at {host}", definite=True) from None
    except dns.exception.Timeout:
        raise LookupFailed(f"DNS lookup of {host} timed out", definite=False) from None
    except dns.resolver.NoNameservers:
        raise LookupFailed(
            f"no DNS server answered for {host} (SERVFAIL or refused)", definite=False
        ) from None
    except (dns.exception.DNSException, OSError, ValueError) as exc:
        raise LookupFailed(
            f"DNS lookup of {host} failed ({type(exc).__name__})", definite=False
        ) from None
    if rdtype == "TXT":
        return [b"".join(rdata.strings).decode("utf-8", "replace") for rdata in answer]
    return [rdata.to_text() for rdata in answer]


def _unquoted(text: str) -> str:
    return text.replace('"', "").strip()


def _tags(text: str) -> dict[str, str]:
    """`k=v; k=v` tags, names lowercased, whitespace removed from values (RFC 6376 FWS)."""
    found: dict[str, str] = {}
    for part in _unquoted(text).split(";"):
        name, sep, value = part.partition("=")
        if sep:
            found[name.strip().lower()] = re.sub(r"\s+", "", value)
    return found


def compare_dkim(values: list[str], host: str, public_key: str) -> Check:
    records = [t for t in map(_tags, values) if "p" in t or t.get("v", "").upper() == "DKIM1"]
    if not records:
        return Check("failed", f"no DKIM record at {host} (TXT found, but no v=DKIM1 key)")
    if len(records) > 1:
        return Check("failed", f"{len(records)} DKIM records at {host}; publish exactly one")
    tags = records[0]
    if tags.get("v", "DKIM1") != "DKIM1" or tags.get("k", "rsa").lower() != "rsa":
        return Check("failed", f"the DKIM record at {host} is not v=DKIM1; k=rsa")
    if not tags.get("p"):
        return Check("failed", f"the DKIM record at {host} has no key (p= is empty)")
    if tags["p"] != public_key:
        return Check("failed", f"the DKIM record at {host} has another public key")
    return Check("verified")


def compare_spf(values: list[str], host: str, include: str) -> Check:
    records = [_unquoted(v) for v in values if _unquoted(v).lower().split(" ", 1)[0] == "v=spf1"]
    if not records:
        return Check("failed", f"no SPF record (v=spf1) at {host}")
    if len(records) > 1:
        return Check("failed", f"{len(records)} SPF records at {host}; SPF allows only one")
    terms = {term.lower().lstrip("+").rstrip(".") for term in records[0].split()}
    if f"include:{include}" not in terms:
        return Check("failed", f"the SPF record at {host} does not include {include}")
    return Check("verified")


def _is_dmarc(value: str) -> bool:
    return re.match(r"v\s*=\s*DMARC1\s*(;|$)", _unquoted(value), re.IGNORECASE) is not None


async def _check_dkim(resolver: dns.asyncresolver.Resolver, record: Record, key: str) -> Check:
    return compare_dkim(await _answer(resolver, record.host, "TXT"), record.host, key)


async def _check_spf(resolver: dns.asyncresolver.Resolver, record: Record, include: str) -> Check:
    return compare_spf(await _answer(resolver, record.host, "TXT"), record.host, include)


async def _check_dmarc(resolver: dns.asyncresolver.Resolver, domain: str) -> Check:
    """The domain's own `_dmarc`, else the nearest parent's (down to two labels)."""
    labels = domain.split(".")
    hosts = [f"_dmarc.{'.'.join(labels[i:])}" for i in range(max(1, len(labels) - 1))]
    answers = await asyncio.gather(
        *(_answer(resolver, host, "TXT") for host in hosts), return_exceptions=True
    )
    for answer in answers:
        if isinstance(answer, list) and any(_is_dmarc(v) for v in answer):
            return Check("verified")
    own = answers[0]
    if isinstance(own, LookupFailed) and not own.definite:
        raise own
    return Check("failed", f"no DMARC record (v=DMARC1) at {hosts[0]}")


async def _check_cname(resolver: dns.asyncresolver.Resolver, record: Record) -> Check:
    targets = [t.lower().rstrip(".") for t in await _answer(resolver, record.host, "CNAME")]
    if record.value not in targets:
        return Check(
            "failed",
            f"the CNAME at {record.host} points to {', '.join(targets)}, not {record.value}",
        )
    return Check("verified")


async def check(
    settings: Settings, records: list[Record], domain: str, public_key: str
) -> dict[str, Check]:
    """Every record looked up at once: purpose -> verdict. Never raises for DNS trouble."""
    try:
        resolver = make_resolver(settings.dns_nameservers)
    except LookupFailed as exc:
        return {r.purpose: Check("failed", exc.reason, definite=False) for r in records}

    async def one(record: Record) -> Check:
        try:
            if record.purpose == DKIM:
                return await _check_dkim(resolver, record, public_key)
            if record.purpose == SPF:
                return await _check_spf(resolver, record, settings.spf_include)
            if record.purpose == DMARC:
                return await _check_dmarc(resolver, domain)
            return await _check_cname(resolver, record)
        except LookupFailed as exc:
            return Check("failed", exc.reason, definite=exc.definite)

    verdicts = await asyncio.gather(*(one(r) for r in records))
    return {r.purpose: v for r, v in zip(records, verdicts, strict=True)}


# --------------------------------------------------------------- the relay's reverse DNS

REVERSE_DNS = "reverse_dns"  # its verdict's key in a domain's record_status (not a record)
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


async def reverse_dns(settings: Settings) -> dict[str, object] | None:
    """`{ok, detail}` for the relay's forward-confirmed reverse DNS (its address's PTR name
    resolves back to it), or None when not known: no relay, a relay on this machine (whose
    outbound address Mailroom cannot see), or DNS that did not answer."""
    hosts = [(urlsplit(url).hostname or "").lower() for url in relay_urls(settings.smtp_url)]
    found = [await _reverse_of(settings, h) for h in hosts if h and h not in LOOPBACK_HOSTS]
    known = [f for f in found if f is not None]
    if not known:
        return None
    # Several relays: met when each is (the first not met says why).
    return next((f for f in known if not f["ok"]), None) or {
        "ok": True,
        "detail": " ".join(str(f["detail"]) for f in known),
    }


async def _reverse_of(settings: Settings, host: str) -> dict[str, object] | None:
    try:
        resolver = make_resolver(settings.dns_nameservers)
        try:
            ip = str(ipaddress.ip_address(host))
        except ValueError:
            ip = (await _answer(resolver, host, "A"))[0]
    except LookupFailed:
        return None  # the relay's address is not known: neither is its reverse DNS
    try:
        names = [
            n.rstrip(".").lower()
            for n in await _ptr(resolver, dns.reversename.from_address(ip).to_text())
        ]
    except LookupFailed as exc:
        if not exc.definite:
            return None
        return {
            "ok": False,
            "detail": f"The relay {host} ({ip}) has no reverse DNS ({exc.reason}): ask whoever "
            "runs it for a PTR record naming a host that resolves back to its address.",
        }
    for name in names:
        try:
            back = await _answer(resolver, name, "A")
        except LookupFailed:
            continue
        if ip in back:
            return {
                "ok": True,
                "detail": f"The relay {host} ({ip}) reverses to {name}, which resolves back to it.",
            }
    return {
        "ok": False,
        "detail": f"The relay {host} ({ip}) reverses to {', '.join(names) or 'nothing'}, which "
        f"does not resolve back to {ip}: mailbox providers distrust such senders; ask whoever "
        "runs the relay to make the PTR name and its A record agree.",
    }


async def _ptr(resolver: dns.asyncresolver.Resolver, name: str) -> list[str]:
    return await _answer(resolver, name.rstrip("."), "PTR")
