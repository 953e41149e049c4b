"""Delivery health driven by reports that come back to the listener over SMTP (feedback-loop
complaints on messages the relay accepted, not RCPT refusals), with the thresholds taken from
the settings: a warning past the warn rate (sending goes on), an automatic pause past the pause
rate that a key cannot lift, the rates in `GET /api/v1/sending` and `GET /api/v1/account`, and
the edges of the pause threshold (judged on the unrounded rate, strictly over)."""

from __future__ import annotations

from tests.bounces.fixtures import report
from tests.bounces.test_listener import _contact, _deliver
from tests.sending.conftest import verified_domain
from tests.sending.helpers import (
    events_of,
    get_campaign,
    make_campaign,
    make_contacts,
    make_list,
    ok,
    send_campaign,
)

PAUSED_START = "Sending is paused for this account"


async def _sent_to(client, db, ws, driver, sink, count: int) -> dict[str, tuple[str, str]]:
    """A campaign to `count` new contacts, all accepted by the relay: {email: (return path,
    message id)}."""
    await verified_domain(client, db, ws)
    news = await make_list(client, ws)
    emails = [f"p{i:02d}@mail.example" for i in range(count)]
    await make_contacts(client, ws, emails, news)
    campaign = await make_campaign(client, ws, news)
    await send_campaign(client, ws, campaign["id"])
    await driver.drain()
    assert (await get_campaign(client, ws, campaign["id"]))["stats"]["sent"] == count
    return {r.recipients[0]: (r.sender, r.message_id.strip("<>")) for r in sink.received}


async def _complain(bounce_listener, sent, email: str, shape: str = "yahoo_arf") -> None:
    return_path, message_id = sent[email]
    data = report(shape, return_path=return_path, recipient=email, message_id=message_id)
    await _deliver(bounce_listener, return_path, data)


async def _sending(client, ws):
    return (await ok(await client.get("/api/v1/sending", headers=ws.headers)))["sending"]


def _thresholds(settings, *, minimum=20, warn=1.0, pause=1.0) -> None:
    settings.health_min_messages = minimum
    settings.health_warn_complaint_rate = warn
    settings.health_pause_complaint_rate = pause
    settings.health_warn_bounce_rate = 1.0
    settings.health_pause_bounce_rate = 1.0


async def test_complaint_reports_warn_then_pause_by_the_settings(
    client, db, ws, sink, driver, bounce_listener, settings
):
    _thresholds(settings, minimum=25, warn=0.03, pause=0.1)
    sent = await _sent_to(client, db, ws, driver, sink, 25)
    people = sorted(sent)

    await _complain(bounce_listener, sent, people[0])  # 1/25 = 4 %: past warn 3 %
    assert (await _contact(client, ws, people[0]))["status"] == "complained"
    [warning] = await events_of(db, ws.workspace_id, "workspace.health_warning")
    assert warning.data["reason"] == "complaint_rate"
    assert warning.data["complaint_rate"] == 0.04 and warning.data["bounce_rate"] == 0.0
    assert warning.data["messages_in_window"] == 25
    assert warning.data["workspace"]["id"] == ws.workspace_id
    state = await _sending(client, ws)
    assert state["paused"] is False and state["complaint_rate"] == 0.04
    # Sending goes on: a message is still taken.
    accepted = await client.post(
        "/api/v1/send",
        json={
            "to": people[-1],
            "from_email": "news@shop.example",
            "subject": "Still sending",
            "text_content": "Hello",
        },
        headers=ws.headers,
    )
    assert accepted.status_code == 202, accepted.text
    await driver.drain()  # now 26 messages in the window

    await _complain(bounce_listener, sent, people[1], "outlook_arf")  # 2/26: warned already
    assert (await _sending(client, ws))["paused"] is False
    assert len(await events_of(db, ws.workspace_id, "workspace.health_warning")) == 1
    await _complain(bounce_listener, sent, people[2])  # 3/26 = 11.5 % > 10 %

    state = await _sending(client, ws)
    assert (state["paused"], state["paused_by"], state["reason"]) == (
        True,
        "health",
        "complaint_rate",
    )
    assert state["paused_at"] is not None
    assert state["messages_in_window"] == 26
    assert state["complaint_rate"] == round(3 / 26, 6) and state["bounce_rate"] == 0.0
    account = (await ok(await client.get("/api/v1/account", headers=ws.headers)))["sending"]
    assert (account["paused"], account["paused_by"], account["reason"]) == (
        True,
        "health",
        "complaint_rate",
    )
    assert account["complaint_rate"] == round(3 / 26, 6)
    assert account["messages_in_window"] == 26
    [paused] = await events_of(db, ws.workspace_id, "workspace.paused")
    assert (paused.data["reason"], paused.data["paused_by"]) == ("complaint_rate", "health")
    assert paused.data["complaint_rate"] == round(3 / 26, 6)
    assert paused.data["workspace"]["id"] == ws.workspace_id and paused.data["paused_at"]

    refused = await client.post("/api/v1/sending/resume", headers=ws.headers)
    assert refused.status_code == 403
    message = refused.json()["error"]
    assert message.startswith(PAUSED_START), message
    assert "/api/v1/sending/resume" not in message
    assert "complaint" in message
    assert (await _sending(client, ws))["paused"] is True
    blocked = await client.post(
        "/api/v1/send",
        json={
            "to": people[-2],
            "from_email": "news@shop.example",
            "subject": "x",
            "text_content": "y",
        },
        headers=ws.headers,
    )
    assert blocked.status_code == 403 and blocked.json()["error"].startswith(PAUSED_START)


async def test_below_the_minimum_the_settings_decide_nothing(
    client, db, ws, sink, driver, bounce_listener, settings
):
    _thresholds(settings, minimum=26, warn=0.01, pause=0.02)
    sent = await _sent_to(client, db, ws, driver, sink, 25)
    for person in sorted(sent)[:5]:  # 20 % of 25, one message short of the minimum
        await _complain(bounce_listener, sent, person)
    state = await _sending(client, ws)
    assert state["paused"] is False
    assert state["complaint_rate"] == 0.2 and state["messages_in_window"] == 25
    assert (
        await events_of(db, ws.workspace_id, "workspace.paused", "workspace.health_warning") == []
    )


async def test_a_rate_a_hair_over_the_pause_threshold_pauses(
    client, db, ws, sink, driver, bounce_listener, settings
):
    """1/21 = 0.0476190476...: over a threshold of 0.047619 by less than 0.0000001, and
    equal to it once rounded to the 6 decimals the API shows: only the unrounded rate pauses."""
    _thresholds(settings, minimum=21, pause=0.047619)
    sent = await _sent_to(client, db, ws, driver, sink, 21)
    assert 0 < 1 / 21 - 0.047619 < 0.00005
    await _complain(bounce_listener, sent, sorted(sent)[0])
    state = await _sending(client, ws)
    assert (state["paused"], state["reason"], state["paused_by"]) == (
        True,
        "complaint_rate",
        "health",
    )
    assert state["complaint_rate"] == 0.047619


async def test_a_rate_just_over_a_threshold_of_0_03999_pauses(
    client, db, ws, sink, driver, bounce_listener, settings
):
    _thresholds(settings, minimum=25, pause=0.03999)
    sent = await _sent_to(client, db, ws, driver, sink, 25)
    await _complain(bounce_listener, sent, sorted(sent)[0])  # 1/25 = 0.04
    state = await _sending(client, ws)
    assert (state["paused"], state["reason"]) == (True, "complaint_rate")


async def test_a_rate_equal_to_the_pause_threshold_does_not_pause(
    client, db, ws, sink, driver, bounce_listener, settings
):
    """The issue pauses *over* the threshold: 1/25 against 0.04 exactly does not."""
    _thresholds(settings, minimum=25, pause=0.04)
    sent = await _sent_to(client, db, ws, driver, sink, 25)
    await _complain(bounce_listener, sent, sorted(sent)[0])
    state = await _sending(client, ws)
    assert state["paused"] is False and state["complaint_rate"] == 0.04
    assert await events_of(db, ws.workspace_id, "workspace.paused") == []
