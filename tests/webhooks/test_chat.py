"""Slack and Teams endpoints: readable messages for the seven chat events only, naming the
workspace and linking to a page, not signed; retries, log and 202 as for servers."""

from __future__ import annotations

import json

import pytest

from tests.webhooks.helpers import CHAT_EVENTS, create_contact, create_hook, deliveries, emit
from tests.webhooks.test_delivery import ALL_EVENTS

SAMPLE_DATA = {
    "workspace.paused": {"reason": "complaint rate too high"},
    "workspace.resumed": {"reason": "operator"},
    "workspace.health_warning": {"reason": "bounces rising"},
    "automation.failed": {
        "automation": {"id": "a1", "name": "Welcome series"},
        "error": "template missing",
    },
    "campaign.sent": {"campaign": {"id": "c1", "name": "Spring sale", "recipients": 1200}},
    "domain.verified": {"domain": {"id": "d1", "name": "mail.acme.test"}},
    "domain.failed": {"domain": {"id": "d1", "name": "mail.acme.test", "reason": "DKIM"}},
}
NOT_CHAT = [e for e in ALL_EVENTS if e not in CHAT_EVENTS]


def strings_in(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def links_in(message):
    found = []
    for text in strings_in(message):
        found += [w.strip("<>|()") for w in text.split() if "http://testserver/" in w]
    return found


async def fire_all(client, pro, db, settings):
    for name in CHAT_EVENTS:
        await emit(db, settings, pro.workspace_id, name, SAMPLE_DATA[name])
    await create_contact(client, pro, "chat@example.com")  # not a chat event


async def test_slack_gets_readable_messages_for_the_chat_events(
    client, pro, receiver, driver, db, hook_settings
):
    hook = await create_hook(
        client, pro, receiver.url("ok/slack"), list(CHAT_EVENTS), channel="slack"
    )
    await fire_all(client, pro, db, hook_settings)
    await driver.drain()

    got = receiver.at("ok/slack")
    assert len(got) == len(CHAT_EVENTS)
    for request in got:
        assert request.header("X-Mailroom-Signature") is None
        message = request.json
        assert isinstance(message["text"], str) and message["text"]
        assert isinstance(message["blocks"], list) and message["blocks"]
        assert set(message) & {"id", "event", "created_at", "data"} == set()
        assert "Acme Shop" in json.dumps(message)
        assert links_in(message), message
    texts = " ".join(r.json["text"] for r in got)
    assert "Spring sale" in texts and "mail.acme.test" in texts and "Welcome series" in texts
    log = (await deliveries(client, pro, hook["id"]))["deliveries"]
    assert sorted(e["event_type"] for e in log) == sorted(CHAT_EVENTS)
    assert {e["status"] for e in log} == {"delivered"}


async def test_teams_gets_adaptive_cards_and_202_is_delivered(
    client, pro, receiver, driver, db, hook_settings
):
    hook = await create_hook(
        client, pro, receiver.url("accepted/teams"), list(CHAT_EVENTS), channel="teams"
    )
    await fire_all(client, pro, db, hook_settings)
    await driver.drain()

    got = receiver.at("accepted/teams")
    assert len(got) == len(CHAT_EVENTS)
    for request in got:
        assert request.header("X-Mailroom-Signature") is None
        message = request.json
        [attachment] = message["attachments"]
        assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
        card = attachment["content"]
        assert card["type"] == "AdaptiveCard"
        assert "Acme Shop" in json.dumps(card)
        assert links_in(card), card
    log = (await deliveries(client, pro, hook["id"]))["deliveries"]
    assert len(log) == len(CHAT_EVENTS)
    assert {(e["status"], e["attempts"], e["last_status_code"]) for e in log} == {
        ("delivered", 1, 202)
    }


async def test_chat_endpoints_are_retried_and_logged(
    client, pro, receiver, driver, db, hook_settings
):
    hook = await create_hook(
        client, pro, receiver.url("flaky/slack"), ["campaign.sent"], channel="slack"
    )
    await emit(db, hook_settings, pro.workspace_id, "campaign.sent", SAMPLE_DATA["campaign.sent"])
    await driver.drain()
    first, second = receiver.at("flaky/slack")
    assert first.body == second.body
    [entry] = (await deliveries(client, pro, hook["id"]))["deliveries"]
    assert (entry["status"], entry["attempts"]) == ("delivered", 2)


@pytest.mark.parametrize("channel", ["slack", "teams"])
async def test_chat_endpoints_refuse_non_chat_events(client, pro, receiver, channel):
    for events in (["contact.created"], ["campaign.sent", "email.opened"], NOT_CHAT):
        response = await client.post(
            "/api/v1/webhooks",
            json={"url": receiver.url("ok/c"), "event_types": events, "channel": channel},
            headers=pro.headers,
        )
        assert response.status_code == 400, (events, response.text)
    listed = (await client.get("/api/v1/webhooks", headers=pro.headers)).json()["webhooks"]
    assert listed == []


async def test_chat_endpoint_cannot_be_patched_to_non_chat_events(client, pro, receiver):
    hook = await create_hook(client, pro, receiver.url("ok/p"), ["campaign.sent"], channel="slack")
    response = await client.patch(
        f"/api/v1/webhooks/{hook['id']}",
        json={"event_types": ["campaign.sent", "contact.created"]},
        headers=pro.headers,
    )
    assert response.status_code == 400, response.text


async def test_slack_test_delivery_is_a_readable_message(client, pro, receiver):
    hook = await create_hook(
        client, pro, receiver.url("ok/slack-test"), ["campaign.sent"], channel="slack"
    )
    response = await client.post(
        f"/api/v1/webhooks/{hook['id']}/test", json={"event": "campaign.sent"}, headers=pro.headers
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"ok": True, "status": 200} or response.json()["ok"] is True
    [request] = receiver.at("ok/slack-test")
    assert request.header("X-Mailroom-Signature") is None
    assert "text" in request.json and "Acme Shop" in json.dumps(request.json)
    assert (await deliveries(client, pro, hook["id"]))["deliveries"] == []


async def test_slack_url_is_detected_and_limited_to_chat_events(client, pro, resolver):
    url = "https://hooks.slack.com/services/T000/B000/XXXX"
    response = await client.post(
        "/api/v1/webhooks",
        json={"url": url, "event_types": ["contact.created"]},
        headers=pro.headers,
    )
    assert response.status_code == 400, response.text
    hook = await create_hook(client, pro, url, ["workspace.paused"])
    assert hook["url"] == url
