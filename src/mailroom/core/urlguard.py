"""Is this URL safe to send a server-side request to? (webhooks and feeds: SSRF guard)

Only https URLs to public addresses pass (plain http too with `https_only=False`, as feeds may
be served over http; every other rule still applies). Checked at registration and again when
connecting, and the connection goes to the address that was checked (see webhooks.client). The
host judged is the one the HTTP client will connect to, as yarl (aiohttp's URL type) spells it:
it folds Unicode digits and dots (fullwidth digits and dots, U+3002 ideographic full stops) into
ASCII, so such a host can be the IP literal 127.0.0.1, which aiohttp connects to directly
without any resolver; and it converts names by IDNA 2008, not the older IDNA 2003 of Python's
codec. Refusals name the host but never an address it resolved to, so the messages cannot map
internal names.

Python 3.11's `ipaddress` judges an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) on its IPv6
face and calls some special ranges global, so wrapped IPv4 addresses (mapped, compatible,
6to4, Teredo, NAT64) are unwrapped and both forms must be public.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import yarl

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

BLOCKED_SUFFIXES = (".localhost", ".internal", ".local", ".localdomain", ".home.arpa")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_6TO4 = ipaddress.ip_network("2002::/16")
_TEREDO = ipaddress.ip_network("2001::/32")
_COMPATIBLE = ipaddress.ip_network("::/96")
_CANONICAL_V4 = re.compile(
    r"^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$"
)
# Things a resolver would read as an IPv4 address: 2130706433, 0x7f000001, 0177.0.0.1, 127.1
_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}$")


class UnsafeUrl(ValueError):
    """The reason a URL is refused, phrased for the person who registered it."""


def parse_networks(values: Iterable[str]) -> list[Network]:
    return [ipaddress.ip_network(v.strip(), strict=False) for v in values if v.strip()]


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address carries (mapped, compatible, 6to4, Teredo, NAT64)."""
    found: list[ipaddress.IPv4Address] = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip in _COMPATIBLE and int(ip) > 1:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    if ip in _NAT64:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return found


def _public(ip: IPAddress) -> bool:
    return not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or (isinstance(ip, ipaddress.IPv6Address) and (ip.is_site_local or ip in _NAT64_LOCAL))
        or not ip.is_global
    )


def check_address(ip: IPAddress, allowed: list[Network] = ()) -> None:  # type: ignore[assignment]
    """Refuse anything but a public address (or one inside an allowed network)."""
    if any(ip in net for net in allowed if ip.version == net.version):
        return
    candidates: list[IPAddress] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        candidates += embedded_ipv4(ip)
    for candidate in candidates:
        if any(candidate in net for net in allowed if candidate.version == net.version):
            continue
        if not _public(candidate):
            raise UnsafeUrl(f"{ip} is not a public address")


def in_allowed(ip: IPAddress, allowed: list[Network]) -> bool:
    return any(ip in net for net in allowed if ip.version == net.version)


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str  # as the client connects: lowercased, ASCII (IDNA), no trailing dot or brackets
    port: int
    ip: IPAddress | None  # when the URL names an address rather than a name


def connect_host(url: str) -> str:
    """The URL's host exactly as aiohttp will connect to it (yarl's encoding of it)."""
    try:
        host = yarl.URL(url).raw_host
    except (ValueError, TypeError):  # UnicodeError is a ValueError
        raise UnsafeUrl("not a valid host name") from None
    if not host:
        raise UnsafeUrl("not a valid https URL")
    return host


def parse(url: str) -> Target:
    """Static checks (no DNS): scheme, credentials, and host names and forms never allowed."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise UnsafeUrl("not a valid URL") from None
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise UnsafeUrl("not a valid https URL")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise UnsafeUrl("URLs must not contain credentials")
    # Judged after the client's own conversion: before it, a Unicode-digit address is a name.
    host = connect_host(url).rstrip(".").lower()
    if not host.isascii():
        raise UnsafeUrl("not a valid host name")
    try:
        ip: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    if ip is None:
        if _NUMERIC_HOST.match(host) and not _CANONICAL_V4.match(host):
            raise UnsafeUrl(f"numeric host form {host} is not allowed")
        if host == "localhost" or host.endswith(BLOCKED_SUFFIXES):
            raise UnsafeUrl(f"{host} is not a public host name")
    default_port = 443 if parts.scheme == "https" else 80
    return Target(parts.scheme, host, port or default_port, ip)


Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]


async def system_resolve(host: str, port: int) -> list[IPAddress]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise UnsafeUrl(f"{host} does not resolve") from None
    return list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))


async def checked_addresses(
    target: Target,
    allowed: list[Network],
    resolve: Resolver = system_resolve,
    *,
    https_only: bool = True,
) -> list[IPAddress]:
    """The addresses to connect to: every one the name resolves to must pass, so a DNS answer
    mixing public and private addresses is refused as a whole. With `https_only` (webhooks)
    plain http is refused unless every address is in `allowed`; without it (feeds) http is
    judged like https."""
    if target.ip is not None:
        check_address(target.ip, allowed)  # the address is the caller's own input
        addresses: list[IPAddress] = [target.ip]
    else:
        addresses = await resolve(target.host, target.port)
        if not addresses:
            raise UnsafeUrl(f"{target.host} does not resolve")
        for address in addresses:
            try:
                check_address(address, allowed)
            except UnsafeUrl:
                # Not which address: that would tell a tenant how internal names resolve.
                raise UnsafeUrl(f"{target.host} resolves to a non-public address") from None
    if (
        https_only
        and target.scheme == "http"
        and not all(in_allowed(a, allowed) for a in addresses)
    ):
        raise UnsafeUrl("webhook URLs must use https")
    return addresses


async def check_url(
    url: str,
    allowed: list[Network],
    resolve: Resolver = system_resolve,
    *,
    https_only: bool = True,
) -> Target:
    target = parse(url)
    await checked_addresses(target, allowed, resolve, https_only=https_only)
    return target
