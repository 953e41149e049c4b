"""The listener's limits, over real SMTP on 127.0.0.x: a message past `bounce_max_bytes` is
answered 552 and changes nothing (one within it still acts, also with a line longer than SMTP
allows); a client past its connections, or anyone past the total, is answered 421 and
disconnected, and let in again once a connection closes; a silent client, or one that takes
too long over its message, is disconnected after `bounce_idle_timeout`."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import aiosmtplib
import pytest

from mailroom.bounces import listener
from tests.bounces.fixtures import report
from tests.bounces.test_listener import JANE, _contact, _send
from tests.sending.helpers import events_of

DEADLINE = 10.0


@asynccontextmanager
async def _listening(db, settings, **limits) -> AsyncIterator[int]:
    """A listener with these `bounce_*` settings on a free port of 127.0.0.1."""
    for name, value in limits.items():
        setattr(settings, f"bounce_{name}", value)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server, _handler = await listener.start(db, settings, f"127.0.0.1:{port}")
    try:
        yield port
    finally:
        server.close()
        await server.wait_closed()


class Client:
    """A raw SMTP client from a given loopback address (127.0.0.x are distinct clients)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, port: int, source: str = "127.0.0.1") -> Client:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
        return cls(reader, writer)

    async def line(self) -> str:
        return (await asyncio.wait_for(self.reader.readline(), DEADLINE)).decode()

    async def closed(self) -> bool:
        """Whether the server ends the connection (EOF) within the deadline."""
        try:
            while await asyncio.wait_for(self.reader.read(65536), DEADLINE):
                pass
        except TimeoutError:
            return False
        except ConnectionError:
            pass
        return True

    async def say(self, command: str) -> str:
        self.writer.write(command.encode() + b"\r\n")
        await self.writer.drain()
        while (answer := await self.line())[3:4] == "-":
            pass
        return answer

    def close(self) -> None:
        self.writer.close()


async def _deliver(port: int, to: str, data: bytes) -> aiosmtplib.SMTPResponse:
    async with aiosmtplib.SMTP(hostname="127.0.0.1", port=port, start_tls=False) as smtp:
        await smtp.mail("")
        await smtp.rcpt(to)
        return await smtp.data(data)


def _padded(data: bytes, size: int) -> bytes:
    """The report with an epilogue of ordinary 76-character lines, `size` bytes in all."""
    filler = b"\r\n".join([b"x" * 76] * (size // 78 + 1))
    return (data + b"\r\n" + filler)[:size]


async def test_a_message_past_the_size_limit_is_refused_552_and_changes_nothing(
    client, db, ws, sink, driver, settings
):
    _campaign, sent = await _send(client, db, ws, driver, sink)
    return_path, message_id = sent[JANE]
    data = report("postfix_hard", return_path=return_path, recipient=JANE, message_id=message_id)
    async with _listening(db, settings, max_bytes=20_000) as port:
        with pytest.raises(aiosmtplib.SMTPDataError) as refused:
            await _deliver(port, return_path, _padded(data, 30_000))
        assert refused.value.code == 552
        assert (await _contact(client, ws))["status"] == "subscribed"
        assert await events_of(db, ws.workspace_id, "email.bounced") == []

        # Within the limit, and with a line longer than SMTP's 1,000 characters: acted on.
        long_line = b"\r\nX-Note: " + b"y" * 5_000
        within = data.replace(b"\r\n\r\n", long_line + b"\r\n\r\n", 1)
        answer = await _deliver(port, return_path, _padded(within, 19_000))
        assert answer.code == 250
        assert (await _contact(client, ws))["status"] == "bounced"


async def test_the_size_limit_is_advertised_and_a_declared_size_past_it_is_refused(db, settings):
    async with _listening(db, settings, max_bytes=20_000) as port:
        smtp = await Client.connect(port)
        try:
            assert (await smtp.line()).startswith("220 ")
            smtp.writer.write(b"EHLO client.example\r\n")
            extensions = []
            while (line := await smtp.line())[3:4] == "-":
                extensions.append(line[4:].strip())
            assert "SIZE 20000" in extensions
            assert (await smtp.say("MAIL FROM:<> SIZE=20001")).startswith("552 ")
            assert (await smtp.say("MAIL FROM:<> SIZE=20000")).startswith("250 ")
        finally:
            smtp.close()


async def test_a_client_past_its_connections_is_answered_421(db, settings):
    async with (
        _listening(db, settings, max_connections=10, max_connections_per_client=2) as port,
        AsyncExitStack() as stack,
    ):
        first = [await Client.connect(port) for _ in range(2)]
        for smtp in first:
            stack.callback(smtp.close)
            assert (await smtp.line()).startswith("220 ")

        third = await Client.connect(port)
        stack.callback(third.close)
        assert (await third.line()).startswith("421 ")
        assert await third.closed()

        # Another client address is let in meanwhile.
        other = await Client.connect(port, source="127.0.0.2")
        stack.callback(other.close)
        assert (await other.line()).startswith("220 ")

        # Once one of the first two ends, the client is let in again.
        assert (await first[0].say("QUIT")).startswith("221 ")
        assert await first[0].closed()
        deadline = time.monotonic() + DEADLINE
        while True:
            again = await Client.connect(port)
            stack.callback(again.close)
            greeting = await again.line()
            if greeting.startswith("220 "):
                break
            assert time.monotonic() < deadline, greeting
            await asyncio.sleep(0.05)
        assert (await again.say("NOOP")).startswith("250 ")


async def test_connections_past_the_total_are_answered_421(db, settings):
    async with (
        _listening(db, settings, max_connections=3, max_connections_per_client=2) as port,
        AsyncExitStack() as stack,
    ):
        for source in ("127.0.0.1", "127.0.0.1", "127.0.0.2"):
            smtp = await Client.connect(port, source)
            stack.callback(smtp.close)
            assert (await smtp.line()).startswith("220 ")
        late = await Client.connect(port, source="127.0.0.3")
        stack.callback(late.close)
        assert (await late.line()).startswith("421 ")
        assert await late.closed()


async def test_an_idle_client_is_disconnected_after_the_timeout(db, settings):
    async with _listening(db, settings, idle_timeout=1.0) as port:
        silent = await Client.connect(port)
        try:
            assert (await silent.line()).startswith("220 ")
            began = time.monotonic()
            assert await silent.closed()
            assert time.monotonic() - began < DEADLINE
        finally:
            silent.close()

        # A message that never ends: DATA and its message are one command's time.
        slow = await Client.connect(port)
        try:
            assert (await slow.line()).startswith("220 ")
            assert (await slow.say("HELO client.example")).startswith("250 ")
            assert (await slow.say("MAIL FROM:<>")).startswith("250 ")
            assert (await slow.say("RCPT TO:<bounces@shop.example>")).startswith("250 ")
            assert (await slow.say("DATA")).startswith("354 ")
            slow.writer.write(b"Subject: part of a report\r\n\r\nand no end\r\n")
            await slow.writer.drain()
            assert await slow.closed()
        finally:
            slow.close()
