"""Delivery health: past the warn rates `workspace.health_warning` (once a day, sending goes
on); past the pause rates an automatic pause with the rates, which a key cannot lift and the
operator can; rates in `GET /api/v1/sending` and `GET /api/v1/account`; nothing decided before
the minimum number of messages."""

from __future__ import annotations

from tests.conftest import run_cli
from tests.sending.conftest import verified_domain
from tests.sending.helpers import (
    events_of,
    make_campaign,
    make_contacts,
    make_list,
    ok,
    send_campaign,
)


async def _campaign_to(client, db, ws, driver, good: int, bouncing: int, batch: str = "") -> None:
    """A campaign to new contacts where `bouncing` of them are refused 550 at RCPT by the sink."""
    news = await make_list(client, ws, name=f"List {good}-{bouncing}{batch}")
    emails = [f"ok{batch}{i}@mail.example" for i in range(good)]
    emails += [f"bounce{batch}{i}@mail.example" for i in range(bouncing)]
    await make_contacts(client, ws, emails, news)
    campaign = await make_campaign(client, ws, news, name=f"Campaign {good}-{bouncing}{batch}")
    await send_campaign(client, ws, campaign["id"])
    await driver.drain()


async def test_a_high_bounce_rate_pauses_until_the_operator_resumes(
    client, db, ws, sink, driver, cli_env
):
    await verified_domain(client, db, ws)
    await _campaign_to(client, db, ws, driver, good=20, bouncing=3)  # 3/23 = 13 % > 8 %

    sending = (await ok(await client.get("/api/v1/sending", headers=ws.headers)))["sending"]
    assert (sending["paused"], sending["paused_by"], sending["reason"]) == (
        True,
        "health",
        "bounce_rate",
    )
    assert sending["messages_in_window"] == 23
    assert sending["bounce_rate"] == round(3 / 23, 6) and sending["complaint_rate"] == 0.0
    account = (await ok(await client.get("/api/v1/account", headers=ws.headers)))["sending"]
    assert (account["paused"], account["reason"], account["bounce_rate"]) == (
        True,
        "bounce_rate",
        round(3 / 23, 6),
    )
    [paused] = await events_of(db, ws.workspace_id, "workspace.paused")
    assert paused.data["reason"] == "bounce_rate" and paused.data["paused_by"] == "health"
    assert paused.data["workspace"]["id"] == ws.workspace_id
    assert paused.data["bounce_rate"] == round(3 / 23, 6) and paused.data["paused_at"]

    refused = await client.post("/api/v1/sending/resume", headers=ws.headers)
    assert refused.status_code == 403
    assert refused.json()["error"].startswith("Sending is paused for this account")
    send = {
        "to": "ok0@mail.example",
        "from_email": "news@shop.example",
        "subject": "Hi",
        "text_content": "Hello",
    }
    blocked = await client.post("/api/v1/send", json=send, headers=ws.headers)
    assert blocked.status_code == 403

    done = run_cli("admin", "resume-sending", ws.workspace_id, env=cli_env)
    assert done.returncode == 0, done.stderr
    resumed = (await ok(await client.get("/api/v1/sending", headers=ws.headers)))["sending"]
    assert resumed["paused"] is False
    assert resumed["messages_in_window"] == 0  # counted again from the resume
    await ok(await client.post("/api/v1/send", json=send, headers=ws.headers), 202)


async def test_a_warning_once_a_day_and_sending_goes_on(client, db, ws, sink, driver):
    await verified_domain(client, db, ws)
    await _campaign_to(client, db, ws, driver, good=30, bouncing=2)  # 2/32 = 6.25 %
    await _campaign_to(client, db, ws, driver, good=30, bouncing=1, batch="b")  # 3/63
    [warning] = await events_of(db, ws.workspace_id, "workspace.health_warning")
    assert warning.data["reason"] == "bounce_rate"
    assert warning.data["messages_in_window"] == 32
    sending = (await ok(await client.get("/api/v1/sending", headers=ws.headers)))["sending"]
    assert sending["paused"] is False
    assert await events_of(db, ws.workspace_id, "workspace.paused") == []


async def test_nothing_is_decided_before_the_minimum(client, db, ws, sink, driver):
    await verified_domain(client, db, ws)
    await _campaign_to(client, db, ws, driver, good=10, bouncing=5)  # 33 % of only 15
    sending = (await ok(await client.get("/api/v1/sending", headers=ws.headers)))["sending"]
    assert sending["paused"] is False and sending["messages_in_window"] == 15
    assert (
        await events_of(db, ws.workspace_id, "workspace.paused", "workspace.health_warning") == []
    )
