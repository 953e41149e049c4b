"""Pacing per mailbox provider, through a real SMTP sink: one provider answering 421 is slowed
and retried later while the others finish at full speed, none lost and none twice; a
provider's policy block pauses it for the workspace with `workspace.health_warning`; the
campaign report counts sent, deferred and bounced per provider (MX looked up in DNS)."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from mailroom.campaigns import actions
from mailroom.models import Contact, SendLog
from mailroom.sending import engine, health, outcomes, pacing
from mailroom.sending import service as sending_service
from mailroom.sending.providers import of_mx_host
from tests.dashboard.helpers import signed_in
from tests.dns_server import DnsServer
from tests.reliability.campaign_run import send_status
from tests.sending import helpers
from tests.sending.conftest import verified_domain
from tests.sending.helpers import SendDriver, campaign_body, events_of, import_audience, ok
from tests.sending.sink import Sink

NOW = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
ZONES = {
    "corpmail.io": {"MX": ["10 aspmx.l.google.com", "20 alt1.aspmx.l.google.com"]},
    "fmhost.io": {"MX": ["10 in1-smtp.messagingengine.com"]},
}
GOOGLE = [f"g{i:03d}@gmail.com" for i in range(30)] + [f"c{i:03d}@corpmail.io" for i in range(20)]
OTHERS = (
    [f"o{i:03d}@mailtest.io" for i in range(40)]
    + [f"m{i:03d}@outlook.com" for i in range(10)]
    + [f"f{i:03d}@fmhost.io" for i in range(10)]
)


class Clock:
    """The time of sending and of the pacer, moved by the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, now: datetime) -> None:
        self.now = now
        for module in (actions, engine, health, outcomes, sending_service, helpers):
            monkeypatch.setattr(module, "utcnow", lambda: self.now)
        monkeypatch.setattr(pacing, "monotonic", lambda: self.now.timestamp())


class Answers:
    """The sink's answer per recipient domain, changed by the test."""

    def __init__(self) -> None:
        self.by_domain: dict[str, str] = {}

    def __call__(self, recipient: str) -> str | None:
        return self.by_domain.get(recipient.rpartition("@")[2].lower())


@pytest.fixture
async def answers(settings: Any) -> AsyncIterator[tuple[Answers, Sink]]:
    said = Answers()
    async with Sink(said) as server, DnsServer(ZONES) as dns:
        settings.smtp_url = server.url
        settings.send_processes = 0
        settings.dns_nameservers = [dns.address]
        yield said, server


async def campaign_to(client: Any, db: Any, ws: Any, emails: list[str]) -> str:
    """A sending campaign to `emails` from a verified, established (warm-up skipped) domain."""
    news = await import_audience(client, ws, emails)
    domain = await verified_domain(client, db, ws)
    await ok(
        await client.patch(
            f"/api/v1/domains/{domain['id']}", json={"skip_warmup": True}, headers=ws.headers
        )
    )
    created = await client.post("/api/v1/campaigns", json=campaign_body(news), headers=ws.headers)
    campaign_id = str((await ok(created, 201))["campaign"]["id"])
    await ok(await client.post(f"/api/v1/campaigns/{campaign_id}/send", headers=ws.headers), 202)
    return campaign_id


async def providers_of(client: Any, ws: Any, campaign_id: str) -> dict[str, dict[str, Any]]:
    found = await ok(
        await client.get(f"/api/v1/campaigns/{campaign_id}/report", headers=ws.headers)
    )
    return {p["provider"]: p for p in found["report"]["providers"]}


async def statuses_by_domain(db: Any, campaign_id: str) -> dict[str, Counter[str]]:
    async with db.session() as session:
        rows = await session.execute(
            select(SendLog.email, SendLog.status).where(SendLog.campaign_id == campaign_id)
        )
        out: dict[str, Counter[str]] = {}
        for email, status in rows.all():
            out.setdefault(email.rpartition("@")[2], Counter())[status] += 1
        return out


def test_mx_hosts_name_their_provider() -> None:
    assert of_mx_host("aspmx.l.google.com.") == "google"
    assert of_mx_host("shop-example.mail.protection.outlook.com") == "microsoft"
    assert of_mx_host("mta7.am0.yahoodns.net") == "yahoo"
    assert of_mx_host("mx01.mail.icloud.com") == "apple"
    assert of_mx_host("In1-SMTP.messagingengine.com") == "in1-smtp.messagingengine.com"
    assert pacing.is_block(550, "5.7.1 Message rejected as spam by content filter policy")
    assert pacing.is_block(554, "Service unavailable; Client host blocked using Spamhaus")
    assert not pacing.is_block(550, "5.1.1 No such user")
    assert not pacing.is_block(451, "4.7.0 policy: try again later")


async def test_a_deferring_provider_waits_while_the_others_finish_none_lost(
    app: Any,
    client: Any,
    db: Any,
    settings: Any,
    ws: Any,
    answers: tuple[Answers, Sink],
    driver: SendDriver,
    monkeypatch: Any,
) -> None:
    said, sink = answers
    person = await signed_in(app, db, settings, ws, "ada@shop.example")
    clock = Clock(monkeypatch, NOW)
    for domain in ("gmail.com", "corpmail.io"):
        said.by_domain[domain] = "421 4.7.0 Try again later, closing connection"
    campaign_id = await campaign_to(client, db, ws, GOOGLE + OTHERS)

    await driver.drain()
    # Everyone else is through at once; Google's recipients wait, tried once each.
    delivered = Counter(r.recipients[0] for r in sink.received)
    assert sorted(delivered) == sorted(OTHERS)
    by_domain = await statuses_by_domain(db, campaign_id)
    assert by_domain["gmail.com"] == {"pending": 30}
    assert by_domain["corpmail.io"] == {"pending": 20}
    assert driver.engine.pacer.resting("google") > 0
    assert "microsoft" not in driver.engine.pacer.providers
    report = await providers_of(client, ws, campaign_id)
    assert report["google"]["sent"] == 0 and report["google"]["deferred"] == 50
    assert {k: (v["sent"], v["deferred"], v["bounced"]) for k, v in report.items()} == {
        "google": (0, 50, 0),
        "other": (40, 0, 0),
        "microsoft": (10, 0, 0),
        "in1-smtp.messagingengine.com": (10, 0, 0),
    }

    # Google answers 421 once more: a longer rest, still nothing lost.
    clock.now += timedelta(minutes=2)
    await driver.drain()
    assert (await providers_of(client, ws, campaign_id))["google"]["deferred"] == 100
    assert (await send_status(db, campaign_id)) == {"sent": 60, "pending": 50}

    # Google takes mail again: the rest goes, at its (reduced) pace, each once.
    said.by_domain.clear()
    clock.now += timedelta(minutes=10)
    for _ in range(20):
        await driver.drain()
        if (await send_status(db, campaign_id)) == {"sent": 110}:
            break
        clock.now += timedelta(seconds=30)
    assert (await send_status(db, campaign_id)) == {"sent": 110}
    delivered = Counter(r.recipients[0] for r in sink.received)
    assert sorted(delivered) == sorted(GOOGLE + OTHERS)
    assert set(delivered.values()) == {1}
    report = await providers_of(client, ws, campaign_id)
    assert (report["google"]["sent"], report["google"]["deferred"]) == (50, 100)
    campaign = await ok(await client.get(f"/api/v1/campaigns/{campaign_id}", headers=ws.headers))
    assert campaign["campaign"]["status"] == "sent"
    # The campaign page shows the same per provider.
    page = await person.get(f"/app/campaigns/{campaign_id}")
    assert page.status_code == 200 and "Mailbox providers" in page.text
    row = page.text.split('<td data-label="Provider">Google (Gmail)</td>', 1)[1].split("</tr>")[0]
    assert '<td data-label="Sent">50</td><td data-label="Deferred">100</td>' in row


async def test_a_policy_block_pauses_that_provider_for_the_workspace(
    app: Any,
    client: Any,
    db: Any,
    settings: Any,
    ws: Any,
    answers: tuple[Answers, Sink],
    driver: SendDriver,
    monkeypatch: Any,
) -> None:
    said, sink = answers
    person = await signed_in(app, db, settings, ws, "ada@shop.example")
    clock = Clock(monkeypatch, NOW)
    said.by_domain["outlook.com"] = "550 5.7.1 Message rejected as spam by content filter policy"
    campaign_id = await campaign_to(client, db, ws, OTHERS)
    await driver.drain()

    by_domain = await statuses_by_domain(db, campaign_id)
    assert by_domain["outlook.com"] == {"pending": 10}  # not bounced: the sender was refused
    assert by_domain["mailtest.io"] == {"sent": 40}
    async with db.session() as session:
        statuses = set(
            (
                await session.scalars(
                    select(Contact.status).where(
                        Contact.workspace_id == ws.workspace_id, Contact.email.like("%@outlook.com")
                    )
                )
            ).all()
        )
    assert statuses == {"subscribed"}
    sending = (await ok(await client.get("/api/v1/sending", headers=ws.headers)))["sending"]
    assert [b["provider"] for b in sending["provider_blocks"]] == ["microsoft"]
    assert "spam" in sending["provider_blocks"][0]["reason"]
    warnings = await events_of(db, ws.workspace_id, "workspace.health_warning")
    assert len(warnings) == 1
    data = warnings[0].data
    assert (data["reason"], data["provider"]) == ("provider_blocked", "microsoft")
    page = await person.get("/settings/sending")
    assert "<strong>microsoft</strong> refused this workspace's mail for policy" in page.text
    assert "waits until 2026-03-02 10:30 UTC" in page.text

    # Within the hour nothing more is tried at Microsoft, even when due.
    tried = len(sink.received)
    clock.now += timedelta(minutes=30)
    await driver.drain()
    assert len(sink.received) == tried
    assert (await statuses_by_domain(db, campaign_id))["outlook.com"] == {"pending": 10}

    said.by_domain.clear()
    clock.now += timedelta(minutes=31)
    await driver.drain()
    assert await send_status(db, campaign_id) == {"sent": 60}
    sending = (await ok(await client.get("/api/v1/sending", headers=ws.headers)))["sending"]
    assert sending["provider_blocks"] == []
