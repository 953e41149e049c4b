"""Where built messages go: a pool of persistent SMTP connections, or the file outbox.

`MAILROOM_SMTP_URL` picks: `smtp://user:pass@host:587` (STARTTLS when the server offers it;
`?starttls=require` insists, `?starttls=never` never tries), `smtps://host:465` (TLS from the
first byte), `?verify=false` for a relay with a self-signed certificate, `max_connections`,
`max_per_second` and `weight` per relay; several relays separated by commas (`relays`). Unset: every message
is written to `<data dir>/outbox/*.eml` (inspectable; `make run` can send at once).

A result is the relay's answer to that one message: 250 sent, 4xx try later, 5xx refused (a
hard bounce when it names the recipient), 0 no answer (connection trouble, try later), 1
unsendable (failed).
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

import aiosmtplib

from mailroom.core import metrics

log = logging.getLogger("mailroom.sending")

NO_ANSWER = 0
UNSENDABLE = 1  # cannot be sent this way at all (failed, not a bounce)


@dataclass(frozen=True)
class Delivery:
    key: str  # the send-log row id
    sender: str  # envelope sender (VERP return path)
    recipient: str
    data: bytes  # the whole message, CRLF line ends, DKIM-signed


@dataclass(frozen=True)
class Result:
    key: str
    code: int
    text: str
    # The refusal named the recipient (RCPT): a 5xx then is a hard bounce. A 5xx to the
    # sender or the message is this message's failure, not the address's.
    at_recipient: bool = False

    @property
    def sent(self) -> bool:
        return 200 <= self.code < 300

    @property
    def bounced(self) -> bool:
        """The relay refused the recipient for good (5xx to RCPT)."""
        return self.at_recipient and 500 <= self.code < 600

    @property
    def detail(self) -> str:
        """What the send log records: the relay's code and text, or only why when no relay
        answered (no answer, unsendable)."""
        return f"{self.code} {self.text}".strip() if self.code >= 100 else self.text

    @property
    def failed(self) -> bool:
        """Refused for good, but not because of the address: do not try again."""
        return self.code == UNSENDABLE or (not self.at_recipient and 500 <= self.code < 600)


class Transport(Protocol):
    async def send(self, deliveries: Sequence[Delivery]) -> list[Result]: ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class SmtpTarget:
    host: str
    port: int
    username: str | None
    password: str | None
    implicit_tls: bool
    starttls: bool | None  # None: when offered
    verify: bool
    max_connections: int | None = None  # None: MAILROOM_SMTP_CONNECTIONS
    max_per_second: float | None = None  # None: as fast as it takes them
    weight: int = 1  # its share of the mail among several relays (sending.relays)


def relay_urls(value: str) -> list[str]:
    """The relays MAILROOM_SMTP_URL lists: one URL, or several separated by commas."""
    return [part.strip() for part in value.split(",") if part.strip()]


def _number(options: dict[str, str], name: str, kind: type, least: float) -> Any:
    if name not in options:
        return None
    try:
        value = kind(options[name])
    except ValueError:
        value = None
    if value is None or value < least or value != value:
        raise ValueError(f"MAILROOM_SMTP_URL: {name} must be a number of at least {least:g}")
    return value


def parse_smtp_url(url: str) -> SmtpTarget:
    parts = urlsplit(url)
    if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
        raise ValueError("MAILROOM_SMTP_URL must look like smtp://user:pass@host:port")
    options = {k: v[-1].lower() for k, v in parse_qs(parts.query).items()}
    starttls = {"require": True, "never": False}.get(options.get("starttls", "auto"))
    implicit = parts.scheme == "smtps"
    return SmtpTarget(
        host=parts.hostname,
        port=parts.port or (465 if implicit else 25),
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        implicit_tls=implicit,
        starttls=False if implicit else starttls,
        verify=options.get("verify", "true") not in ("false", "0", "no"),
        max_connections=_number(options, "max_connections", int, 1),
        max_per_second=_number(options, "max_per_second", float, 0.01),
        weight=_number(options, "weight", int, 1) or 1,
    )


class SmtpPool:
    """Up to `size` persistent connections, each sending one message at a time; a batch is
    spread over them. A connection that fails is dropped and opened again for the next
    message; the message it was sending gets no answer (tried again later, never lost)."""

    def __init__(
        self, url: str, size: int = 8, timeout: float = 30.0, helo: str = "localhost"
    ) -> None:
        self.target = parse_smtp_url(url)
        self.size = max(1, size)
        self.timeout = timeout
        self.helo = helo
        self._idle: asyncio.Queue[aiosmtplib.SMTP | None] = asyncio.Queue()
        for _ in range(self.size):
            self._idle.put_nowait(None)  # a slot; connected on first use
        # What this pool added to the open-connections gauge: a process has two pools (bulk
        # and express), so each moves the gauge by its own change rather than setting it.
        self._counted = 0
        # `max_per_second`: each message waits for its slot (no connection or transaction
        # is held meanwhile, only the batch).
        self._interval = 1.0 / self.target.max_per_second if self.target.max_per_second else 0.0
        self._next_slot = 0.0

    def _client(self) -> aiosmtplib.SMTP:
        target = self.target
        context = ssl.create_default_context()
        if not target.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return aiosmtplib.SMTP(
            hostname=target.host,
            port=target.port,
            username=target.username,
            password=target.password,
            use_tls=target.implicit_tls,
            start_tls=target.starttls,
            tls_context=context,
            timeout=self.timeout,
            local_hostname=self.helo,
        )

    async def _slot(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        slot = max(now, self._next_slot)
        self._next_slot = slot + self._interval
        if slot > now:
            await asyncio.sleep(slot - now)

    async def _send_one(self, delivery: Delivery) -> Result:
        if self._interval:
            await self._slot()
        client = await self._idle.get()
        try:
            if client is None or not client.is_connected:
                client = self._client()
                try:
                    await client.connect()
                except BaseException:
                    metrics.SMTP_CONNECTIONS.labels("failed").inc()
                    raise
                metrics.SMTP_CONNECTIONS.labels("opened").inc()
            if client.is_ehlo_or_helo_needed:
                # Now, not at MAIL: the relay's extensions decide the MAIL options below.
                await greet(client)
            # MAIL, RCPT, DATA written here rather than by `sendmail` or `mail`/`rcpt`, which
            # parse each address with `email.utils` (a fifth of the worker's CPU). The
            # addresses are ours, already validated (`addresses.wire`).
            needs = needs_smtputf8(delivery)
            utf8 = needs is not None
            if needs is not None and not client.supports_extension("smtputf8"):
                return Result(delivery.key, UNSENDABLE, _NO_SMTPUTF8.format(needs))
            options = ["SMTPUTF8"] if utf8 else []
            encoding = "utf-8" if utf8 else "ascii"
            # A relay that offers DSN (RFC 3461) reports success as well as failure to the
            # return path (`email.delivered`), with only the headers quoted back.
            dsn = client.supports_extension("dsn")
            if dsn:
                options.append("RET=HDRS")
            await _mail(client, delivery.sender, options, encoding)
            try:
                await _rcpt(
                    client, delivery.recipient, ["NOTIFY=SUCCESS,FAILURE"] if dsn else [], encoding
                )
            except aiosmtplib.SMTPRecipientRefused as refused:
                await _reset(client)
                return Result(delivery.key, refused.code, refused.message, at_recipient=True)
            answer = await _data(client, delivery.data, self.timeout)
            return Result(delivery.key, answer.code, answer.message)
        except aiosmtplib.SMTPResponseException as problem:
            # Refused sender, recipient or message: the session is mid-transaction.
            await _reset(client)
            return Result(delivery.key, problem.code, problem.message)
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as trouble:
            await _drop(client)
            client = None
            return Result(delivery.key, NO_ANSWER, f"{type(trouble).__name__}: {trouble}"[:500])
        finally:
            self._idle.put_nowait(client)

    async def send(self, deliveries: Sequence[Delivery]) -> list[Result]:
        results = list(await asyncio.gather(*(self._send_one(d) for d in deliveries)))
        self._count_open(self._open())
        return results

    def _open(self) -> int:
        """Connections open now (of those idle: between batches, all of them)."""
        idle: Any = self._idle
        return sum(1 for c in list(idle._queue) if c is not None and c.is_connected)

    async def close(self) -> None:
        while not self._idle.empty():
            await quit_politely(self._idle.get_nowait())
        for _ in range(self.size):
            self._idle.put_nowait(None)
        self._count_open(0)

    def _count_open(self, now_open: int) -> None:
        if now_open != self._counted:
            metrics.SMTP_OPEN.inc(now_open - self._counted)
            self._counted = now_open


_NO_SMTPUTF8 = (
    "not sent: {} has a non-ASCII local part, which only a relay offering SMTPUTF8 can take, "
    "and the relay does not offer it"
)


def needs_smtputf8(delivery: Delivery) -> str | None:
    """What makes the message need SMTPUTF8 (RFC 6531), or None: an envelope address, or an
    address in its header, with a non-ASCII local part (domains are IDNA by now, names
    encoded words, so nothing else in a header is 8-bit)."""
    if not delivery.recipient.isascii():
        return delivery.recipient
    if not delivery.sender.isascii():
        return delivery.sender
    end = delivery.data.find(b"\r\n\r\n")
    if not delivery.data[: end if end >= 0 else len(delivery.data)].isascii():
        return "an address in its header"
    return None


async def greet(client: aiosmtplib.SMTP) -> None:
    """EHLO, or HELO from a relay that refuses EHLO (as aiosmtplib would do at MAIL)."""
    try:
        await client.ehlo()
    except aiosmtplib.SMTPHeloError:
        if not client.is_connected:
            raise
        await client.helo()


def _wire_form(message: bytes) -> bytes | None:
    """The DATA payload: dot-stuffed, ending `CRLF . CRLF`; None unless every line ends in
    CRLF (then aiosmtplib normalises it). Plain `bytes.replace`, not aiosmtplib's two regex
    passes: those cost a third of the engine's own CPU per 25 KB message."""
    pairs = message.count(b"\r\n")  # counts: no copy of the message, unlike a replace
    if message.count(b"\n") != pairs or message.count(b"\r") != pairs:
        return None
    stuffed = message.replace(b"\r\n.", b"\r\n..") if b"\r\n." in message else message
    if stuffed.startswith(b"."):
        stuffed = b"." + stuffed
    if not stuffed.endswith(b"\r\n"):
        stuffed += b"\r\n"
    return stuffed + b".\r\n"


def _command_address(address: str, encoding: str) -> bytes:
    """`<address>` for MAIL or RCPT; a line break in it (never in a validated address) is
    refused rather than written into the session."""
    if "\r" in address or "\n" in address or "<" in address or ">" in address:
        raise aiosmtplib.SMTPResponseException(UNSENDABLE, f"not an address: {address!r}")
    return b"<" + address.encode(encoding) + b">"


async def _mail(client: aiosmtplib.SMTP, sender: str, options: list[str], encoding: str) -> None:
    response = await client.execute_command(
        b"MAIL", b"FROM:" + _command_address(sender, encoding), *(o.encode() for o in options)
    )
    if response.code != 250:
        raise aiosmtplib.SMTPSenderRefused(response.code, response.message, sender)


async def _rcpt(client: aiosmtplib.SMTP, recipient: str, options: list[str], encoding: str) -> None:
    response = await client.execute_command(
        b"RCPT", b"TO:" + _command_address(recipient, encoding), *(o.encode() for o in options)
    )
    if response.code not in (250, 251):
        raise aiosmtplib.SMTPRecipientRefused(response.code, response.message, recipient)


async def _data(client: aiosmtplib.SMTP, message: bytes, seconds: float) -> Any:
    """DATA with the message sent as built (see `_wire_form`), through the connection's
    protocol as aiosmtplib's own `execute_data_command` does; its `data()` when the message
    needs normalising or the protocol is not the one this was written against (aiosmtplib 5)."""
    protocol: Any = client.protocol
    wire = _wire_form(message)
    lock = getattr(protocol, "_command_lock", None)
    if wire is None or lock is None or not hasattr(protocol, "_response_pending"):
        return await client.data(message)
    try:
        async with lock:
            protocol._response_pending = True
            protocol.write(b"DATA\r\n")
            start = await protocol.read_response(timeout=seconds)
            if start.code != 354:
                raise aiosmtplib.SMTPDataError(start.code, start.message)
            protocol._response_pending = True
            protocol.write(wire)
            answer = await protocol.read_response(timeout=seconds)
    except (aiosmtplib.SMTPServerDisconnected, aiosmtplib.SMTPTimeoutError):
        client.close()
        raise
    if answer.code != 250:
        raise aiosmtplib.SMTPDataError(answer.code, answer.message)
    return answer


async def _reset(client: aiosmtplib.SMTP | None) -> None:
    """After a refused message the session may be mid-transaction: start clean."""
    if client is not None and client.is_connected:
        try:
            await client.rset()
        except (aiosmtplib.SMTPException, OSError, TimeoutError):
            await _drop(client)


async def _drop(client: aiosmtplib.SMTP | None) -> None:
    if client is not None:
        try:
            client.close()
        except Exception:  # a broken connection may fail to close; it is gone either way
            log.debug("closing a failed SMTP connection", exc_info=True)


async def quit_politely(client: aiosmtplib.SMTP | None) -> None:
    """QUIT, or close the connection when the relay does not answer it."""
    if client is not None and client.is_connected:
        try:
            await client.quit()
        except (aiosmtplib.SMTPException, OSError, TimeoutError):
            await _drop(client)


class Outbox:
    """Messages written as `<dir>/<key>.eml`, the envelope sender as `Return-Path` (as the
    last mail server would add it). Written whole, then renamed into place."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _write(self, deliveries: Sequence[Delivery]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for delivery in deliveries:
            final = self.directory / f"{delivery.key}.eml"
            temporary = final.with_suffix(".tmp")
            with open(temporary, "wb") as handle:
                handle.write(f"Return-Path: <{delivery.sender}>\r\n".encode())
                handle.write(delivery.data)
            os.replace(temporary, final)

    async def send(self, deliveries: Sequence[Delivery]) -> list[Result]:
        try:
            await asyncio.to_thread(self._write, deliveries)
        except OSError as problem:
            return [Result(d.key, NO_ANSWER, f"outbox: {problem}"[:500]) for d in deliveries]
        return [Result(d.key, 250, "written to the outbox") for d in deliveries]

    async def close(self) -> None:
        return None
