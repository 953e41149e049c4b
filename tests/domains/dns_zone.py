"""An authoritative DNS server on 127.0.0.1 (UDP, dnslib) for the sending-domain tests: TXT
records (several strings each, as published), CNAMEs (followed for other types, as a
resolver's answer carries the chain), SERVFAIL, silence (a timeout), and answers held back
until the test lets them go.

`zones` maps a name to {"TXT": [value, ...], "CNAME": "target", "A": [ip, ...],
"PTR": [name, ...], "servfail": True, "slow": True}; a TXT value is a string or a list of strings (one record split into several
character-strings). A name not in `zones` is NXDOMAIN; a name without the asked type answers
NOERROR with no records. The dict is read at every query: tests change records in place.
"""

from __future__ import annotations

import asyncio
from typing import Any

from dnslib import CNAME, PTR, QTYPE, RCODE, RR, TXT, A, DNSRecord


def _split(value: str) -> list[str]:
    return [value[i : i + 255] for i in range(0, len(value), 255)] or [""]


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, server: DnsZone) -> None:
        self.server = server

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        request = DNSRecord.parse(data)
        name = str(request.q.qname).rstrip(".").lower()
        qtype = QTYPE[request.q.qtype]
        self.server.queries.append((name, qtype))
        task = asyncio.ensure_future(self._answer(request, name, qtype, addr))
        self.server.tasks.add(task)
        task.add_done_callback(self.server.tasks.discard)

    async def _answer(self, request: DNSRecord, name: str, qtype: str, addr: Any) -> None:
        zone = self.server.zones.get(name)
        if zone is not None and zone.get("slow"):
            return  # never answers: the resolver times out
        if self.server.held is not None:
            self.server.waiting.set()
            await self.server.held.wait()
        reply = request.reply()
        if zone is None:
            reply.header.rcode = RCODE.NXDOMAIN
        elif zone.get("servfail"):
            reply.header.rcode = RCODE.SERVFAIL
        else:
            self._add(reply, name, zone, qtype, hops=0)
        self.transport.sendto(reply.pack(), addr)  # type: ignore[attr-defined]

    def _add(
        self, reply: DNSRecord, name: str, zone: dict[str, Any], qtype: str, hops: int
    ) -> None:
        target = zone.get("CNAME")
        if target and qtype != "CNAME" and hops < 8:
            reply.add_answer(RR(name, QTYPE.CNAME, rdata=CNAME(target), ttl=60))
            follow = self.server.zones.get(target.rstrip(".").lower())
            if follow is not None:
                self._add(reply, target.rstrip(".").lower(), follow, qtype, hops + 1)
            return
        if qtype == "CNAME" and target:
            reply.add_answer(RR(name, QTYPE.CNAME, rdata=CNAME(target), ttl=60))
        elif qtype == "TXT":
            for value in zone.get("TXT", []):
                # One character-string holds 255 bytes: a longer value is split, as DNS
                # consoles do when publishing a DKIM key.
                strings = _split(value) if isinstance(value, str) else list(value)
                rdata = TXT([s.encode() for s in strings])
                reply.add_answer(RR(name, QTYPE.TXT, rdata=rdata, ttl=60))
        elif qtype == "A":
            for value in zone.get("A", []):
                reply.add_answer(RR(name, QTYPE.A, rdata=A(value), ttl=60))
        elif qtype == "PTR":
            for value in zone.get("PTR", []):
                reply.add_answer(RR(name, QTYPE.PTR, rdata=PTR(value), ttl=60))


class DnsZone:
    def __init__(self, zones: dict[str, dict[str, Any]] | None = None) -> None:
        self.zones: dict[str, dict[str, Any]] = zones if zones is not None else {}
        self.queries: list[tuple[str, str]] = []
        self.tasks: set[asyncio.Future[None]] = set()
        self.held: asyncio.Event | None = None
        self.waiting = asyncio.Event()

    async def __aenter__(self) -> DnsZone:
        loop = asyncio.get_running_loop()
        self.transport, _ = await loop.create_datagram_endpoint(
            lambda: _Protocol(self), local_addr=("127.0.0.1", 0)
        )
        self.port = self.transport.get_extra_info("sockname")[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()
        self.transport.close()
        for task in list(self.tasks):
            task.cancel()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def hold(self) -> None:
        """Answer nothing until `release()`; `waiting` is set once a query is held."""
        self.held = asyncio.Event()
        self.waiting = asyncio.Event()

    def release(self) -> None:
        if self.held is not None:
            self.held.set()
            self.held = None

    def txt(self, host: str, *values: str | list[str]) -> None:
        self.zones.setdefault(host.lower(), {})["TXT"] = list(values)

    def cname(self, host: str, target: str) -> None:
        self.zones.setdefault(host.lower(), {})["CNAME"] = target

    def address_of(self, host: str, *ips: str) -> None:
        self.zones.setdefault(host.lower(), {})["A"] = list(ips)

    def reverse(self, ip: str, *names: str) -> None:
        """PTR records of an IPv4 address (at <d>.<c>.<b>.<a>.in-addr.arpa)."""
        host = ".".join(reversed(ip.split("."))) + ".in-addr.arpa"
        self.zones.setdefault(host, {})["PTR"] = list(names)

    def remove(self, host: str) -> None:
        self.zones.pop(host.lower(), None)
