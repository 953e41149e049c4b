"""`mailroom_smtp_connections_open` is the sum over a process's SMTP pools: the bulk pool and
the express pool each move it by their own change (one setting it would hide the other's)."""

from __future__ import annotations

from mailroom.sending.transport import Delivery, SmtpPool
from tests.system.test_metrics import scrape, value

MESSAGE = b"From: a@shop.example\r\nTo: b@mailtest.io\r\nSubject: x\r\n\r\nHello\r\n"
GAUGE = "mailroom_smtp_connections_open"


def _deliveries(n: int, prefix: str) -> list[Delivery]:
    return [
        Delivery(f"{prefix}{i}", "bounce@shop.example", f"{prefix}{i}@mailtest.io", MESSAGE)
        for i in range(n)
    ]


async def test_two_pools_add_up_in_the_open_connections_gauge(client, sink):
    before = value((await scrape(client))[0], GAUGE)
    bulk, express = SmtpPool(sink.url, size=3), SmtpPool(sink.url, size=2)
    try:
        assert all(r.code == 250 for r in await bulk.send(_deliveries(3, "b")))
        assert all(r.code == 250 for r in await express.send(_deliveries(2, "e")))
        assert value((await scrape(client))[0], GAUGE) == before + 3 + 2
        await express.close()
        assert value((await scrape(client))[0], GAUGE) == before + 3
        assert all(r.code == 250 for r in await bulk.send(_deliveries(1, "c")))
        assert value((await scrape(client))[0], GAUGE) == before + 3  # reused, not reopened
    finally:
        await bulk.close()
        await express.close()
    assert value((await scrape(client))[0], GAUGE) == before
    assert len(sink.received) == 6
