"""Warm-up: a newly verified domain's campaign mail is held to a daily allowance that grows a
stage a UTC day while bounces and complaints stay low; what today cannot carry goes on later
days, none twice; an admin may skip it (audit-logged) and what waits then goes at once."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mailroom.campaigns import actions
from mailroom.domains import service as domains_service
from mailroom.sending import engine, health, outcomes
from tests.reliability.campaign_run import send_status
from tests.sending import helpers
from tests.sending.conftest import verified_domain
from tests.sending.helpers import (
    SendDriver,
    campaign_body,
    get_campaign,
    import_audience,
    ok,
    send_campaign,
)
from tests.sending.sink import Sink

DAY_ONE = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)


class Clock:
    """The time every step of sending and the domain's view reads, moved by the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, now: datetime) -> None:
        self.now = now
        for module in (actions, engine, health, outcomes, domains_service, helpers):
            monkeypatch.setattr(module, "utcnow", lambda: self.now)


async def warmup_of(client: Any, ws: Any, domain_id: str) -> dict[str, Any]:
    found = await ok(await client.get(f"/api/v1/domains/{domain_id}", headers=ws.headers))
    return dict(found["domain"]["warmup"])


async def start(client: Any, ws: Any, news: str) -> str:
    created = await client.post("/api/v1/campaigns", json=campaign_body(news), headers=ws.headers)
    campaign = (await ok(created, 201))["campaign"]
    await send_campaign(client, ws, campaign["id"])
    return str(campaign["id"])


async def test_a_campaign_over_the_days_allowance_finishes_on_later_days_none_twice(
    client: Any, db: Any, ws: Any, sink: Sink, driver: SendDriver, monkeypatch: Any
) -> None:
    clock = Clock(monkeypatch, DAY_ONE)
    emails = [f"reader{i:04d}@mailtest.io" for i in range(900)]
    news = await import_audience(client, ws, emails)
    domain = await verified_domain(client, db, ws)
    assert await warmup_of(client, ws, domain["id"]) == {
        "stage": 1,
        "daily_limit": 200,
        "sent_today": 0,
        "skipped": False,
    }
    campaign_id = await start(client, ws, news)

    await driver.drain()
    assert len(sink.received) == 200
    assert await send_status(db, campaign_id) == {"sent": 200, "pending": 700}
    assert await warmup_of(client, ws, domain["id"]) == {
        "stage": 1,
        "daily_limit": 200,
        "sent_today": 200,
        "skipped": False,
    }
    assert (await get_campaign(client, ws, campaign_id))["status"] == "sending"
    # Later the same day: nothing more goes.
    clock.now = DAY_ONE.replace(hour=23, minute=59)
    await driver.drain()
    assert len(sink.received) == 200

    # Day two, before anything is sent: the next stage, nothing sent yet.
    clock.now = DAY_ONE.replace(hour=0, minute=0, second=1) + timedelta(days=1)
    assert await warmup_of(client, ws, domain["id"]) == {
        "stage": 2,
        "daily_limit": 500,
        "sent_today": 0,
        "skipped": False,
    }
    await driver.drain()
    assert len(sink.received) == 700
    assert await send_status(db, campaign_id) == {"sent": 700, "pending": 200}
    assert (await warmup_of(client, ws, domain["id"]))["sent_today"] == 500

    clock.now += timedelta(days=1)
    await driver.drain()
    assert await send_status(db, campaign_id) == {"sent": 900}
    assert await warmup_of(client, ws, domain["id"]) == {
        "stage": 3,
        "daily_limit": 1000,
        "sent_today": 200,
        "skipped": False,
    }
    assert (await get_campaign(client, ws, campaign_id))["status"] == "sent"
    delivered = Counter(r.recipients[0] for r in sink.received)
    assert sorted(delivered) == emails
    assert set(delivered.values()) == {1}


async def test_the_stage_stays_while_bounces_are_over_the_warning_level(
    client: Any, db: Any, ws: Any, sink: Sink, driver: SendDriver, monkeypatch: Any
) -> None:
    clock = Clock(monkeypatch, DAY_ONE)
    # One in twenty refused for good: a 5 % bounce rate, over the 4 % warning (under the
    # 8 % that pauses the workspace).
    emails = [
        f"bounce{i:04d}@mailtest.io" if i % 20 == 0 else f"reader{i:04d}@mailtest.io"
        for i in range(400)
    ]
    news = await import_audience(client, ws, emails)
    domain = await verified_domain(client, db, ws)
    campaign_id = await start(client, ws, news)
    await driver.drain()
    status = await send_status(db, campaign_id)
    assert status["pending"] == 200 and status["sent"] + status["bounced"] == 200

    clock.now += timedelta(days=1)
    assert (await warmup_of(client, ws, domain["id"]))["stage"] == 1
    await driver.drain()
    assert await send_status(db, campaign_id) == {"sent": 380, "bounced": 20}
    assert await warmup_of(client, ws, domain["id"]) == {
        "stage": 1,
        "daily_limit": 200,
        "sent_today": 200,
        "skipped": False,
    }


async def test_messages_that_did_not_go_out_are_given_back_to_the_day(
    client: Any, db: Any, ws: Any, sink: Sink, driver: SendDriver, monkeypatch: Any
) -> None:
    Clock(monkeypatch, DAY_ONE)
    # 150 are deferred by the relay (451): tried again later, not counted as sent today.
    emails = [f"defer{i:04d}@slowmail.io" for i in range(150)] + [
        f"reader{i:04d}@mailtest.io" for i in range(150)
    ]
    news = await import_audience(client, ws, emails)
    domain = await verified_domain(client, db, ws)
    campaign_id = await start(client, ws, news)
    await driver.drain()
    assert (await warmup_of(client, ws, domain["id"]))["sent_today"] == 150
    assert await send_status(db, campaign_id) == {"sent": 150, "pending": 150}


async def test_an_admin_key_skips_warm_up_and_what_waits_goes_at_once(
    client: Any, db: Any, ws: Any, factory: Any, sink: Sink, driver: SendDriver, monkeypatch: Any
) -> None:
    Clock(monkeypatch, DAY_ONE)
    emails = [f"reader{i:04d}@mailtest.io" for i in range(300)]
    news = await import_audience(client, ws, emails)
    domain = await verified_domain(client, db, ws)
    campaign_id = await start(client, ws, news)
    await driver.drain()
    assert await send_status(db, campaign_id) == {"sent": 200, "pending": 100}
    path = f"/api/v1/domains/{domain['id']}"

    writer = await factory.key(ws, ["campaigns:read", "campaigns:write"])
    refused = await client.patch(path, json={"skip_warmup": True}, headers=writer)
    assert refused.status_code == 403
    assert refused.json() == {"error": "Forbidden: campaigns:send permission required"}
    for wrong in (False, None, "yes", 1):
        bad = await client.patch(path, json={"skip_warmup": wrong}, headers=ws.headers)
        assert bad.status_code == 400, wrong
        assert bad.json() == {"error": "skip_warmup must be true (warm-up cannot be restarted)"}
    assert (await warmup_of(client, ws, domain["id"]))["skipped"] is False

    skipped = await ok(await client.patch(path, json={"skip_warmup": True}, headers=ws.headers))
    assert skipped["domain"]["warmup"] == {
        "stage": 1,
        "daily_limit": None,
        "sent_today": 200,
        "skipped": True,
    }
    # The same day: the 100 waiting for tomorrow go now.
    await driver.drain()
    assert await send_status(db, campaign_id) == {"sent": 300}
    assert (await get_campaign(client, ws, campaign_id))["status"] == "sent"
    assert len({r.recipients[0] for r in sink.received}) == 300

    log = await ok(await client.get("/api/v1/account/audit-log", headers=ws.headers))
    entry = next(e for e in log["entries"] if e["operation"] == "skip_warmup")
    assert entry["target_id"] == domain["id"] and entry["status"] == 200
