"""Issue 25 item 2: while deliveries are due to an endpoint with free capacity, the worker
keeps sending. Deliveries to one endpoint once came in bursts of ~30 then idled ~240 ms (the
loop claimed a handful, then waited on its poll interval), and endpoints on one host shared
16 connections, so a slow one held up every other endpoint there (Slack's endpoints all share
a host)."""

from __future__ import annotations

import asyncio
import time

from sqlalchemy import func, select

from mailroom.models import WebhookDelivery, WebhookEndpoint
from mailroom.webhooks.delivery import DeliveryWorker
from mailroom.worker import Loop, WorkerHost
from tests.webhooks.helpers import create_hook, emit

BURST = 3_000
IDLE = 120.0  # seconds an idle delivery loop pauses in the burst test


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


def _host(db, settings, idle_seconds: float = 0.2) -> tuple[WorkerHost, DeliveryWorker]:
    """A worker host running only the delivery loop, as `mailroom worker` runs it, pausing
    `idle_seconds` after a tick that found nothing to do."""
    deliveries = DeliveryWorker(settings)

    async def close(ctx) -> None:
        await deliveries.close(ctx.db)

    loop = Loop("webhook-deliveries", deliveries.tick, idle_seconds, close)
    return WorkerHost(db, settings, loops=[loop]), deliveries


async def _statuses(db) -> dict[str, int]:
    async with db.session(write=False) as session:
        rows = await session.execute(
            select(WebhookDelivery.status, func.count()).group_by(WebhookDelivery.status)
        )
        return {status: int(n) for status, n in rows.all()}


async def _attempted(db, path: str) -> int:
    """Deliveries to the endpoint whose URL ends with `path` with an attempt recorded."""
    async with db.session(write=False) as session:
        found = await session.scalar(
            select(func.count())
            .select_from(WebhookDelivery)
            .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
            .where(WebhookEndpoint.url.endswith(path), WebhookDelivery.attempts > 0)
        )
        return int(found or 0)


async def test_a_burst_to_one_endpoint_is_sent_without_idling(
    client, pro, receiver, db, hook_settings
):
    await create_hook(client, pro, receiver.url("ok/burst"), ["contact.created"])
    await _import(client, pro, "b", BURST)
    # The loop would pause a minute after a tick that did nothing: the whole burst arrives
    # before that only if no tick comes back empty while deliveries are due (the old loop
    # claimed a handful, let them finish, and waited on its poll interval). No speed is
    # judged: the bound is the pause, many times what the burst needs even on a loaded box.
    host, _ = _host(db, hook_settings, idle_seconds=IDLE)
    host.start()
    try:
        await _until(lambda: len(receiver.at("ok/burst")) >= BURST, IDLE - 5)
    finally:
        host.stop()
        await host.join()
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
        # before the first of those attempts has ended (none of them recorded yet).
        await _until(lambda: len(receiver.at("ok/b")) >= 40, 30)
        assert await _attempted(db, "slow/a") == 0, "the fast endpoint waited for the slow one"
        assert 0 < len(receiver.at("slow/a")) <= 16  # the slow one: a lane's worth at once
    finally:
        host.stop()
        await host.join()
    statuses = await _statuses(db)
    assert statuses["delivered"] == 40
