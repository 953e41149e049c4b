"""The worker's daily re-check of verified domains (a vanished or changed DKIM record lapses
the domain; a resolver without an answer does not), and domain events reaching webhooks:
`domain_ids` filters and Slack/Teams endpoints."""

from __future__ import annotations

import json
from datetime import timedelta

from sqlalchemy import update

from mailroom.core.clock import utcnow
from mailroom.domains import service as domains_service
from mailroom.models import SendingDomain
from mailroom.worker import WorkerContext, default_loops
from tests.domains.conftest import (
    add_domain,
    events_of,
    publish,
    read_domain,
    record,
    verify,
)
from tests.webhooks.helpers import create_hook, deliveries

LATER = timedelta(hours=25)


async def verified(client, ws, zone, name):
    domain = await add_domain(client, ws, name)
    publish(zone, domain)
    checked = await verify(client, ws, domain["id"])
    assert checked["status"] == "verified"
    return checked


async def recheck(db, settings, after=LATER):
    return await domains_service.recheck_due(db, settings, now=utcnow() + after)


async def domain_events(db, ws):
    return await events_of(db, ws.workspace_id, "domain.verified", "domain.failed")


# ---------------------------------------------------------------- the daily re-check


async def test_a_vanished_dkim_record_lapses_the_domain(client, ws, db, zone, domain_settings):
    domain = await verified(client, ws, zone, "lapse.example")
    zone.remove(record(domain, "dkim")["host"])

    assert await recheck(db, domain_settings, after=timedelta(hours=23)) == 0  # not due yet
    assert (await read_domain(client, ws, domain["id"]))["status"] == "verified"

    assert await recheck(db, domain_settings) == 1
    after = await read_domain(client, ws, domain["id"])
    host = record(domain, "dkim")["host"]
    assert after["status"] == "failed"
    assert after["verified_at"] is None
    assert record(after, "dkim")["status"] == "failed"
    assert record(after, "dkim")["reason"] == f"{host} does not exist in DNS"
    reason = f"lapsed, no longer verified: DKIM: {host} does not exist in DNS"
    assert after["failure_reason"] == reason

    verified_event, failed_event = await domain_events(db, ws)
    assert verified_event.type == "domain.verified"
    assert failed_event.type == "domain.failed" and failed_event.domain_id == domain["id"]
    assert failed_event.data["domain"]["lapsed"] is True
    assert failed_event.data["domain"]["reason"] == reason
    assert failed_event.data["domain"]["failed_records"] == ["dkim"]

    # Failed domains are not re-checked: verifying again is the owner's move.
    assert await recheck(db, domain_settings, after=2 * LATER) == 0


async def test_a_changed_dkim_key_lapses_the_domain(client, ws, db, zone, domain_settings):
    domain = await verified(client, ws, zone, "rekeyed.example")
    other = await add_domain(client, ws, "someone-else.example")
    zone.txt(record(domain, "dkim")["host"], record(other, "dkim")["value"])
    assert await recheck(db, domain_settings) == 1
    after = await read_domain(client, ws, domain["id"])
    assert after["status"] == "failed"
    assert record(after, "dkim")["reason"] == (
        f"the DKIM record at {record(domain, 'dkim')['host']} has another public key"
    )


async def test_a_record_still_there_keeps_the_domain_verified(
    client, ws, db, zone, domain_settings
):
    domain = await verified(client, ws, zone, "steady.example")
    zone.remove("_dmarc.steady.example")  # an advised record going does not lapse it
    assert await recheck(db, domain_settings) == 1
    after = await read_domain(client, ws, domain["id"])
    assert after["status"] == "verified" and after["verified_at"] == domain["verified_at"]
    assert record(after, "dmarc")["status"] == "failed"
    assert after["last_checked_at"] > domain["last_checked_at"]
    assert [e.type for e in await domain_events(db, ws)] == ["domain.verified"]
    # Checked now: not due again for a day.
    assert await recheck(db, domain_settings, after=timedelta(hours=1)) == 0


async def test_no_answer_from_dns_does_not_lapse_a_verified_domain(
    client, ws, db, zone, domain_settings
):
    domain = await verified(client, ws, zone, "flaky.example")
    zone.zones[record(domain, "dkim")["host"]] = {"servfail": True}
    assert await recheck(db, domain_settings) == 1
    after = await read_domain(client, ws, domain["id"])
    assert after["status"] == "verified"
    assert record(after, "dkim")["status"] == "verified"
    assert [e.type for e in await domain_events(db, ws)] == ["domain.verified"]


async def test_each_workspace_gets_its_own_lapse_event(
    client, ws, factory, db, zone, domain_settings
):
    other = await factory.workspace("pro")
    mine = await verified(client, ws, zone, "mine.example")
    theirs = await verified(client, other, zone, "theirs.example")
    zone.remove(record(mine, "dkim")["host"])
    zone.remove(record(theirs, "dkim")["host"])
    assert await recheck(db, domain_settings) == 2
    for workspace, domain in ((ws, mine), (other, theirs)):
        events = await domain_events(db, workspace)
        assert [(e.type, e.domain_id) for e in events] == [
            ("domain.verified", domain["id"]),
            ("domain.failed", domain["id"]),
        ]


async def test_the_worker_runs_the_recheck_loop(client, ws, db, zone, domain_settings):
    domain = await verified(client, ws, zone, "looped.example")
    zone.remove(record(domain, "dkim")["host"])
    [loop] = [lp for lp in default_loops(domain_settings) if lp.name == "recheck-domains"]
    ctx = WorkerContext(db, domain_settings, "test-worker")
    assert await loop.tick(ctx) == 0  # checked minutes ago: not due
    async with db.transaction() as session:  # a day passes
        await session.execute(
            update(SendingDomain)
            .where(SendingDomain.id == domain["id"])
            .values(last_checked_at=utcnow() - LATER)
        )
    assert await loop.tick(ctx) == 1
    assert (await read_domain(client, ws, domain["id"]))["status"] == "failed"


# ---------------------------------------------------------------- webhooks


async def test_domain_ids_filters_take_this_workspaces_domains_only(
    client, ws, factory, hook_settings
):
    mine = await add_domain(client, ws, "filtered.example")
    other = await factory.workspace("pro")
    theirs = await add_domain(client, other, "filtered.example")
    url = "http://127.0.0.1:9/domains"
    hook = await create_hook(
        client, ws, url, ["domain.verified"], filters={"domain_ids": [mine["id"]]}
    )
    assert hook["filters"] == {"domain_ids": [mine["id"]]}
    refused = await client.post(
        "/api/v1/webhooks",
        json={
            "url": url,
            "event_types": ["domain.failed"],
            "filters": {"domain_ids": [mine["id"], theirs["id"]]},
        },
        headers=ws.headers,
    )
    assert refused.status_code == 400
    assert refused.json() == {
        "error": f"filters.domain_ids has ids that are not in this workspace: {theirs['id']}"
    }


async def test_domain_events_reach_scoped_server_slack_and_teams_endpoints(
    client, factory, db, zone, receiver, driver, hook_settings
):
    ws = await factory.workspace("pro", listen=False, name="Acme Shop")
    good = await add_domain(client, ws, "good.example")
    bad = await add_domain(client, ws, "bad.example")
    publish(zone, good)
    events = ["domain.verified", "domain.failed"]
    scoped = await create_hook(
        client, ws, receiver.url("ok/scoped"), events, filters={"domain_ids": [good["id"]]}
    )
    slack = await create_hook(client, ws, receiver.url("ok/slack"), events, channel="slack")
    teams = await create_hook(client, ws, receiver.url("accepted/teams"), events, channel="teams")

    assert (await verify(client, ws, good["id"]))["status"] == "verified"
    assert (await verify(client, ws, bad["id"]))["status"] == "failed"
    await driver.drain()

    [server_call] = receiver.at("ok/scoped")
    body = server_call.json
    assert body["event"] == "domain.verified"
    assert body["data"]["domain"]["id"] == good["id"]

    texts = [r.json["text"] for r in receiver.at("ok/slack")]
    assert len(texts) == 2
    assert any("good.example is verified" in t and "Acme Shop" in t for t in texts)
    [failed_text] = [t for t in texts if "bad.example failed verification" in t]
    assert "DKIM: " in failed_text and "does not exist in DNS" in failed_text

    cards = [json.dumps(r.json) for r in receiver.at("accepted/teams")]
    assert len(cards) == 2
    assert any("good.example" in c for c in cards) and any("bad.example" in c for c in cards)

    for hook, count in ((scoped, 1), (slack, 2), (teams, 2)):
        log = (await deliveries(client, ws, hook["id"]))["deliveries"]
        assert len(log) == count
        assert {entry["status"] for entry in log} == {"delivered"}
