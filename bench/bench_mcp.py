"""MCP over streamable HTTP against a real uvicorn server: tools/list and tool-call latency, and
what the MCP layer adds over the same operation called as plain REST."""

from __future__ import annotations

import asyncio
import socket
import time

import httpx
import httpx2
import uvicorn
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench.common import BenchContext, peak_rss_mb, percentiles, report

CALLS = 200


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def run(ctx: BenchContext) -> None:
    async with ctx.fresh_app() as bench:
        port = _free_port()
        server = uvicorn.Server(
            uvicorn.Config(bench.app, host="127.0.0.1", port=port, log_level="warning")
        )
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.02)
        url = f"http://127.0.0.1:{port}"
        try:
            async with (
                httpx2.AsyncClient(headers=bench.headers, timeout=60) as http,
                streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                list_ms = []
                for _ in range(20):
                    start = time.perf_counter()
                    tools = (await session.list_tools()).tools
                    list_ms.append((time.perf_counter() - start) * 1000)
                write_ms, read_ms = [], []
                for number in range(CALLS):
                    start = time.perf_counter()
                    made = await session.call_tool(
                        "create_contact", {"email": f"agent{number}@bench-mail.org"}
                    )
                    write_ms.append((time.perf_counter() - start) * 1000)
                    assert not made.is_error
                    start = time.perf_counter()
                    listed = await session.call_tool("list_contacts", {"limit": 20})
                    read_ms.append((time.perf_counter() - start) * 1000)
                    assert not listed.is_error
            rest_ms = []
            async with httpx.AsyncClient(base_url=url, headers=bench.headers) as rest:
                for _ in range(CALLS):
                    start = time.perf_counter()
                    answer = await rest.get("/api/v1/contacts", params={"limit": 20})
                    rest_ms.append((time.perf_counter() - start) * 1000)
                    assert answer.status_code == 200
        finally:
            server.should_exit = True
            await task
        listing = percentiles(list_ms)
        report(
            "mcp tools/list",
            ctx.backend,
            tools=len(tools),
            p50_ms=listing["p50"],
            p99_ms=listing["p99"],
        )
        for name, samples in (
            ("mcp call create_contact", write_ms),
            ("mcp call list_contacts", read_ms),
            ("REST GET /contacts (same server)", rest_ms),
        ):
            figures = percentiles(samples)
            report(
                name,
                ctx.backend,
                calls=len(samples),
                p50_ms=figures["p50"],
                p99_ms=figures["p99"],
                calls_per_s=len(samples) / (sum(samples) / 1000),
            )
        report("mcp", ctx.backend, peak_rss_mb=peak_rss_mb())
