"""Several SMTP relays in MAILROOM_SMTP_URL, each with its weight, connections and rate: mail
is spread by weight over real SMTP sinks; a relay that is down or answers 421 is rested and
its messages go through the other in the same pass, none lost, none twice; the Sending page
shows each relay's state from the worker's row."""

from __future__ import annotations

import time
from collections import Counter
from contextlib import aclosing
from typing import Any

import pytest

from mailroom.sending.relays import Relays, transport_for
from mailroom.sending.transport import Delivery, SmtpPool, parse_smtp_url, relay_urls
from mailroom.worker import WorkerContext, new_worker_id, register
from tests.dashboard.helpers import signed_in
from tests.reliability.campaign_run import send_status
from tests.sending.helpers import SendDriver
from tests.sending.sink import Sink
from tests.sending.test_provider_pacing import campaign_to

EMAILS = [f"reader{i:03d}@mailtest.io" for i in range(40)]


def test_each_relay_takes_its_own_limits() -> None:
    urls = relay_urls(
        "smtp://a.example:587?weight=3&max_connections=2 , smtps://u:p@b.example?max_per_second=2.5"
    )
    assert len(urls) == 2
    first, second = (parse_smtp_url(url) for url in urls)
    assert (first.host, first.weight, first.max_connections, first.max_per_second) == (
        "a.example",
        3,
        2,
        None,
    )
    assert (second.port, second.weight, second.max_per_second) == (465, 1, 2.5)
    for bad in ("weight=0", "max_connections=two", "max_per_second=-1"):
        with pytest.raises(ValueError, match="MAILROOM_SMTP_URL: "):
            parse_smtp_url(f"smtp://a.example?{bad}")
    assert isinstance(transport_for(urls[0], None, 8), SmtpPool)  # type: ignore[arg-type]
    assert isinstance(transport_for(",".join(urls), None, 8), Relays)  # type: ignore[arg-type]


@pytest.fixture
async def worker_driver(db: Any, settings: Any) -> Any:
    """The engine as a registered worker (its row carries the relays' states)."""
    settings.send_processes = 0
    sender = SendDriver(db, settings)
    sender.ctx = WorkerContext(db, settings, new_worker_id())
    await register(db, sender.ctx.worker_id)
    yield sender
    await sender.close()


async def test_mail_is_spread_over_the_relays_by_weight(
    client: Any, db: Any, ws: Any, settings: Any, worker_driver: SendDriver
) -> None:
    async with Sink() as heavy, Sink() as light:
        settings.smtp_url = f"{heavy.url}&weight=3,{light.url}"
        campaign_id = await campaign_to(client, db, ws, EMAILS)
        await worker_driver.drain()
        assert await send_status(db, campaign_id) == {"sent": 40}
        assert (len(heavy.received), len(light.received)) == (30, 10)
        delivered = Counter(r.recipients[0] for r in heavy.received + light.received)
        assert sorted(delivered) == EMAILS and set(delivered.values()) == {1}


async def test_a_relay_that_is_down_rests_and_the_other_carries_its_mail(
    app: Any, client: Any, db: Any, ws: Any, settings: Any, worker_driver: SendDriver
) -> None:
    async with Sink() as up, Sink() as down:
        await down.stop()  # nothing listens there any more: connections are refused
        settings.smtp_url = f"{up.url},{down.url}"
        campaign_id = await campaign_to(client, db, ws, EMAILS)
        await worker_driver.drain()
        assert await send_status(db, campaign_id) == {"sent": 40}
        delivered = Counter(r.recipients[0] for r in up.received)
        assert sorted(delivered) == EMAILS and set(delivered.values()) == {1}
        transport = worker_driver.engine.transport
        assert isinstance(transport, Relays)
        states = {s["relay"]: s for s in transport.states()}
        assert states[f"127.0.0.1:{down.port}"]["state"] == "resting"
        assert "Connect call failed" in (states[f"127.0.0.1:{down.port}"]["last_error"] or "")
        assert states[f"127.0.0.1:{up.port}"]["state"] == "ok"
        assert states[f"127.0.0.1:{up.port}"]["sent"] == 40

        admin = await signed_in(app, db, settings, ws, "ada@shop.example")
        async with aclosing(admin):
            page = await admin.get("/settings/sending")
        assert "Email goes out through 2 SMTP relays" in page.text
        row = page.text.split(f"<code>127.0.0.1:{down.port}</code>", 1)[1].split("</tr>")[0]
        assert '<span class="badge off">resting</span>' in row
        row = page.text.split(f"<code>127.0.0.1:{up.port}</code>", 1)[1].split("</tr>")[0]
        assert '<span class="badge ok">ok</span>' in row and '<td data-label="Sent">40</td>' in row


async def test_a_relay_answering_421_rests_while_the_other_goes_on(
    client: Any, db: Any, ws: Any, settings: Any, worker_driver: SendDriver
) -> None:
    async with Sink() as steady, Sink() as busy:

        async def unavailable(*_: Any) -> str:
            return "421 4.3.2 Service not available, closing transmission channel"

        busy.handler.handle_MAIL = unavailable  # type: ignore[attr-defined]
        settings.smtp_url = f"{steady.url},{busy.url}"
        campaign_id = await campaign_to(client, db, ws, EMAILS)
        await worker_driver.drain()
        assert await send_status(db, campaign_id) == {"sent": 40}
        assert len(steady.received) == 40 and busy.received == []
        transport = worker_driver.engine.transport
        assert isinstance(transport, Relays)
        busy_state = next(s for s in transport.states() if s["relay"].endswith(str(busy.port)))
        assert busy_state["state"] == "resting" and busy_state["last_error"].startswith("421")


async def test_a_relays_connections_and_rate_are_kept() -> None:
    async with Sink() as sink:
        pool = SmtpPool(f"{sink.url}&max_connections=2&max_per_second=20", size=8)
        assert pool.size == 8  # the pool's own size; transport_for applies max_connections
        pool = transport_for(f"{sink.url}&max_connections=2&max_per_second=20", None, 8)  # type: ignore[arg-type]
        assert isinstance(pool, SmtpPool) and pool.size == 2
        deliveries = [
            Delivery(
                f"k{i}", "bounce@shop.example", f"r{i}@mailtest.io", b"Subject: x\r\n\r\nx\r\n"
            )
            for i in range(30)
        ]
        started = time.monotonic()
        results = await pool.send(deliveries)
        took = time.monotonic() - started
        await pool.close()
        assert all(r.sent for r in results) and len(sink.received) == 30
        # 30 messages at 20 a second: the last waits for its slot, about 1.45 s in.
        assert took >= 1.4
        assert len(sink._sessions) <= 2
