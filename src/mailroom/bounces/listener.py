"""The inbound SMTP listener (aiosmtpd) for what comes back to the return path: bounces,
delivery reports, feedback-loop complaints, List-Unsubscribe mails and DMARC aggregate
reports (to `dmarc@`).

It accepts any recipient (the return-path domain is the operator's; what cannot be mapped is
dropped after DATA, never refused, so nothing learns which tokens are valid) and acts on each
mail in its own short transaction. Started by `mailroom serve` / `worker` when
`MAILROOM_BOUNCE_SMTP=host:port` is set, or alone with `mailroom bounces`. Its sessions are
`smtp.BoundedSMTP`: connections, time and message size capped by the `bounce_*` settings,
messages spooled rather than held in memory while they arrive.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiosmtpd.smtp import Envelope, Session

from mailroom.bounces import service
from mailroom.bounces.reports import Report, read
from mailroom.bounces.smtp import BoundedSMTP, Gate
from mailroom.core import metrics
from mailroom.db import Database
from mailroom.domains import dmarc
from mailroom.settings import Settings

log = logging.getLogger("mailroom.bounces")

MAX_BATCH = 200  # reports acted on in one transaction


class ReportHandler:
    """Answers each mail after acting on it (250 only once its effect is committed: a mail
    that fails gets a 451 and its sender tries again). Reports that arrive while a batch is
    being written are written together next, so a flood of bounces costs a few statements per
    batch rather than per report."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.handled: dict[str, int] = {}
        self._waiting: list[tuple[service.Inbound, asyncio.Future[str]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def handle_RCPT(
        self, server: Any, session: Session, envelope: Envelope, address: str, options: Any
    ) -> str:
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Session, envelope: Envelope) -> str:
        recipients = list(envelope.rcpt_tos)
        data = envelope.original_content or b""
        # Only the parsed report waits for its batch, not the message (nor aiosmtpd's copy).
        envelope.original_content = envelope.content = None
        try:
            target = service.addressed(self.settings, recipients)
            if target is not None and target.kind == "dmarc":  # parsed off the loop there
                what = await dmarc.receive(self.db, data)
            else:
                report = read(data) if target is not None and target.kind != "unsubscribe" else None
                del data
                what = await self._handle(target, report)
        except Exception:
            # Tell the sender to try again later: the report is not lost.
            log.exception("acting on an inbound report failed")
            metrics.BOUNCE_MESSAGES.labels("error").inc()
            return "451 4.3.0 Temporary failure, try again later"
        self.handled[what] = self.handled.get(what, 0) + 1
        metrics.BOUNCE_MESSAGES.labels(what).inc()
        return "250 2.0.0 OK"

    async def _handle(self, target: service.Target | None, report: Report | None) -> str:
        if target is None:
            return "dropped"
        if target.kind == "unsubscribe":
            return await service.unsubscribe(self.db, self.settings, target.row_id or "")
        if report is None or not report.outcomes:
            return "ignored"
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting.append((service.Inbound(target, report), future))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write(), name="mailroom-bounce-batch")
        return await future

    async def _write(self) -> None:
        while self._waiting:
            batch = self._waiting[:MAX_BATCH]
            del self._waiting[:MAX_BATCH]
            try:
                words = await service.act(self.db, self.settings, [mail for mail, _ in batch])
            except Exception as problem:
                if len(batch) == 1:
                    _settle(batch[0][1], error=problem)
                    continue
                # One report that cannot be acted on must not turn away the others.
                for mail, future in batch:
                    try:
                        _settle(future, (await service.act(self.db, self.settings, [mail]))[0])
                    except Exception as alone:
                        _settle(future, error=alone)
                continue
            for (_, future), word in zip(batch, words, strict=True):
                _settle(future, word)


def _settle(future: asyncio.Future[str], word: str = "", error: Exception | None = None) -> None:
    if future.done():  # the sender hung up
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(word)


def parse_address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdecimal():
        raise ValueError(f"MAILROOM_BOUNCE_SMTP must be host:port, not {value!r}")
    return host.strip("[]"), int(port)


async def start(
    db: Database, settings: Settings, address: str
) -> tuple[asyncio.Server, ReportHandler]:
    host, port = parse_address(address)
    handler = ReportHandler(db, settings)
    gate = Gate(settings.bounce_max_connections, settings.bounce_max_connections_per_client)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: BoundedSMTP(
            handler,
            gate,
            hostname="mailroom-bounces",
            # Advertised as SIZE; past it, 552 (at MAIL FROM ... SIZE= or after DATA).
            data_size_limit=settings.bounce_max_bytes,
            timeout=settings.bounce_idle_timeout,
            ident="Mailroom bounce listener",
        ),
        host=host,
        port=port,
    )
    log.info("bounce listener on %s:%d", host, port)
    return server, handler
