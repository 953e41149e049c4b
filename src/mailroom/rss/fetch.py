"""Fetching a feed: a conditional GET through the URL guard, redirects followed by hand.

Every URL, the first and each redirect's, is checked by `urlguard.check_url` (http allowed,
everything else as for webhooks) before anything connects to it, and the connection itself
resolves through `webhooks.client.GuardedResolver`, which checks again and hands aiohttp only
the addresses it checked (no DNS-rebinding window). Tests replace
`mailroom.webhooks.client.resolve_host` with a stub; it is looked up at every call.

One deadline covers the whole fetch (guard lookups, connects, redirects, the body), the body is
read in chunks and refused once it passes the limit (after gzip/deflate decoding, whatever
Content-Length says), environment proxies are ignored, and a session lives for one fetch only.
Failures are `FeedUnreadable` with a reason meant for the person who set the feed up; reasons
never carry an address a name resolved to.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import aiohttp
import yarl

from mailroom.core import urlguard
from mailroom.webhooks import client

USER_AGENT = "Mailroom-Feeds/1.0"
ACCEPT = "application/rss+xml, application/atom+xml, application/xml, text/xml;q=0.9, */*;q=0.8"
REDIRECTS = frozenset({301, 302, 303, 307, 308})


class FeedUnreadable(Exception):
    """Why a feed could not be read, phrased for the person who set it up (e.g. "timed out
    after 10 s", "HTTP 404", "larger than 2 MB", "too many redirects", "redirect to a refused
    address: <urlguard reason>", "not a feed")."""


@dataclass(frozen=True)
class Fetched:
    status: int  # 2xx (normally 200), or 304 when the conditional GET says unchanged
    body: bytes | None  # None exactly when status is 304
    etag: str | None
    last_modified: str | None
    url: str  # the final URL after redirects


async def fetch(
    url: str,
    *,
    allowed: list[urlguard.Network],
    etag: str | None = None,
    last_modified: str | None = None,
    timeout_s: float = 10.0,
    limit_bytes: int = 2 * 1024 * 1024,
    max_redirects: int = 3,
    resolve: urlguard.Resolver | None = None,
) -> Fetched:
    """GET a feed. Raises `FeedUnreadable` for every failure, the guard's refusals included.

    `allowed`: networks exempt from the guard (the webhook setting, empty in production).
    `resolve`: the lookup the guard's checks use, `webhooks.client.resolve_host` when None;
    connections always resolve through `GuardedResolver` (that same `resolve_host`), so a
    different `resolve` can only add refusals, never let an address through.
    """
    lookup = resolve if resolve is not None else client.resolve_host
    try:
        async with asyncio.timeout(timeout_s):
            await _check(url, allowed, lookup, redirected=False)
            connector = aiohttp.TCPConnector(
                resolver=client.GuardedResolver(allowed),
                use_dns_cache=False,  # every new connection is resolved (and checked) again
                limit=4,
            )
            async with aiohttp.ClientSession(
                connector=connector,
                trust_env=False,  # environment proxies are ignored
                headers={"User-Agent": USER_AGENT, "Accept": ACCEPT},
                timeout=aiohttp.ClientTimeout(total=None),  # the deadline above is the one
            ) as session:
                return await _follow(
                    session,
                    url,
                    allowed=allowed,
                    lookup=lookup,
                    etag=etag,
                    last_modified=last_modified,
                    limit_bytes=limit_bytes,
                    max_redirects=max_redirects,
                )
    except TimeoutError:  # also aiohttp's own timeout errors, which are TimeoutErrors
        raise FeedUnreadable(f"timed out after {timeout_s:g} s") from None
    except aiohttp.ClientConnectorCertificateError:
        raise FeedUnreadable("the server's TLS certificate is not valid") from None
    except aiohttp.ClientConnectorSSLError:
        raise FeedUnreadable("TLS handshake failed") from None
    except aiohttp.ClientConnectorDNSError as exc:
        # GuardedResolver's refusals arrive here: the guard's own words, which name the host
        # but never an address.
        raise FeedUnreadable(str(exc.os_error)) from None
    except aiohttp.ClientConnectorError as exc:
        raise FeedUnreadable(f"could not connect: {client.os_reason(exc.os_error)}") from None
    except aiohttp.ServerDisconnectedError:
        raise FeedUnreadable("the server closed the connection") from None
    except aiohttp.ClientPayloadError:
        raise FeedUnreadable("the answer was cut off or could not be decoded") from None
    except aiohttp.ClientResponseError:
        raise FeedUnreadable("not a valid HTTP answer") from None
    except aiohttp.InvalidURL:
        raise FeedUnreadable("not a valid URL") from None
    except aiohttp.ClientError as exc:
        raise FeedUnreadable(f"could not fetch ({type(exc).__name__})") from None
    except OSError as exc:
        raise FeedUnreadable(f"could not connect: {client.os_reason(exc)}") from None


async def _check(
    url: str, allowed: list[urlguard.Network], lookup: urlguard.Resolver, *, redirected: bool
) -> None:
    try:
        await urlguard.check_url(url, allowed, lookup, https_only=False)
    except urlguard.UnsafeUrl as exc:
        reason = f"redirect to a refused address: {exc}" if redirected else str(exc)
        raise FeedUnreadable(reason) from None


async def _follow(
    session: aiohttp.ClientSession,
    url: str,
    *,
    allowed: list[urlguard.Network],
    lookup: urlguard.Resolver,
    etag: str | None,
    last_modified: str | None,
    limit_bytes: int,
    max_redirects: int,
) -> Fetched:
    headers: dict[str, str] = {}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    current = url  # checked by the caller
    hops = 0
    while True:
        async with session.get(current, headers=headers, allow_redirects=False) as response:
            location = response.headers.get("Location")
            if response.status in REDIRECTS and location:
                if hops >= max_redirects:
                    raise FeedUnreadable("too many redirects")
                try:
                    target = str(yarl.URL(current).join(yarl.URL(location.strip())))
                except (ValueError, TypeError):
                    raise FeedUnreadable("redirect to an invalid URL") from None
            elif response.status == 304:
                return Fetched(
                    304,
                    None,
                    response.headers.get("ETag") or etag,
                    response.headers.get("Last-Modified") or last_modified,
                    current,
                )
            elif 200 <= response.status < 300:
                try:
                    body = await client.read_limited(response, limit_bytes)
                except client.TooLarge:
                    raise FeedUnreadable(f"larger than {client.size_text(limit_bytes)}") from None
                return Fetched(
                    response.status,
                    body,
                    response.headers.get("ETag"),
                    response.headers.get("Last-Modified"),
                    current,
                )
            else:
                raise FeedUnreadable(f"HTTP {response.status}")
        # Checked before anything connects to it (GuardedResolver checks names again).
        await _check(target, allowed, lookup, redirected=True)
        hops += 1
        current = target
