"""A tiny authoritative DNS server on 127.0.0.1 for `check_domains` tests (dnslib + asyncio UDP).

Zones are a dict: domain -> {"MX": ["10 mx.host"], "A": [...], "AAAA": [...]}; a domain not in
the dict answers NXDOMAIN; `"slow": True` never answers (a timeout).
"""

from __future__ import annotations

import asyncio
from typing import Any

from dnslib import AAAA, MX, QTYPE, RCODE, RR, A, DNSRecord


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, zones: dict[str, dict[str, Any]]) -> None:
        self.zones = zones
        self.queries: list[tuple[str, str]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        request = DNSRecord.parse(data)
        name = str(request.q.qname).rstrip(".").lower()
        qtype = QTYPE[request.q.qtype]
        self.queries.append((name, qtype))
        zone = self.zones.get(name)
        reply = request.reply()
        if zone is None:
            reply.header.rcode = RCODE.NXDOMAIN
        elif zone.get("slow"):
            return
        else:
            for value in zone.get(qtype, []):
                if qtype == "MX":  # "preference host", e.g. "10 mx.good.io" or "0 ." (null MX)
                    preference, _, host = value.partition(" ")
                    rdata = MX(host or preference, int(preference) if host else 10)
                    reply.add_answer(RR(name, QTYPE.MX, rdata=rdata, ttl=60))
                elif qtype == "A":
                    reply.add_answer(RR(name, QTYPE.A, rdata=A(value), ttl=60))
                elif qtype == "AAAA":
                    reply.add_answer(RR(name, QTYPE.AAAA, rdata=AAAA(value), ttl=60))
        self.transport.sendto(reply.pack(), addr)  # type: ignore[attr-defined]


class DnsServer:
    def __init__(self, zones: dict[str, dict[str, Any]]) -> None:
        self.zones = zones

    async def __aenter__(self) -> DnsServer:
        loop = asyncio.get_running_loop()
        self.transport, self.protocol = await loop.create_datagram_endpoint(
            lambda: _Protocol(self.zones), local_addr=("127.0.0.1", 0)
        )
        self.port = self.transport.get_extra_info("sockname")[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.transport.close()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"
