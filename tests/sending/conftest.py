"""Fixtures of the sending tests: an SMTP sink on 127.0.0.1 the service relays to, a verified
sending domain (its DKIM key is the one stored), and the engine driver."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import update

from mailroom.core.clock import utcnow
from mailroom.models import SendingDomain
from tests.sending.helpers import SendDriver, ok
from tests.sending.sink import Sink

DOMAIN = "shop.example"


@pytest.fixture
async def sink(settings: Any) -> AsyncIterator[Sink]:
    """The relay: `MAILROOM_SMTP_URL` points at it; build in a thread (no process pool)."""
    async with Sink() as server:
        settings.smtp_url = server.url
        settings.send_processes = 0
        yield server


@pytest.fixture
async def driver(db: Any, settings: Any) -> AsyncIterator[SendDriver]:
    settings.send_processes = 0 if settings.send_processes is None else settings.send_processes
    sender = SendDriver(db, settings)
    yield sender
    await sender.close()


async def verified_domain(client: Any, db: Any, ws: Any, name: str = DOMAIN) -> dict[str, Any]:
    """A sending domain of `ws`, marked verified as a successful DNS check would leave it."""
    created = await client.post("/api/v1/domains", json={"domain": name}, headers=ws.headers)
    domain = (await ok(created, 201))["domain"]
    async with db.transaction() as session:
        await session.execute(
            update(SendingDomain)
            .where(SendingDomain.id == domain["id"])
            .values(status="verified", verified_at=utcnow(), last_checked_at=utcnow())
        )
    return dict(domain)
