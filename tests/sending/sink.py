"""An SMTP sink on 127.0.0.1 (aiosmtpd) that records what it receives, for tests and benches.

`answers` picks a reply by recipient: a recipient whose local part starts with `bounce` is
refused `550 5.1.1 No such user`, `defer` gets `451 4.3.0 Try again later`; every other one is
accepted. Run it in the test's event loop (`async with Sink() as sink`), or in a thread of its
own with `Sink.threaded()` when another process sends to it. Each message keeps the envelope,
the client's EHLO name and its MAIL options; `Sink(smtputf8=True)` offers SMTPUTF8.
"""

from __future__ import annotations

import asyncio
import email
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from email import policy
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session


def default_answer(recipient: str) -> str | None:
    local = recipient.split("@", 1)[0]
    if local.startswith("bounce"):
        return "550 5.1.1 No such user"
    if local.startswith("defer"):
        return "451 4.3.0 Try again later"
    return None


@dataclass
class Received:
    sender: str
    recipients: list[str]
    data: bytes
    helo: str = ""  # the name the client gave in EHLO / HELO
    mail_options: list[str] = field(default_factory=list)  # MAIL FROM's, e.g. SMTPUTF8

    def parsed(self) -> Any:
        return email.message_from_bytes(self.data, policy=policy.default)

    @property
    def message_id(self) -> str:
        return str(self.parsed()["Message-ID"])


@dataclass
class _Handler:
    answer: Callable[[str], str | None]
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_RCPT(
        self, server: Any, session: Session, envelope: Envelope, address: str, options: Any
    ) -> str:
        refusal = self.answer(address)
        if refusal:
            return refusal
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Session, envelope: Envelope) -> str:
        data = envelope.original_content or b""
        with self.lock:
            self.received.append(
                Received(
                    str(envelope.mail_from),
                    list(envelope.rcpt_tos),
                    bytes(data),
                    str(session.host_name or ""),
                    list(envelope.mail_options or []),
                )
            )
        return "250 2.0.0 Queued"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Sink:
    def __init__(
        self, answer: Callable[[str], str | None] = default_answer, *, smtputf8: bool = False
    ) -> None:
        self.handler = _Handler(answer)
        self.smtputf8 = smtputf8
        self.port = _free_port()
        self._server: asyncio.AbstractServer | None = None
        self._sessions: list[SMTP] = []

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}?starttls=never"

    @property
    def received(self) -> list[Received]:
        with self.handler.lock:
            return list(self.handler.received)

    def _protocol(self) -> SMTP:
        session = SMTP(
            self.handler,
            hostname="sink.test",
            decode_data=False,
            data_size_limit=None,
            enable_SMTPUTF8=self.smtputf8,
        )
        self._sessions.append(session)
        return session

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._protocol, "127.0.0.1", self.port)

    async def stop(self) -> None:
        """Stop listening and drop every open connection (a relay going away)."""
        if self._server is not None:
            self._server.close()
            for session in self._sessions:
                if session.transport is not None:
                    session.transport.close()
            self._sessions.clear()
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> Sink:
        await self.start()
        return self

    async def __aexit__(self, *_: Any) -> None:
        await self.stop()

    @classmethod
    def threaded(cls, answer: Callable[[str], str | None] = default_answer) -> ThreadedSink:
        return ThreadedSink(cls(answer))


class ThreadedSink:
    """The sink in its own thread and event loop (for a worker in another process)."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def __enter__(self) -> Sink:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.sink.start(), self._loop).result(10)
        return self.sink

    def __exit__(self, *_: Any) -> None:
        asyncio.run_coroutine_threadsafe(self.sink.stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
