"""Delivering events to a real receiver on 127.0.0.1: envelope, headers, signatures, retries,
failures of every kind, auto-disable, re-enable, rotation, deletion."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select, update

from mailroom.models import WebhookDelivery
from mailroom.settings import Settings
from tests.webhooks.helpers import (
    CONTACT_KEYS,
    ENVELOPE_KEYS,
    SIGNATURE_SHAPE,
    SlowHeaders,
    create_contact,
    create_hook,
    dead_port,
    deliveries,
    emit,
    hook_by_id,
    parse_signature,
    parse_time,
    verify_by_hand,
    verify_with_stripe,
)

ALL_EVENTS = (
    "contact.created",
    "contact.updated",
    "contact.unsubscribed",
    "contact.resubscribed",
    "contact.bounced",
    "contact.complained",
    "contact.deleted",
    "contact.tag_added",
    "contact.tag_removed",
    "contact.list_joined",
    "contact.list_left",
    "email.sent",
    "email.delivered",
    "email.opened",
    "email.clicked",
    "email.bounced",
    "email.complained",
    "campaign.sent",
    "form.submitted",
    "domain.verified",
    "domain.failed",
    "workspace.paused",
    "workspace.resumed",
    "workspace.health_warning",
    "automation.failed",
    "automation.step_reached",
)


async def only_delivery(client, ws, hook_id):
    log = (await deliveries(client, ws, hook_id))["deliveries"]
    assert len(log) == 1, log
    return log[0]


async def test_contact_created_envelope_headers_and_signature(client, pro, receiver, driver):
    hook = await create_hook(client, pro, receiver.url("ok/a"), ["contact.created"])
    before = datetime.now(UTC)
    contact = await create_contact(client, pro, "ada@example.com", first_name="Ada")
    after = datetime.now(UTC)
    await driver.drain()

    [request] = receiver.at("ok/a")
    body = request.json
    assert set(body) == ENVELOPE_KEYS
    assert body["event"] == "contact.created"
    assert before - timedelta(seconds=1) <= parse_time(body["created_at"]) <= after
    assert set(body["data"]["contact"]) >= CONTACT_KEYS
    assert body["data"]["contact"]["id"] == contact["id"]
    assert body["data"]["contact"]["email"] == "ada@example.com"
    assert body["data"]["contact"]["first_name"] == "Ada"
    assert body["data"]["contact"]["status"] == "subscribed"

    assert request.header("Content-Type").split(";")[0] == "application/json"
    assert request.header("User-Agent") == "Mailroom-Webhooks/1.0"
    assert request.header("X-Mailroom-Event") == "contact.created"
    assert request.header("X-Mailroom-Delivery") == body["id"]
    signature = request.header("X-Mailroom-Signature")
    assert re.match(SIGNATURE_SHAPE, signature), signature
    assert verify_with_stripe(hook["secret"], request.body, signature)
    assert verify_by_hand(hook["secret"], request.body, signature)
    assert abs(parse_signature(signature)[0] - time.time()) < 60
    # a changed body or another secret does not verify
    assert not verify_with_stripe(hook["secret"], request.body + b" ", signature)
    assert not verify_by_hand("whsec_wrong", request.body, signature)

    entry = await only_delivery(client, pro, hook["id"])
    assert entry["id"] == body["id"]
    assert entry["event_type"] == "contact.created"
    assert entry["status"] == "delivered"
    assert entry["attempts"] == 1
    assert entry["last_status_code"] == 200
    assert entry["last_error"] is None
    assert entry["delivered_at"] is not None
    health = (await hook_by_id(client, pro, hook["id"]))["health"]
    assert health["last_success_at"] is not None
    assert health["consecutive_failures"] == 0


async def test_only_subscribed_events_are_delivered(
    client, pro, receiver, driver, db, hook_settings
):
    await create_hook(client, pro, receiver.url("ok/sub"), ["workspace.paused"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.resumed", {"reason": "x"})
    await create_contact(client, pro, "x@example.com")
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {"reason": "abuse"})
    await driver.drain()
    assert [r.json["event"] for r in receiver.at("ok/sub")] == ["workspace.paused"]
    assert receiver.at("ok/sub")[0].json["data"] == {"reason": "abuse"}


async def test_every_catalog_event_is_delivered_in_the_envelope(
    client, pro, receiver, driver, db, hook_settings
):
    hook = await create_hook(client, pro, receiver.url("ok/all"), list(ALL_EVENTS))
    for name in ALL_EVENTS:
        await emit(db, hook_settings, pro.workspace_id, name, {"probe": name})
    await driver.drain()
    got = receiver.at("ok/all")
    assert sorted(r.json["event"] for r in got) == sorted(ALL_EVENTS)
    for request in got:
        assert set(request.json) == ENVELOPE_KEYS
        assert request.header("X-Mailroom-Event") == request.json["event"]
        assert verify_with_stripe(
            hook["secret"], request.body, request.header("X-Mailroom-Signature")
        )
    assert len({r.json["id"] for r in got}) == len(ALL_EVENTS)


async def test_retry_keeps_delivery_id_and_event_time_and_is_signed_afresh(
    client, pro, receiver, driver, db, hook_settings
):
    hook = await create_hook(client, pro, receiver.url("flaky/a"), ["workspace.paused"])
    before = datetime.now(UTC)
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {"reason": "x"})
    after = datetime.now(UTC)
    await driver.drain(until=lambda: len(receiver.at("flaky/a")) >= 1)
    # The retry's timestamp must be a later second (signatures count whole seconds).
    signed_at, _ = parse_signature(receiver.at("flaky/a")[0].header("X-Mailroom-Signature"))
    while int(time.time()) <= signed_at:
        await asyncio.sleep(0.02)
    await driver.drain()

    first, second = receiver.at("flaky/a")
    assert first.json["id"] == second.json["id"]
    assert (
        first.header("X-Mailroom-Delivery")
        == second.header("X-Mailroom-Delivery")
        == first.json["id"]
    )
    assert first.json["created_at"] == second.json["created_at"]
    assert before - timedelta(seconds=1) <= parse_time(second.json["created_at"]) <= after
    t1, _ = parse_signature(first.header("X-Mailroom-Signature"))
    t2, _ = parse_signature(second.header("X-Mailroom-Signature"))
    assert t2 > t1
    for request in (first, second):
        assert verify_with_stripe(
            hook["secret"], request.body, request.header("X-Mailroom-Signature")
        )
        assert verify_by_hand(hook["secret"], request.body, request.header("X-Mailroom-Signature"))

    entry = await only_delivery(client, pro, hook["id"])
    assert entry["id"] == first.json["id"]
    assert entry["status"] == "delivered"
    assert entry["attempts"] == 2
    assert entry["last_status_code"] == 200


async def test_any_2xx_counts_as_delivered(client, pro, receiver, driver, db, hook_settings):
    hook = await create_hook(client, pro, receiver.url("accepted/a"), ["workspace.paused"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    await driver.drain()
    entry = await only_delivery(client, pro, hook["id"])
    assert (entry["status"], entry["attempts"], entry["last_status_code"]) == ("delivered", 1, 202)


async def test_five_failed_attempts_make_the_delivery_failed(
    client, pro, receiver, driver, db, hook_settings
):
    hook = await create_hook(client, pro, receiver.url("fail/a"), ["workspace.paused"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    await driver.drain()
    attempts = receiver.at("fail/a")
    assert len(attempts) == 5
    assert len({r.json["id"] for r in attempts}) == 1
    entry = await only_delivery(client, pro, hook["id"])
    assert entry["status"] == "failed"
    assert entry["attempts"] == 5
    assert entry["last_status_code"] == 500
    assert entry["last_error"]
    assert entry["delivered_at"] is None
    health = (await hook_by_id(client, pro, hook["id"]))["health"]
    assert health["consecutive_failures"] == 1
    assert health["last_failure_at"] is not None
    assert (await hook_by_id(client, pro, hook["id"]))["enabled"] is True


async def test_pending_while_retries_remain(client, pro, receiver, driver, db, hook_settings):
    hook_settings.webhook_retry_delays = [3600, 3600, 3600, 3600]
    hook = await create_hook(client, pro, receiver.url("fail/later"), ["workspace.paused"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    await driver.drain()
    assert len(receiver.at("fail/later")) == 1
    entry = await only_delivery(client, pro, hook["id"])
    assert entry["status"] == "pending"
    assert entry["attempts"] == 1
    assert entry["last_status_code"] == 500


async def test_default_retry_schedule(client, pro, receiver, driver, db, hook_settings):
    """Defaults: first retry within about 30 s, backing off, five attempts over roughly six
    hours; about 8 s to answer."""
    defaults = Settings()
    delays = defaults.webhook_retry_delays
    assert len(delays) == 4  # five attempts in total
    assert 0 < delays[0] <= 35
    assert delays == sorted(delays) and delays[0] < delays[-1]
    assert 5 * 3600 <= sum(delays) <= 7 * 3600
    assert 6 <= defaults.webhook_timeout <= 10

    hook_settings.webhook_retry_delays = delays
    hook = await create_hook(client, pro, receiver.url("fail/schedule"), ["workspace.paused"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    await driver.drain()
    assert len(receiver.at("fail/schedule")) == 1
    entry = await only_delivery(client, pro, hook["id"])
    assert entry["status"] == "pending"
    wait = parse_time(entry["next_attempt_at"]) - datetime.now(UTC)
    assert timedelta(seconds=0) < wait <= timedelta(seconds=35)


async def test_redirect_is_a_failure_and_not_followed(
    client, pro, receiver, driver, db, hook_settings
):
    hook = await create_hook(client, pro, receiver.url("redirect/a"), ["workspace.paused"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    await driver.drain()
    assert len(receiver.at("redirect/a")) == 5
    assert receiver.at("target/redirect/a") == []
    entry = await only_delivery(client, pro, hook["id"])
    assert entry["status"] == "failed"
    assert entry["last_status_code"] == 302


async def test_no_answer_within_the_timeout_fails(client, pro, receiver, driver, db, hook_settings):
    hook_settings.webhook_retry_delays = [3600] * 4
    hook = await create_hook(client, pro, receiver.url("slow/a"), ["workspace.paused"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    started = time.monotonic()
    await driver.drain()
    assert time.monotonic() - started < hook_settings.webhook_timeout + 3
    assert len(receiver.at("slow/a")) == 1
    entry = await only_delivery(client, pro, hook["id"])
    assert entry["status"] == "pending"  # retry scheduled
    assert entry["attempts"] == 1
    assert entry["last_status_code"] is None
    assert entry["last_error"]


async def test_headers_trickled_slowly_fail_within_the_deadline(
    client, pro, driver, db, hook_settings
):
    hook_settings.webhook_retry_delays = [3600] * 4
    async with SlowHeaders() as slow:
        hook = await create_hook(
            client, pro, f"http://127.0.0.1:{slow.port}/hook", ["workspace.paused"]
        )
        await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
        started = time.monotonic()
        await driver.drain()
        elapsed = time.monotonic() - started
    assert slow.connections == 1
    assert elapsed < hook_settings.webhook_timeout + 3
    entry = await only_delivery(client, pro, hook["id"])
    assert entry["status"] == "pending"
    assert entry["attempts"] == 1
    assert entry["last_status_code"] is None
    assert entry["last_error"]


async def test_body_trickled_slowly_does_not_hold_the_attempt_past_the_deadline(
    client, pro, receiver, driver, db, hook_settings
):
    """Headers (200) come at once, the 40-byte body one byte per 0.3 s (12 s in all): the
    attempt must end within the ~deadline, whatever it concludes."""
    hook_settings.webhook_retry_delays = [3600] * 4
    hook = await create_hook(client, pro, receiver.url("trickle/a"), ["workspace.paused"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    started = time.monotonic()
    await driver.drain()
    assert time.monotonic() - started < hook_settings.webhook_timeout + 3
    entry = await only_delivery(client, pro, hook["id"])
    assert entry["attempts"] == 1
    assert entry["status"] in ("delivered", "pending")


async def test_stalled_body_does_not_hold_the_attempt_past_the_deadline(
    client, pro, receiver, driver, db, hook_settings
):
    hook_settings.webhook_retry_delays = [3600] * 4
    hook = await create_hook(client, pro, receiver.url("stall/a"), ["workspace.paused"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    started = time.monotonic()
    await driver.drain()
    assert time.monotonic() - started < hook_settings.webhook_timeout + 3
    entry = await only_delivery(client, pro, hook["id"])
    assert entry["attempts"] == 1
    assert entry["status"] in ("delivered", "pending")


async def test_connection_refused_fails(client, pro, driver, db, hook_settings):
    hook = await create_hook(client, pro, f"http://127.0.0.1:{dead_port()}/x", ["workspace.paused"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    await driver.drain()
    entry = await only_delivery(client, pro, hook["id"])
    assert entry["status"] == "failed"
    assert entry["attempts"] == 5
    assert entry["last_status_code"] is None
    assert entry["last_error"]


async def test_delivery_rechecks_the_address_before_sending(
    client, pro, receiver, db, hook_settings
):
    """Registered while 127.0.0.0/8 was allowed; a worker started without that exception
    must refuse to connect (the URL is re-checked before every delivery)."""
    from tests.webhooks.helpers import Driver

    hook = await create_hook(client, pro, receiver.url("ok/recheck"), ["workspace.paused"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    hook_settings.webhook_allow_networks = []
    strict = Driver(db, hook_settings)
    try:
        await strict.drain()
    finally:
        await strict.close()
    assert receiver.at("ok/recheck") == []
    entry = await only_delivery(client, pro, hook["id"])
    assert entry["status"] == "failed"
    assert entry["last_status_code"] is None
    assert entry["last_error"]


# --- auto-disable and the enabled flag -----------------------------------------------------


async def _pending_later(db, endpoint_id):
    """Push this endpoint's pending deliveries an hour out (a queued retry)."""
    async with db.transaction() as s:
        await s.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.endpoint_id == endpoint_id, WebhookDelivery.status == "pending")
            .values(run_at=datetime.now(UTC) + timedelta(hours=1))
        )


async def _statuses(db, endpoint_id):
    async with db.session() as s:
        rows = await s.execute(
            select(WebhookDelivery.status, func.count())
            .where(WebhookDelivery.endpoint_id == endpoint_id)
            .group_by(WebhookDelivery.status)
        )
        return dict(rows.all())


async def test_twenty_failed_deliveries_disable_the_endpoint(
    client, pro, receiver, driver, db, hook_settings
):
    hook = await create_hook(client, pro, receiver.url("fail/disable"), ["workspace.paused"])
    for i in range(19):
        await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {"n": i})
    await driver.drain()
    listed = await hook_by_id(client, pro, hook["id"])
    assert listed["enabled"] is True
    assert listed["health"]["consecutive_failures"] == 19

    # two deliveries queued for later, then the twentieth failure
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {"n": "queued-1"})
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {"n": "queued-2"})
    await _pending_later(db, hook["id"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {"n": 19})
    await driver.drain()

    listed = await hook_by_id(client, pro, hook["id"])
    assert listed["enabled"] is False
    assert listed["health"]["disabled_reason"]
    assert listed["health"]["consecutive_failures"] >= 20
    assert await _statuses(db, hook["id"]) == {"failed": 20, "abandoned": 2}
    sent = len(receiver.at("fail/disable"))
    assert sent == 100

    # deliveries stop: new events are not queued for a disabled endpoint
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {"n": "after"})
    await driver.drain()
    assert len(receiver.at("fail/disable")) == sent
    assert await _statuses(db, hook["id"]) == {"failed": 20, "abandoned": 2}

    # re-enabling clears the reason and the count and replays nothing
    response = await client.patch(
        f"/api/v1/webhooks/{hook['id']}", json={"enabled": True}, headers=pro.headers
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["enabled"] is True
    assert body["health"]["disabled_reason"] is None
    assert body["health"]["consecutive_failures"] == 0
    await driver.drain()
    assert len(receiver.at("fail/disable")) == sent
    assert await _statuses(db, hook["id"]) == {"failed": 20, "abandoned": 2}
    listed = await hook_by_id(client, pro, hook["id"])
    assert listed["health"]["disabled_reason"] is None
    assert listed["health"]["consecutive_failures"] == 0

    # and events after re-enabling are delivered again
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {"n": "new"})
    await driver.drain(until=lambda: len(receiver.at("fail/disable")) > sent)
    assert receiver.at("fail/disable")[-1].json["data"] == {"n": "new"}


async def test_a_success_resets_the_consecutive_failure_count(
    client, pro, receiver, driver, db, hook_settings
):
    hook = await create_hook(client, pro, receiver.url("fail/reset"), ["workspace.paused"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    await driver.drain()
    assert (await hook_by_id(client, pro, hook["id"]))["health"]["consecutive_failures"] == 1
    response = await client.patch(
        f"/api/v1/webhooks/{hook['id']}",
        json={"url": receiver.url("ok/reset")},
        headers=pro.headers,
    )
    assert response.status_code == 200, response.text
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    await driver.drain()
    health = (await hook_by_id(client, pro, hook["id"]))["health"]
    assert health["consecutive_failures"] == 0
    assert health["last_success_at"] is not None


async def test_disabling_abandons_pending_deliveries(
    client, pro, receiver, driver, db, hook_settings
):
    hook = await create_hook(client, pro, receiver.url("ok/off"), ["workspace.paused"])
    for _ in range(3):
        await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    response = await client.patch(
        f"/api/v1/webhooks/{hook['id']}", json={"enabled": False}, headers=pro.headers
    )
    assert response.status_code == 200, response.text
    assert response.json()["enabled"] is False
    await driver.drain()
    assert receiver.at("ok/off") == []
    log = (await deliveries(client, pro, hook["id"]))["deliveries"]
    assert [e["status"] for e in log] == ["abandoned"] * 3
    assert all(e["attempts"] == 0 for e in log)

    # re-enabling does not replay them
    await client.patch(
        f"/api/v1/webhooks/{hook['id']}", json={"enabled": True}, headers=pro.headers
    )
    await driver.drain()
    assert receiver.at("ok/off") == []


async def test_disabled_at_creation_receives_nothing(
    client, pro, receiver, driver, db, hook_settings
):
    hook = await create_hook(
        client, pro, receiver.url("ok/created-off"), ["workspace.paused"], enabled=False
    )
    assert hook["enabled"] is False
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    await driver.drain()
    assert receiver.at("ok/created-off") == []
    assert (await deliveries(client, pro, hook["id"]))["deliveries"] == []


async def test_delete_removes_the_log_and_stops_deliveries(
    client, pro, receiver, driver, db, hook_settings
):
    hook = await create_hook(client, pro, receiver.url("ok/del"), ["workspace.paused"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    await driver.drain()
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})  # still pending
    response = await client.delete(f"/api/v1/webhooks/{hook['id']}", headers=pro.headers)
    assert response.status_code == 200, response.text
    await driver.drain()
    assert len(receiver.at("ok/del")) == 1
    response = await client.get(f"/api/v1/webhooks/{hook['id']}/deliveries", headers=pro.headers)
    assert response.status_code == 404
    async with db.session() as s:
        left = await s.scalar(
            select(func.count())
            .select_from(WebhookDelivery)
            .where(WebhookDelivery.endpoint_id == hook["id"])
        )
    assert left == 0


async def test_rotated_secret_signs_the_next_attempt(
    client, pro, receiver, driver, db, hook_settings
):
    hook = await create_hook(client, pro, receiver.url("flaky/rotate"), ["workspace.paused"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    await driver.drain(until=lambda: len(receiver.at("flaky/rotate")) >= 1)
    response = await client.post(
        f"/api/v1/webhooks/{hook['id']}/rotate-secret", headers=pro.headers
    )
    assert response.status_code == 200, response.text
    new_secret = response.json()["secret"]
    assert new_secret != hook["secret"]
    await driver.drain()
    first, second = receiver.at("flaky/rotate")
    assert first.json["id"] == second.json["id"]
    assert verify_with_stripe(hook["secret"], first.body, first.header("X-Mailroom-Signature"))
    signature = second.header("X-Mailroom-Signature")
    assert verify_with_stripe(new_secret, second.body, signature)
    assert verify_by_hand(new_secret, second.body, signature)
    assert not verify_with_stripe(hook["secret"], second.body, signature)
    assert not verify_by_hand(hook["secret"], second.body, signature)
    entry = await only_delivery(client, pro, hook["id"])
    assert (entry["status"], entry["attempts"]) == ("delivered", 2)


async def test_each_endpoint_gets_its_own_delivery_and_secret(
    client, pro, receiver, driver, db, hook_settings
):
    one = await create_hook(client, pro, receiver.url("ok/one"), ["workspace.paused"])
    two = await create_hook(client, pro, receiver.url("ok/two"), ["workspace.paused"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    await driver.drain()
    [a] = receiver.at("ok/one")
    [b] = receiver.at("ok/two")
    assert a.json["id"] != b.json["id"]
    assert a.json["created_at"] == b.json["created_at"]
    assert verify_with_stripe(one["secret"], a.body, a.header("X-Mailroom-Signature"))
    assert verify_with_stripe(two["secret"], b.body, b.header("X-Mailroom-Signature"))
    assert not verify_with_stripe(one["secret"], b.body, b.header("X-Mailroom-Signature"))


async def test_other_workspaces_events_never_arrive(
    client, pro, factory, receiver, driver, db, hook_settings
):
    other = await factory.workspace("pro", listen=False)
    await create_hook(client, pro, receiver.url("ok/mine"), ["contact.created"])
    await create_contact(client, other, "theirs@example.com")
    await create_contact(client, pro, "mine@example.com")
    await driver.drain()
    assert [r.json["data"]["contact"]["email"] for r in receiver.at("ok/mine")] == [
        "mine@example.com"
    ]
