"""mailroom.rss.fetch against a real HTTP server on 127.0.0.1 (aiohttp.web, a random port).

Only 127.0.0.1/32 is exempt from the URL guard here, so 127.0.0.2 (also loopback, where a bare
TCP listener counts connections) stands for an internal address a feed must never reach. Names
resolve through a stub installed on `mailroom.webhooks.client.resolve_host`, the lookup both the
guard and the connection use.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import ipaddress
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from mailroom.core import urlguard
from mailroom.rss import fetch as rss_fetch
from mailroom.rss.fetch import FeedUnreadable, fetch
from mailroom.webhooks import client as webhook_client

LOOPBACK_ONLY = urlguard.parse_networks(["127.0.0.1/32"])
FEED = b'<?xml version="1.0"?><rss version="2.0"><channel><title>T</title></channel></rss>'
ETAG = '"v1-abc"'
LAST_MODIFIED = "Tue, 14 May 2024 09:12:31 GMT"


@dataclass
class Server:
    base: str  # http://127.0.0.1:<port>
    port: int
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]


def _app(server: Server) -> web.Application:
    async def record(request: web.Request) -> None:
        server.requests.append((request.path_qs, dict(request.headers)))

    async def feed(request: web.Request) -> web.Response:
        await record(request)
        if request.headers.get("If-None-Match") == ETAG:
            return web.Response(status=304, headers={"ETag": ETAG})
        return web.Response(
            body=FEED,
            content_type="application/rss+xml",
            headers={"ETag": ETAG, "Last-Modified": LAST_MODIFIED},
        )

    async def redirect(request: web.Request) -> web.Response:
        """/r/<n> redirects n times: relative, root-relative and absolute Locations in turn."""
        await record(request)
        n = int(request.match_info["n"])
        if n == 0:
            return web.Response(body=FEED, content_type="application/rss+xml")
        locations = [f"{n - 1}", f"/r/{n - 1}", f"{server.base}/r/{n - 1}"]
        status = [301, 302, 307, 308][n % 4]
        return web.Response(status=status, headers={"Location": locations[n % 3]})

    async def redirect_to(request: web.Request) -> web.Response:
        await record(request)
        return web.Response(status=302, headers={"Location": request.query["to"]})

    async def slow(request: web.Request) -> web.Response:
        await record(request)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.release.wait(), 10)
        return web.Response(body=FEED)

    async def slow_redirect(request: web.Request) -> web.Response:
        """Each hop answers in 0.3 s: no single request is slow, the whole fetch is."""
        await record(request)
        await asyncio.sleep(0.3)
        n = int(request.match_info["n"])
        if n == 0:
            return web.Response(body=FEED)
        return web.Response(status=302, headers={"Location": f"/slow-r/{n - 1}"})

    async def trickle(request: web.Request) -> web.StreamResponse:
        """Headers at once, then a byte every 0.1 s: the deadline covers the body."""
        await record(request)
        response = web.StreamResponse()
        await response.prepare(request)
        for _ in range(100):
            if server.release.is_set():
                break
            await response.write(b" ")
            await asyncio.sleep(0.1)
        return response

    async def big(request: web.Request) -> web.StreamResponse:
        """10 KB, chunked: no Content-Length to go by."""
        await record(request)
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        for _ in range(10):
            await response.write(b"x" * 1024)
        await response.write_eof()
        return response

    async def gzipped(request: web.Request) -> web.Response:
        await record(request)
        return web.Response(
            body=gzip.compress(FEED),
            headers={"Content-Encoding": "gzip", "Content-Type": "application/rss+xml"},
        )

    async def zeros(request: web.Request) -> web.Response:
        """<kb> KB of zeros, gzipped to a few KB on the wire: the limit counts decoded bytes."""
        await record(request)
        size = int(request.match_info["kb"]) * 1024
        return web.Response(body=gzip.compress(b"\0" * size), headers={"Content-Encoding": "gzip"})

    async def status(request: web.Request) -> web.Response:
        await record(request)
        return web.Response(status=int(request.match_info["code"]), text="nope")

    app = web.Application()
    app.router.add_get("/feed", feed)
    app.router.add_get("/r/{n}", redirect)
    app.router.add_get("/to", redirect_to)
    app.router.add_get("/slow", slow)
    app.router.add_get("/slow-r/{n}", slow_redirect)
    app.router.add_get("/trickle", trickle)
    app.router.add_get("/big", big)
    app.router.add_get("/gzip", gzipped)
    app.router.add_get("/zeros/{kb}", zeros)
    app.router.add_get("/status/{code}", status)
    return app


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    server = Server(base="", port=0)
    runner = web.AppRunner(_app(server), shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server.port = runner.addresses[0][1]
    server.base = f"http://127.0.0.1:{server.port}"
    yield server
    server.release.set()
    await runner.cleanup()


@dataclass
class Listener:
    """A bare TCP listener on 127.0.0.2 that counts connections (and answers nothing)."""

    port: int
    connections: int = 0


@pytest.fixture
async def internal() -> AsyncIterator[Listener]:
    listener = Listener(port=0)

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        listener.connections += 1
        writer.close()

    tcp = await asyncio.start_server(accept, "127.0.0.2", 0)
    listener.port = tcp.sockets[0].getsockname()[1]
    yield listener
    tcp.close()
    await tcp.wait_closed()


class StubResolver:
    """Installed on `webhook_client.resolve_host`: each host answers its queued answers in turn
    (the last one repeats); unknown hosts do not resolve."""

    def __init__(self) -> None:
        self.answers: dict[str, list[list[Any]]] = {}
        self.calls: list[str] = []

    def set(self, host: str, *answers: list[str]) -> None:
        self.answers[host] = [[ipaddress.ip_address(a) for a in answer] for answer in answers]

    async def __call__(self, host: str, port: int) -> list[Any]:
        self.calls.append(host)
        queued = self.answers.get(host)
        if not queued:
            raise urlguard.UnsafeUrl(f"{host} does not resolve")
        return list(queued.pop(0) if len(queued) > 1 else queued[0])


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> StubResolver:
    stub = StubResolver()
    monkeypatch.setattr(webhook_client, "resolve_host", stub)
    return stub


async def refused(url: str, **kwargs: Any) -> str:
    kwargs.setdefault("allowed", LOOPBACK_ONLY)
    with pytest.raises(FeedUnreadable) as caught:
        await fetch(url, **kwargs)
    return str(caught.value)


# --- answers -----------------------------------------------------------------------------


async def test_a_feed_is_read_with_its_validators(server: Server) -> None:
    got = await fetch(f"{server.base}/feed", allowed=LOOPBACK_ONLY)
    assert got == rss_fetch.Fetched(200, FEED, ETAG, LAST_MODIFIED, f"{server.base}/feed")
    ((_, headers),) = server.requests
    assert headers["User-Agent"] == "Mailroom-Feeds/1.0"
    assert headers["Accept"] == (
        "application/rss+xml, application/atom+xml, application/xml, text/xml;q=0.9, */*;q=0.8"
    )
    assert "If-None-Match" not in headers and "If-Modified-Since" not in headers


async def test_conditional_get_answered_304_has_no_body(server: Server) -> None:
    got = await fetch(
        f"{server.base}/feed", allowed=LOOPBACK_ONLY, etag=ETAG, last_modified=LAST_MODIFIED
    )
    assert got == rss_fetch.Fetched(304, None, ETAG, LAST_MODIFIED, f"{server.base}/feed")
    ((_, headers),) = server.requests
    assert headers["If-None-Match"] == ETAG
    assert headers["If-Modified-Since"] == LAST_MODIFIED


async def test_a_stale_validator_gets_the_feed(server: Server) -> None:
    got = await fetch(f"{server.base}/feed", allowed=LOOPBACK_ONLY, etag='"v0-old"')
    assert (got.status, got.body, got.etag) == (200, FEED, ETAG)
    assert server.requests[0][1]["If-None-Match"] == '"v0-old"'


async def test_gzip_answers_are_decoded(server: Server) -> None:
    got = await fetch(f"{server.base}/gzip", allowed=LOOPBACK_ONLY)
    assert got.body == FEED
    assert "gzip" in server.requests[0][1]["Accept-Encoding"]


@pytest.mark.parametrize("code", [500, 404, 410, 403])
async def test_error_statuses_name_the_status(server: Server, code: int) -> None:
    assert await refused(f"{server.base}/status/{code}") == f"HTTP {code}"


# --- redirects ---------------------------------------------------------------------------


async def test_redirects_are_followed_up_to_three_hops(server: Server) -> None:
    got = await fetch(f"{server.base}/r/3", allowed=LOOPBACK_ONLY)
    assert (got.status, got.body, got.url) == (200, FEED, f"{server.base}/r/0")
    # Locations: "2" (relative to /r/3), then an absolute URL, then "/r/0" (root-relative).
    assert server.paths == ["/r/3", "/r/2", "/r/1", "/r/0"]


async def test_a_fourth_redirect_is_refused(server: Server) -> None:
    assert await refused(f"{server.base}/r/4") == "too many redirects"
    assert server.paths == ["/r/4", "/r/3", "/r/2", "/r/1"]  # /r/0 never asked for


async def test_max_redirects_is_the_callers(server: Server) -> None:
    assert await refused(f"{server.base}/r/1", max_redirects=0) == "too many redirects"
    got = await fetch(f"{server.base}/r/1", allowed=LOOPBACK_ONLY, max_redirects=1)
    assert got.url == f"{server.base}/r/0"


async def test_the_validators_go_to_every_hop(server: Server) -> None:
    target = f"{server.base}/feed"
    got = await fetch(f"{server.base}/to?to={target}", allowed=LOOPBACK_ONLY, etag=ETAG)
    assert (got.status, got.body, got.url) == (304, None, target)
    assert [h.get("If-None-Match") for _, h in server.requests] == [ETAG, ETAG]


async def test_a_redirect_to_an_internal_address_is_refused_before_connecting(
    server: Server, internal: Listener
) -> None:
    target = f"http://127.0.0.2:{internal.port}/feed"
    reason = await refused(f"{server.base}/to?to={target}")
    assert reason == "redirect to a refused address: 127.0.0.2 is not a public address"
    assert internal.connections == 0


async def test_a_redirect_to_a_name_of_an_internal_address_is_refused_before_connecting(
    server: Server, internal: Listener, resolver: StubResolver
) -> None:
    resolver.set("mirror.example.com", ["127.0.0.2"])
    target = f"http://mirror.example.com:{internal.port}/feed"
    reason = await refused(f"{server.base}/to?to={target}")
    assert reason == (
        "redirect to a refused address: mirror.example.com resolves to a non-public address"
    )
    assert internal.connections == 0
    assert resolver.calls == ["mirror.example.com"]


async def test_a_redirect_to_cloud_metadata_is_refused(
    server: Server, resolver: StubResolver
) -> None:
    resolver.set("metadata.example.com", ["169.254.169.254"])
    reason = await refused(f"{server.base}/to?to=http://169.254.169.254/latest/meta-data/")
    assert reason == "redirect to a refused address: 169.254.169.254 is not a public address"
    reason = await refused(f"{server.base}/to?to=https://metadata.example.com/latest/")
    assert reason == (
        "redirect to a refused address: metadata.example.com resolves to a non-public address"
    )
    assert server.paths == [
        "/to?to=http://169.254.169.254/latest/meta-data/",
        "/to?to=https://metadata.example.com/latest/",
    ]


async def test_a_redirect_to_another_scheme_is_refused(server: Server) -> None:
    reason = await refused(f"{server.base}/to?to=file:///etc/passwd")
    assert reason.startswith("redirect to a refused address: ")


# --- the guard -------------------------------------------------------------------------


async def test_the_guard_refuses_internal_urls_before_connecting(
    server: Server, resolver: StubResolver
) -> None:
    resolver.set("intranet.example.com", ["10.0.0.5"])
    assert await refused(f"{server.base}/feed", allowed=[]) == ("127.0.0.1 is not a public address")
    assert await refused("http://intranet.example.com/feed", allowed=[]) == (
        "intranet.example.com resolves to a non-public address"
    )
    assert await refused(f"http://localhost:{server.port}/feed") == (
        "localhost is not a public host name"
    )
    assert await refused(f"http://user:secret@127.0.0.1:{server.port}/feed") == (
        "URLs must not contain credentials"
    )
    assert server.requests == []


async def test_names_connect_only_to_the_addresses_checked(
    server: Server, resolver: StubResolver
) -> None:
    resolver.set("feeds.example.com", ["127.0.0.1"])
    got = await fetch(f"http://feeds.example.com:{server.port}/feed", allowed=LOOPBACK_ONLY)
    assert got.body == FEED
    assert server.requests[0][1]["Host"] == f"feeds.example.com:{server.port}"
    # Looked up by the guard, then again by the connection (GuardedResolver).
    assert resolver.calls == ["feeds.example.com", "feeds.example.com"]


async def test_a_name_that_changes_its_answer_after_the_check_is_refused(
    server: Server, resolver: StubResolver
) -> None:
    """DNS rebinding: public-looking (allowed) for the check, internal for the connect."""
    resolver.set("rebind.example.com", ["127.0.0.1"], ["169.254.169.254"])
    reason = await refused(f"http://rebind.example.com:{server.port}/feed")
    assert reason == "rebind.example.com resolves to a non-public address"
    assert server.requests == []


async def test_http_is_accepted_for_feeds_but_still_not_for_webhooks() -> None:
    async def public(host: str, port: int) -> list[Any]:
        return [ipaddress.ip_address("93.184.216.34")]

    url = "http://blog.example.com/feed/"
    target = await urlguard.check_url(url, [], public, https_only=False)
    assert (target.scheme, target.host, target.port) == ("http", "blog.example.com", 80)
    await urlguard.check_url("http://93.184.216.34/feed", [], public, https_only=False)
    with pytest.raises(urlguard.UnsafeUrl, match="webhook URLs must use https"):
        await urlguard.check_url(url, [], public)
    with pytest.raises(urlguard.UnsafeUrl, match="not a public address"):
        await urlguard.check_url("http://10.0.0.1/feed", [], public, https_only=False)
    with pytest.raises(urlguard.UnsafeUrl, match="must not contain credentials"):
        await urlguard.check_url("http://a:b@blog.example.com/", [], public, https_only=False)


# --- limits --------------------------------------------------------------------------------


async def test_a_slow_server_times_out(server: Server) -> None:
    started = time.monotonic()
    assert await refused(f"{server.base}/slow", timeout_s=0.5) == "timed out after 0.5 s"
    assert time.monotonic() - started < 4


async def test_the_deadline_covers_the_body(server: Server) -> None:
    started = time.monotonic()
    assert await refused(f"{server.base}/trickle", timeout_s=0.5) == "timed out after 0.5 s"
    assert time.monotonic() - started < 4


async def test_the_deadline_covers_all_redirects(server: Server) -> None:
    # Three hops of 0.3 s each: every request is quicker than the deadline, the fetch is not.
    assert await refused(f"{server.base}/slow-r/2", timeout_s=0.7) == "timed out after 0.7 s"
    assert len(server.requests) in (2, 3)


async def test_a_body_over_the_limit_is_refused(server: Server) -> None:
    assert await refused(f"{server.base}/big", limit_bytes=4096) == "larger than 4 KB"
    got = await fetch(f"{server.base}/big", allowed=LOOPBACK_ONLY, limit_bytes=10 * 1024)
    assert got.body == b"x" * 10 * 1024


async def test_the_limit_counts_decoded_bytes(server: Server) -> None:
    reason = await refused(f"{server.base}/zeros/1024", limit_bytes=64 * 1024)
    assert reason == "larger than 64 KB"
    assert await refused(f"{server.base}/big", limit_bytes=1000) == "larger than 1000 bytes"


async def test_the_default_limit_is_2_mb(server: Server) -> None:
    got = await fetch(f"{server.base}/zeros/2048", allowed=LOOPBACK_ONLY)
    assert got.body == b"\0" * (2 * 1024 * 1024)
    assert await refused(f"{server.base}/zeros/2049") == "larger than 2 MB"


async def test_a_refused_connection_names_no_address() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    reason = await refused(f"http://127.0.0.1:{port}/feed")
    assert reason == "could not connect: Connection refused"
