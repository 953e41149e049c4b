"""The inbound SMTP listener (aiosmtpd) for what comes back to the return path: bounces,
delivery reports, feedback-loop complaints and List-Unsubscribe mails.

It accepts any recipient (the return-path domain is the operator's; what cannot be mapped is
dropped after DATA, never refused, so nothing learns which tokens are valid) and acts on each
mail in its own short transaction. Started by `mailroom serve` / `worker` when
`MAILROOM_BOUNCE_SMTP=host:port` is set, or alone with `mailroom bounces`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session

from mailroom.bounces import service
from mailroom.db import Database
from mailroom.settings import Settings

log = logging.getLogger("mailroom.bounces")

MAX_MESSAGE_BYTES = 10 * 1024 * 1024  # a report quoting a large message is still taken


class ReportHandler:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.handled: dict[str, int] = {}

    async def handle_RCPT(
        self, server: Any, session: Session, envelope: Envelope, address: str, options: Any
    ) -> str:
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Session, envelope: Envelope) -> str:
        data = envelope.original_content or b""
        try:
            what = await service.handle(self.db, self.settings, list(envelope.rcpt_tos), data)
        except Exception:
            # Tell the sender to try again later: the report is not lost.
            log.exception("acting on an inbound report failed")
            return "451 4.3.0 Temporary failure, try again later"
        self.handled[what] = self.handled.get(what, 0) + 1
        return "250 2.0.0 OK"


def parse_address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"MAILROOM_BOUNCE_SMTP must be host:port, not {value!r}")
    return host.strip("[]"), int(port)


async def start(
    db: Database, settings: Settings, address: str
) -> tuple[asyncio.Server, ReportHandler]:
    host, port = parse_address(address)
    handler = ReportHandler(db, settings)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: SMTP(
            handler,
            hostname="mailroom-bounces",
            data_size_limit=MAX_MESSAGE_BYTES,
            ident="Mailroom bounce listener",
        ),
        host=host,
        port=port,
    )
    log.info("bounce listener on %s:%d", host, port)
    return server, handler
