"""Issue 25 item 2: while deliveries are due to an endpoint with free capacity, the worker
keeps sending. Deliveries to one endpoint once came in bursts of ~30 then idled ~240 ms (the
loop claimed a handful, then waited on its poll interval), and endpoints on one host shared
16 connections, so a slow one held up every other endpoint there (Slack's endpoints all share
a host)."""

from __future__ import annotations

import asyncio
import time

from sqlalchemy import func, select

from mailroom.models import WebhookDelivery
from mailroom.webhooks.delivery import DeliveryWorker
from mailroom.worker import Loop, WorkerHost
from tests.webhooks.helpers import create_hook, emit

BURST = 3_000


async def _import(client, ws, prefix: str, count: int) -> None:
    rows = "".join(f"{prefix}{i}@mailtest.io\n" for i in range(count))
    response = await client.post(
        "/api/v1/contacts/import",
        files={"file": ("c.csv", f"email\n{rows}".encode(), "text/csv")},
        data={"check_domains": "false"},
        headers=ws.headers,
    )
    assert response.status_code == 200, response.text
    assert response.json()["imported"] == count


async def _until(check, seconds: float) -> float:
    """Seconds until `check()` holds (polled), or an AssertionError after `seconds`."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > seconds:
            raise AssertionError(f"not reached within {seconds} s")
        await asyncio.sleep(0.02)
    return time.monotonic() - start


def _host(db, settings) -> tuple[WorkerHost, DeliveryWorker]:
    """A worker host running only the delivery loop, as `mailroom worker` runs it."""
    deliveries = DeliveryWorker(settings)

    async def close(ctx) -> None:
        await deliveries.close(ctx.db)

    loop = Loop(
        "webhook-deliveries", deliveries.tick, min(0.2, settings.worker_poll_interval), close
    )
    return WorkerHost(db, settings, loops=[loop]), deliveries


async def _statuses(db) -> dict[str, int]:
    async with db.session(write=False) as session:
        rows = await session.execute(
            select(WebhookDelivery.status, func.count()).group_by(WebhookDelivery.status)
        )
        return {status: int(n) for status, n in rows.all()}


async def test_a_burst_to_one_endpoint_is_sent_without_idling(
    client, pro, receiver, db, hook_settings
):
    hook_settings.worker_poll_interval = 1.0  # as deployed: an idle loop sleeps 0.2 s
    await create_hook(client, pro, receiver.url("ok/burst"), ["contact.created"])
    await _import(client, pro, "b", BURST)
    host, _ = _host(db, hook_settings)
    host.start()
    try:
        # At the old pace (~100/s) this took 30 s; the receiver answers at once.
        took = await _until(lambda: len(receiver.at("ok/burst")) >= BURST, 60)
    finally:
        host.stop()
        await host.join()
    assert took < 20, f"{BURST} deliveries took {took:.1f} s"
    assert len({r.header("X-Mailroom-Delivery") for r in receiver.at("ok/burst")}) == BURST
    assert await _statuses(db) == {"delivered": BURST}


async def test_a_slow_endpoint_does_not_hold_up_another_on_its_host(
    client, pro, receiver, db, hook_settings
):
    hook_settings.webhook_retry_delays = [60, 60, 60, 60]  # no retry during the test
    await create_hook(client, pro, receiver.url("slow/a"), ["workspace.paused"])
    await create_hook(client, pro, receiver.url("ok/b"), ["workspace.resumed"])
    for n in range(40):  # the slow endpoint's deliveries are due first
        await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {"n": n})
    for n in range(40):
        await emit(db, hook_settings, pro.workspace_id, "workspace.resumed", {"n": n})
    host, _ = _host(db, hook_settings)
    host.start()
    try:
        # "slow" answers after 5 s and times out at 3 s: the fast endpoint's 40 all arrive
        # before the first of those attempts has ended.
        took = await _until(lambda: len(receiver.at("ok/b")) >= 40, 30)
        assert took < hook_settings.webhook_timeout, f"the fast endpoint waited {took:.1f} s"
        assert 0 < len(receiver.at("slow/a")) <= 16  # the slow one: a lane's worth at once
    finally:
        host.stop()
        await host.join()
    statuses = await _statuses(db)
    assert statuses["delivered"] == 40
