"""A blog on 127.0.0.1 for the RSS tests: serves an RSS 2.0 (WordPress-shaped) or Atom feed
built from the posts the test adds, answers conditional GETs (ETag, Last-Modified) with 304,
and can fail, redirect or stall on demand. Counts what it was asked."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

from aiohttp import web

BASE = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)


@dataclass
class Post:
    n: int
    title: str
    body: str

    @property
    def published(self) -> datetime:
        return BASE + timedelta(hours=self.n)


@dataclass
class Blog:
    kind: str = "rss"  # or "atom"
    posts: list[Post] = field(default_factory=list)
    status: int = 200  # answered instead of the feed when not 200
    redirect_to: str | None = None
    stall: asyncio.Event | None = None  # when set: each request waits for it
    requests: list[dict[str, str]] = field(default_factory=list)
    runner: Any = None
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/feed/"

    def add(self, title: str, body: str = "<p>Hello</p>") -> Post:
        post = Post(len(self.posts) + 1, title, body)
        self.posts.append(post)
        return post

    def document(self) -> str:
        newest = sorted(self.posts, key=lambda p: p.n, reverse=True)
        return _atom(newest) if self.kind == "atom" else _rss(newest)

    def etag(self) -> str:
        return '"' + hashlib.sha256(self.document().encode()).hexdigest()[:16] + '"'

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(dict(request.headers))
        if self.stall is not None:
            await self.stall.wait()
        if self.redirect_to:
            raise web.HTTPFound(self.redirect_to)
        if self.status != 200:
            return web.Response(status=self.status, text="no")
        tag = self.etag()
        if request.headers.get("If-None-Match") == tag:
            return web.Response(status=304, headers={"ETag": tag})
        kind = "application/atom+xml" if self.kind == "atom" else "application/rss+xml"
        return web.Response(
            body=self.document().encode(),
            headers={"ETag": tag, "Content-Type": f"{kind}; charset=UTF-8"},
        )

    async def __aenter__(self) -> Blog:
        app = web.Application()
        app.router.add_get("/feed/", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self.stall is not None:
            self.stall.set()
        await self.runner.cleanup()


def _rss(posts: list[Post]) -> str:
    items = "".join(
        f"""
    <item>
      <title>{p.title}</title>
      <link>https://blog.example.com/{p.n}/</link>
      <dc:creator><![CDATA[Ada]]></dc:creator>
      <pubDate>{format_datetime(p.published)}</pubDate>
      <guid isPermaLink="false">https://blog.example.com/?p={p.n}</guid>
      <description><![CDATA[Summary of {p.title}]]></description>
      <content:encoded><![CDATA[{p.body}]]></content:encoded>
    </item>"""
        for p in posts
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/"
  xmlns:dc="http://purl.org/dc/elements/1.1/">
  <channel>
    <title>The Example Blog</title>
    <link>https://blog.example.com</link>
    <description>Posts</description>{items}
  </channel>
</rss>"""


def _atom(posts: list[Post]) -> str:
    entries = "".join(
        f"""
  <entry>
    <title>{p.title}</title>
    <link rel="alternate" href="https://blog.example.com/{p.n}/"/>
    <id>tag:blog.example.com,2026:{p.n}</id>
    <updated>{p.published.isoformat()}</updated>
    <author><name>Ada</name></author>
    <content type="html"><![CDATA[{p.body}]]></content>
  </entry>"""
        for p in posts
    )
    return f"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>The Example Blog</title>
  <link href="https://blog.example.com/"/>
  <updated>{BASE.isoformat()}</updated>
  <id>tag:blog.example.com,2026:feed</id>{entries}
</feed>"""
