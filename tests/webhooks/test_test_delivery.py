"""POST /webhooks/{id}/test: one synthetic signed delivery, sent at once, never logged."""

from __future__ import annotations

import re

import pytest

from tests.webhooks.helpers import (
    CONTACT_KEYS,
    ENVELOPE_KEYS,
    SIGNATURE_SHAPE,
    create_hook,
    dead_port,
    deliveries,
    verify_by_hand,
    verify_with_stripe,
)
from tests.webhooks.test_delivery import ALL_EVENTS


async def send_test(client, ws, hook_id, event):
    return await client.post(
        f"/api/v1/webhooks/{hook_id}/test", json={"event": event}, headers=ws.headers
    )


async def test_test_delivery_has_the_real_shape_and_is_not_logged(client, pro, receiver):
    hook = await create_hook(client, pro, receiver.url("ok/test"), ["contact.created"])
    response = await send_test(client, pro, hook["id"], "contact.created")
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["ok"] is True
    assert result["status"] == 200

    [request] = receiver.at("ok/test")
    body = request.json
    assert set(body) == ENVELOPE_KEYS
    assert body["event"] == "contact.created"
    assert body["id"].startswith("test_")
    assert body["data"]["test"] is True
    assert set(body["data"]["contact"]) >= CONTACT_KEYS
    assert request.header("X-Mailroom-Event") == "contact.created"
    assert request.header("X-Mailroom-Delivery") == body["id"]
    assert request.header("User-Agent") == "Mailroom-Webhooks/1.0"
    assert request.header("Content-Type").split(";")[0] == "application/json"
    signature = request.header("X-Mailroom-Signature")
    assert re.match(SIGNATURE_SHAPE, signature)
    assert verify_with_stripe(hook["secret"], request.body, signature)
    assert verify_by_hand(hook["secret"], request.body, signature)

    log = await deliveries(client, pro, hook["id"])
    assert log["deliveries"] == []
    assert log["pagination"]["total"] == 0


@pytest.mark.parametrize("event", ALL_EVENTS)
async def test_every_event_can_be_tested(client, pro, receiver, event):
    hook = await create_hook(client, pro, receiver.url("ok/each"), ["contact.created"])
    response = await send_test(client, pro, hook["id"], event)
    assert response.status_code == 200, response.text
    assert response.json()["ok"] is True
    request = receiver.at("ok/each")[-1]
    assert set(request.json) == ENVELOPE_KEYS
    assert request.json["event"] == event
    assert request.json["data"]["test"] is True
    assert request.json["id"].startswith("test_")
    assert verify_with_stripe(hook["secret"], request.body, request.header("X-Mailroom-Signature"))


async def test_test_delivery_reports_a_failing_receiver(client, pro, receiver):
    hook = await create_hook(client, pro, receiver.url("fail/test"), ["contact.created"])
    response = await send_test(client, pro, hook["id"], "contact.created")
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["ok"] is False
    assert result["status"] == 500
    assert len(receiver.at("fail/test")) == 1  # sent once, not retried
    assert (await deliveries(client, pro, hook["id"]))["deliveries"] == []
    listed = (await client.get("/api/v1/webhooks", headers=pro.headers)).json()["webhooks"]
    assert listed[0]["health"]["consecutive_failures"] == 0


async def test_test_delivery_redirect_is_not_ok(client, pro, receiver):
    hook = await create_hook(client, pro, receiver.url("redirect/test"), ["contact.created"])
    result = (await send_test(client, pro, hook["id"], "contact.created")).json()
    assert result["ok"] is False
    assert result["status"] == 302
    assert receiver.at("target/redirect/test") == []


async def test_test_delivery_to_nothing_is_not_ok(client, pro):
    hook = await create_hook(client, pro, f"http://127.0.0.1:{dead_port()}/x", ["contact.created"])
    response = await send_test(client, pro, hook["id"], "contact.created")
    assert response.status_code == 200, response.text
    assert response.json()["ok"] is False
    assert isinstance(response.json()["status"], int)


async def test_test_delivery_after_rotation_uses_the_new_secret(client, pro, receiver):
    hook = await create_hook(client, pro, receiver.url("ok/test-rotate"), ["contact.created"])
    rotated = await client.post(f"/api/v1/webhooks/{hook['id']}/rotate-secret", headers=pro.headers)
    new_secret = rotated.json()["secret"]
    await send_test(client, pro, hook["id"], "contact.created")
    [request] = receiver.at("ok/test-rotate")
    signature = request.header("X-Mailroom-Signature")
    assert verify_with_stripe(new_secret, request.body, signature)
    assert not verify_with_stripe(hook["secret"], request.body, signature)


@pytest.mark.parametrize("body", [{}, {"event": "contact.exploded"}, {"event": 5}, {"event": ""}])
async def test_test_delivery_needs_a_known_event(client, pro, receiver, body):
    hook = await create_hook(client, pro, receiver.url("ok/bad-test"), ["contact.created"])
    response = await client.post(
        f"/api/v1/webhooks/{hook['id']}/test", json=body, headers=pro.headers
    )
    assert response.status_code == 400, response.text
    assert receiver.at("ok/bad-test") == []
