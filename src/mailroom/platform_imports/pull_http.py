"""Guarded outbound HTTP for the API pulls (`pull_mailchimp`, `pull_listmonk`): GETs of JSON.

The same rules as the feed fetcher (`rss.fetch`), whose pattern this follows: the base URL is
checked by `urlguard.check_url` (http allowed, everything else as for webhooks) before anything
connects, and every connection resolves through `webhooks.client.GuardedResolver`, which checks
the addresses again and hands aiohttp only those (no DNS-rebinding window). Tests replace
`mailroom.webhooks.client.resolve_host` with a stub; it is looked up at every call.

Per request: one 30 s deadline (connect, send, the whole body), the body read in chunks and
refused past 20 MB (after gzip/deflate decoding, whatever Content-Length says), redirects never
followed (a pull talks to one API; a redirect fails the pull saying so), environment proxies
ignored. A transient failure (429, 500, 502, 503, 504, a timeout, a refused or dropped
connection) is tried again after 2 s and then 8 s (a numeric Retry-After of at most 60 s is
honoured instead); a pull of 50,000 members makes 50 or more requests and one hiccup should not
fail it. One session per pull.

Failures are `PullFailed` with a reason for the person who started the import, prefixed with the
platform's name ("listmonk: timed out after 30 s"); reasons never carry an address a name
resolved to.
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import aiohttp

from mailroom.core import urlguard
from mailroom.core.errors import ApiError
from mailroom.webhooks import client

USER_AGENT = "Mailroom-Imports/1.0"
TIMEOUT_S = 30.0
MAX_RESPONSE_BYTES = 20 * 1024 * 1024
RETRY_DELAYS: tuple[float, ...] = (2.0, 8.0)  # before the 2nd and the 3rd attempt
MAX_RETRY_AFTER = 60.0
TRANSIENT = frozenset({429, 500, 502, 503, 504})
REASON_LIMIT = 300


class PullFailed(Exception):
    """Why a pull stopped, phrased for the person who started it (the job ends `failed` with
    it): the platform's own reason for a refusal (wrong credentials, unknown audience), or the
    transport's ("listmonk: could not connect: Connection refused")."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PullRefused(ApiError):
    """The pull's details are refused before anything is fetched (400, naming the field: an
    `api.url` the URL guard refuses, an `api.key` without its data centre). An `ApiError`, so
    raised from a request handler it renders as `{"error": message}`."""

    def __init__(self, message: str) -> None:
        super().__init__(400, message)


@dataclass(frozen=True)
class Answer:
    status: int
    data: Any  # the parsed JSON body; None when the body is empty or not JSON
    text: str  # the body's first characters (decoded leniently), for reasons
    retry_after: float | None = None  # a numeric Retry-After header, when sensible


class _Transient(Exception):
    """A failure worth another attempt; `reason` ends the pull when attempts run out."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def check_base(url: str, allowed: list[urlguard.Network]) -> None:
    """Raise `urlguard.UnsafeUrl` when the URL guard refuses `url` (http allowed)."""
    await urlguard.check_url(url, allowed, client.resolve_host, https_only=False)


def shorten(text: str, limit: int = REASON_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class HttpClient:
    """One pull's session: `async with HttpClient("listmonk", allowed, (user, password)) as
    http:` then `await http.get(url, params)`, every request with HTTP Basic auth. The caller
    checks the base URL first (`check_base`)."""

    def __init__(
        self,
        label: str,
        allowed: list[urlguard.Network],
        credentials: tuple[str, str],
        *,
        timeout_s: float | None = None,
        limit_bytes: int | None = None,
    ) -> None:
        self.label = label
        self.allowed = allowed
        user, password = credentials
        pair = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        self.authorization = f"Basic {pair}"
        # Read at construction, not import, so tests can lower the module's limits.
        self.timeout_s = TIMEOUT_S if timeout_s is None else timeout_s
        self.limit_bytes = MAX_RESPONSE_BYTES if limit_bytes is None else limit_bytes
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> HttpClient:
        connector = aiohttp.TCPConnector(
            resolver=client.GuardedResolver(self.allowed),
            use_dns_cache=False,  # every new connection is resolved (and checked) again
            limit=2,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            trust_env=False,  # environment proxies are ignored
            headers={
                "User-Agent": USER_AGENT,
                "Accept": "application/json",
                "Authorization": self.authorization,
            },
            timeout=aiohttp.ClientTimeout(total=None),  # the per-request deadline is ours
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def get(self, url: str, params: list[tuple[str, str]]) -> Answer:
        """The answer to one GET, after retrying transient failures. Any status but a redirect
        is returned (the caller reads the platform's refusal); raises `PullFailed` for a
        redirect, a body over the limit, and transport failures that outlast the retries."""
        attempt = 0
        while True:
            delay: float
            try:
                answer = await self._once(url, params)
            except _Transient as exc:
                if attempt >= len(RETRY_DELAYS):
                    raise PullFailed(f"{self.label}: {exc.reason}") from None
                delay = RETRY_DELAYS[attempt]
            else:
                if answer.status not in TRANSIENT or attempt >= len(RETRY_DELAYS):
                    return answer
                delay = RETRY_DELAYS[attempt] if answer.retry_after is None else answer.retry_after
            attempt += 1
            await asyncio.sleep(delay)

    async def _once(self, url: str, params: list[tuple[str, str]]) -> Answer:
        session = self._session
        if session is None:
            raise RuntimeError("HttpClient used outside `async with`")
        label = self.label
        try:
            async with (
                asyncio.timeout(self.timeout_s),
                session.get(url, params=params, allow_redirects=False) as response,
            ):
                if 300 <= response.status < 400:
                    raise PullFailed(
                        f"{label}: HTTP {response.status}, a redirect (redirects are not "
                        "followed: give the address the API answers at)"
                    )
                try:
                    body = await client.read_limited(response, self.limit_bytes)
                except client.TooLarge:
                    limit = client.size_text(self.limit_bytes)
                    raise PullFailed(f"{label}: an answer was larger than {limit}") from None
                return Answer(
                    response.status,
                    _json(body),
                    _text(body),
                    _retry_after(response.headers.get("Retry-After")),
                )
        except TimeoutError:  # also aiohttp's own timeout errors, which are TimeoutErrors
            raise _Transient(f"timed out after {self.timeout_s:g} s") from None
        except aiohttp.ClientConnectorCertificateError:
            raise PullFailed(f"{label}: the server's TLS certificate is not valid") from None
        except aiohttp.ClientConnectorSSLError:
            raise PullFailed(f"{label}: TLS handshake failed") from None
        except aiohttp.ClientConnectorDNSError as exc:
            # GuardedResolver's refusals arrive here: the guard's own words, which name the
            # host but never an address.
            raise PullFailed(f"{label}: {exc.os_error}") from None
        except aiohttp.ClientConnectorError as exc:
            raise _Transient(f"could not connect: {client.os_reason(exc.os_error)}") from None
        except aiohttp.ServerDisconnectedError:
            raise _Transient("the server closed the connection") from None
        except aiohttp.ClientPayloadError:
            raise _Transient("the answer was cut off or could not be decoded") from None
        except aiohttp.ClientResponseError:
            raise PullFailed(f"{label}: not a valid HTTP answer") from None
        except aiohttp.InvalidURL:
            raise PullFailed(f"{label}: not a valid URL") from None
        except aiohttp.ClientError as exc:
            raise PullFailed(f"{label}: could not fetch ({type(exc).__name__})") from None
        except OSError as exc:
            raise _Transient(f"could not connect: {client.os_reason(exc)}") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)  # NaN / Infinity are not JSON


def _json(body: bytes) -> Any:
    if not body.strip():
        return None
    try:
        return json.loads(body, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):  # also UnicodeDecodeError; nested past the stack
        return None


def _text(body: bytes) -> str:
    return body[:2000].decode("utf-8", "replace")


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None  # an HTTP date: the schedule's own delay is used
    return seconds if 0 <= seconds <= MAX_RETRY_AFTER else None
