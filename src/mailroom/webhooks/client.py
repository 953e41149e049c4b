"""Outbound HTTP for webhooks: one total deadline per attempt, no redirects, no environment
proxies, at most a few KB of the answer read, and connections only to checked addresses.

aiohttp resolves each new connection through `GuardedResolver`, which refuses any answer
holding a non-public address and hands aiohttp exactly the addresses it checked, so there is
no window between the check and the connect (DNS rebinding); TLS still verifies the name.
"""

from __future__ import annotations

import asyncio
import errno as errno_codes
import os
import socket
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from mailroom.core import urlguard

USER_AGENT = "Mailroom-Webhooks/1.0"
READ_LIMIT = 4096

# Replaceable in tests (a stub resolver); looked up at every connection.
resolve_host: urlguard.Resolver = urlguard.system_resolve


class GuardedResolver(AbstractResolver):
    def __init__(self, allowed: list[urlguard.Network]) -> None:
        self.allowed = allowed

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        try:
            addresses = await urlguard.checked_addresses(
                urlguard.Target("https", host, port, None), self.allowed, resolve_host
            )
        except urlguard.UnsafeUrl as exc:
            raise OSError(str(exc)) from None
        return [
            ResolveResult(
                hostname=host,
                host=str(address),
                port=port,
                family=socket.AF_INET if address.version == 4 else socket.AF_INET6,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for address in addresses
        ]

    async def close(self) -> None:
        return None


@dataclass(frozen=True)
class Attempt:
    status: int | None  # HTTP status, or None when no answer came
    error: str | None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def make_session(
    allowed: list[urlguard.Network], *, limit: int = 200, per_host: int = 16
) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(
        resolver=GuardedResolver(allowed),
        use_dns_cache=False,  # every new connection is resolved (and checked) again
        limit=limit,
        limit_per_host=per_host,
    )
    return aiohttp.ClientSession(
        connector=connector,
        trust_env=False,  # environment proxies are ignored
        headers={"User-Agent": USER_AGENT},
        auto_decompress=False,
    )


async def post(
    session: aiohttp.ClientSession,
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    deadline_seconds: float,
    allowed: list[urlguard.Network],
) -> Attempt:
    """One attempt. Never raises: every outcome is an `Attempt`."""
    try:
        target = urlguard.parse(url)
        if target.ip is not None:  # a literal address skips the resolver: check it here
            urlguard.check_address(target.ip, allowed)
            if target.scheme == "http" and not urlguard.in_allowed(target.ip, allowed):
                raise urlguard.UnsafeUrl("webhook URLs must use https")
        elif target.scheme == "http":
            addresses = await resolve_host(target.host, target.port)
            if not all(urlguard.in_allowed(a, allowed) for a in addresses):
                raise urlguard.UnsafeUrl("webhook URLs must use https")
    except urlguard.UnsafeUrl as exc:
        return Attempt(None, f"refused: {exc}")
    try:
        async with asyncio.timeout(deadline_seconds):  # one deadline: connect, send, read
            async with session.post(
                url,
                data=body,
                headers=headers,
                allow_redirects=False,
            ) as response:
                await response.content.read(READ_LIMIT)
                return Attempt(
                    response.status, None if response.status < 300 else _reason(response)
                )
    except TimeoutError:
        return Attempt(None, f"timeout after {deadline_seconds:g}s")
    except aiohttp.ClientConnectorError as exc:
        return Attempt(None, f"connection failed: {_short(exc.os_error or exc)}")
    except (aiohttp.ClientError, OSError) as exc:
        return Attempt(None, f"{type(exc).__name__}: {_short(exc)}")


def _reason(response: Any) -> str:
    if 300 <= response.status < 400:
        return f"HTTP {response.status} (redirects are not followed)"
    return f"HTTP {response.status}"


def _short(exc: object) -> str:
    return str(exc)[:300]


# ---------------------------------------------------------------- reading answers (feeds, imports)

CHUNK = 64 * 1024


class TooLarge(Exception):
    """The answer's body passed the caller's limit."""


async def read_limited(response: aiohttp.ClientResponse, limit_bytes: int) -> bytes:
    """The whole body, decoded (gzip, deflate), refused (TooLarge) once it passes
    `limit_bytes`: counted as read, never trusting Content-Length alone."""
    declared = response.content_length
    if (
        declared is not None
        and declared > limit_bytes
        and "Content-Encoding" not in response.headers
    ):
        raise TooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(CHUNK):
        size += len(chunk)
        if size > limit_bytes:
            raise TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def size_text(n: int) -> str:
    mib, kib = 1024 * 1024, 1024
    if n >= mib and n % mib == 0:
        return f"{n // mib} MB"
    if n >= kib and n % kib == 0:
        return f"{n // kib} KB"
    return f"{n} bytes"


def os_reason(exc: BaseException | None) -> str:
    """ "Connection refused", not "Connect call failed ('10.1.2.3', 443)": no addresses."""
    code = getattr(exc, "errno", None)
    if isinstance(code, int) and code in errno_codes.errorcode:
        return os.strerror(code)
    return "connection failed"
