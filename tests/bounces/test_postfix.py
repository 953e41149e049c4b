"""End to end with a real MTA: Mailroom relays a campaign through a private Postfix instance
(tests/postfix.py), Postfix hands it on to the SMTP sink, which refuses one recipient. The
reports Postfix itself writes (a bounce for the refused recipient; a "relayed" success report
for the other, since Mailroom asks for NOTIFY=SUCCESS,FAILURE and the sink speaks no DSN) go to
the return path, which Postfix routes to the bounce listener."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest

from tests.bounces.test_listener import _contact
from tests.postfix import Postfix
from tests.sending.conftest import verified_domain
from tests.sending.helpers import (
    events_of,
    get_campaign,
    make_campaign,
    make_contacts,
    make_list,
    send_campaign,
)

DELIVERED = "jane@mail.example"
REFUSED = "bounce-me@mail.example"  # the sink answers 550 5.1.1 for local parts "bounce..."


@pytest.fixture
def postfix_available() -> None:
    reason = Postfix.unavailable()
    if reason:
        print(f"\nskipping the Postfix end-to-end test: {reason}", file=sys.stderr)
        pytest.skip(reason)


async def test_postfix_reports_bounce_and_deliver(
    postfix_available, client, db, ws, settings, sink, driver, bounce_listener
):
    await verified_domain(client, db, ws)
    _host, listener_port = bounce_listener
    relay = Postfix(
        {
            "mail.example": sink.port,
            # The return path: the sending domain itself, or its bounces. subdomain.
            "shop.example": listener_port,
            "bounces.shop.example": listener_port,
        }
    )
    relay.start()
    try:
        settings.smtp_url = relay.url
        audience = await make_list(client, ws, name="Readers")
        await make_contacts(client, ws, [DELIVERED, REFUSED], audience)
        campaign = await make_campaign(client, ws, audience, name="Through Postfix")
        await send_campaign(client, ws, campaign["id"])
        await driver.drain()

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            stats = (await get_campaign(client, ws, campaign["id"]))["stats"]
            if stats["bounced"] == 1 and stats["delivered"] == 1:
                break
            await asyncio.sleep(0.25)
        else:
            raise AssertionError(f"no reports from Postfix in 60 s: {stats}\n{relay.log}")
    finally:
        relay.stop()

    assert [r.recipients for r in sink.received] == [[DELIVERED]]
    assert (await _contact(client, ws, REFUSED))["status"] == "bounced"
    assert (await _contact(client, ws, DELIVERED))["status"] == "subscribed"
    [bounced] = await events_of(db, ws.workspace_id, "email.bounced")
    assert bounced.data["recipient"]["email"] == REFUSED
    assert "5.1.1" in bounced.data["bounce"]["response"]
    [delivered] = await events_of(db, ws.workspace_id, "email.delivered")
    assert delivered.data["recipient"]["email"] == DELIVERED
    assert delivered.campaign_id == campaign["id"]
