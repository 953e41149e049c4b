"""The sending engine end to end: a campaign goes through the API, the worker's loop sends it
over a real SMTP conversation to a sink on 127.0.0.1, and what arrives is checked as a mailbox
provider would (headers, parts, DKIM against the published record), then what was recorded
(recipients page, stats, events, contacts, suppressions, the plan's meter)."""

from __future__ import annotations

import time
from datetime import timedelta
from email import policy
from email.parser import BytesParser

import dkim as dkimpy
from sqlalchemy import select, update

from mailroom.core.clock import utcnow
from mailroom.models import ListMember, SendLog, SendMeter
from mailroom.sending import pacing
from mailroom.sending.limits import hour_period
from tests.sending.conftest import verified_domain
from tests.sending.helpers import (
    events_of,
    get_campaign,
    make_campaign,
    make_contacts,
    make_list,
    ok,
    recipients,
    send_campaign,
)


def dns_for(domain):
    [published] = [r for r in domain["records"] if r["purpose"] == "dkim"]

    def lookup(name, timeout=5):
        assert name.decode().rstrip(".") == published["host"]
        return published["value"].encode()

    return lookup


async def test_a_campaign_reaches_each_subscribed_recipient_once_signed(
    client, db, ws, sink, driver
):
    domain = await verified_domain(client, db, ws)
    news = await make_list(client, ws)
    jane, tom, _gone = await make_contacts(
        client,
        ws,
        ["jane@mail.example", "tom@mail.example", "gone@mail.example"],
        news,
    )
    await ok(
        await client.patch(
            f"/api/v1/contacts/{jane}", json={"first_name": "Jane"}, headers=ws.headers
        )
    )
    await ok(
        await client.patch(
            f"/api/v1/contacts/{_gone}", json={"status": "unsubscribed"}, headers=ws.headers
        )
    )
    await make_contacts(client, ws, ["elsewhere@mail.example"])  # not in the audience
    campaign = await make_campaign(client, ws, news)

    started = await send_campaign(client, ws, campaign["id"])
    assert started["status"] == "sending"
    assert started["stats"]["recipients"] == 2
    assert started["started_at"] is not None
    queued = await recipients(client, ws, campaign["id"])
    assert sorted((r["email"], r["status"]) for r in queued) == [
        ("jane@mail.example", "queued"),
        ("tom@mail.example", "queued"),
    ]

    await driver.drain()

    received = {r.recipients[0]: r for r in sink.received}
    assert sorted(received) == ["jane@mail.example", "tom@mail.example"]
    assert len(sink.received) == 2
    message = BytesParser(policy=policy.default).parsebytes(received["jane@mail.example"].data)
    assert message["Subject"] == "Spring sale, Jane"
    assert message["From"] == "Shop <news@shop.example>"
    assert message["To"] == "Jane <jane@mail.example>"  # her name, as the contact has it
    assert b'\r\nTo: "Jane" <jane@mail.example>\r\n' in received["jane@mail.example"].data
    assert message.get_content_type() == "multipart/alternative"
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    assert "Hello Jane," in text and "spring sale (https://shop.example/sale)" in text
    assert '<p style="color: #333;">Hello Jane,</p>' in html  # the <style> block inlined
    tom_html = BytesParser(policy=policy.default).parsebytes(received["tom@mail.example"].data)
    assert "Hello there," in tom_html.get_body(("html",)).get_content()

    # List-Unsubscribe (https + mailto), one-click, both signed; the envelope is VERP.
    unsubscribe = message["List-Unsubscribe"]
    assert (
        unsubscribe.startswith("<http://testserver/u/") and ", <mailto:unsubscribe+" in unsubscribe
    )
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert received["jane@mail.example"].sender.startswith("bounces+")
    assert received["jane@mail.example"].sender.endswith("@shop.example")
    signature = message["DKIM-Signature"]
    assert "d=shop.example" in signature.replace(" ", "")
    signed = signature.replace(" ", "").replace("\t", "").replace("\r\n", "").lower()
    assert "list-unsubscribe:list-unsubscribe-post" in signed or (
        "list-unsubscribe" in signed and "list-unsubscribe-post" in signed
    )
    for item in sink.received:
        assert dkimpy.verify(item.data, dnsfunc=dns_for(domain)), item.recipients

    finished = await get_campaign(client, ws, campaign["id"])
    assert finished["status"] == "sent"
    assert finished["finished_at"] is not None
    assert finished["stats"] | {} == {
        "recipients": 2,
        "sent": 2,
        "failed": 0,
        "skipped": 0,
        "delivered": 0,
        "opened": 0,
        "clicked": 0,
        "bounced": 0,
        "complained": 0,
        "unsubscribed": 0,
    }
    rows = {r["email"]: r for r in await recipients(client, ws, campaign["id"])}
    assert rows["jane@mail.example"]["status"] == "sent"
    assert rows["jane@mail.example"]["contact_id"] == jane
    assert rows["jane@mail.example"]["message_id"] == message["Message-ID"]
    assert rows["tom@mail.example"]["contact_id"] == tom
    assert rows["jane@mail.example"]["sent_at"] is not None

    sent_events = await events_of(db, ws.workspace_id, "email.sent", "campaign.sent")
    assert sorted(e.type for e in sent_events) == ["campaign.sent", "email.sent", "email.sent"]
    [done] = [e for e in sent_events if e.type == "campaign.sent"]
    assert done.data["campaign"]["id"] == campaign["id"]
    assert done.data["campaign"]["sent"] == 2

    sending = (await ok(await client.get("/api/v1/sending", headers=ws.headers)))["sending"]
    assert sending["sent_this_month"] == 2
    assert sending["sent_this_hour"] == 2

    # Draining again sends nothing more and fires no second campaign.sent.
    await driver.drain()
    assert len(sink.received) == 2
    assert len(await events_of(db, ws.workspace_id, "campaign.sent")) == 1


async def test_a_contact_who_left_after_the_snapshot_is_skipped(client, db, ws, sink, driver):
    await verified_domain(client, db, ws)
    news = await make_list(client, ws)
    _stays, leaves, deleted = await make_contacts(
        client, ws, ["stays@mail.example", "leaves@mail.example", "deleted@mail.example"], news
    )
    campaign = await make_campaign(client, ws, news)
    await send_campaign(client, ws, campaign["id"])
    await ok(
        await client.patch(
            f"/api/v1/contacts/{leaves}", json={"status": "unsubscribed"}, headers=ws.headers
        )
    )
    await ok(await client.delete(f"/api/v1/contacts/{deleted}", headers=ws.headers))

    await driver.drain()

    assert [r.recipients for r in sink.received] == [["stays@mail.example"]]
    rows = {r["status"] for r in await recipients(client, ws, campaign["id"])}
    assert rows == {"sent", "skipped"}
    finished = await get_campaign(client, ws, campaign["id"])
    assert finished["status"] == "sent"
    assert (finished["stats"]["sent"], finished["stats"]["skipped"]) == (1, 2)
    # What was skipped is given back to the month's allowance.
    sending = (await ok(await client.get("/api/v1/sending", headers=ws.headers)))["sending"]
    assert sending["sent_this_month"] == 1


async def test_a_refused_recipient_is_a_hard_bounce(client, db, ws, sink, driver):
    await verified_domain(client, db, ws)
    news = await make_list(client, ws)
    _ok, bounced = await make_contacts(
        client, ws, ["fine@mail.example", "bounce-me@mail.example"], news
    )
    campaign = await make_campaign(client, ws, news)
    await send_campaign(client, ws, campaign["id"])

    await driver.drain()

    contact = (await ok(await client.get(f"/api/v1/contacts/{bounced}", headers=ws.headers)))[
        "contact"
    ]
    assert contact["status"] == "bounced"
    found = await client.get(
        "/api/v1/suppressions", params={"email": "bounce-me@mail.example"}, headers=ws.headers
    )
    check = await ok(found)
    assert (check["suppressed"], check["reason"]) == (True, "bounced")
    rows = {r["email"]: r for r in await recipients(client, ws, campaign["id"])}
    assert rows["bounce-me@mail.example"]["status"] == "bounced"
    assert rows["bounce-me@mail.example"]["error"].startswith("550")
    finished = await get_campaign(client, ws, campaign["id"])
    assert finished["status"] == "sent"
    assert (finished["stats"]["sent"], finished["stats"]["bounced"]) == (1, 1)
    types = sorted(e.type for e in await events_of(db, ws.workspace_id) if "bounce" in e.type)
    assert types == ["contact.bounced", "email.bounced"]


async def test_a_temporary_refusal_is_retried_later(client, db, ws, sink, driver, monkeypatch):
    await verified_domain(client, db, ws)
    news = await make_list(client, ws)
    [later] = await make_contacts(client, ws, ["defer-1@mail.example"], news)
    campaign = await make_campaign(client, ws, news)
    await send_campaign(client, ws, campaign["id"])

    await driver.drain()

    [row] = await recipients(client, ws, campaign["id"])
    assert row["status"] == "queued"
    assert row["error"].startswith("451")
    async with db.session() as session:
        stored = await session.scalar(select(SendLog).where(SendLog.contact_id == later))
    assert stored.attempts == 1
    assert stored.run_at > utcnow() + timedelta(seconds=30)
    assert (await get_campaign(client, ws, campaign["id"]))["status"] == "sending"

    # The relay takes it next time; the retry comes due, after the provider's rest (its 451
    # rested it: pacing per provider) is over too.
    sink.handler.answer = lambda _recipient: None
    async with db.transaction() as session:
        await session.execute(update(SendLog).values(run_at=utcnow()))
    assert driver.engine.pacer.resting("other:mail.example") > 0
    monkeypatch.setattr(pacing, "monotonic", lambda: time.monotonic() + 3600)
    await driver.drain()
    assert [r.recipients for r in sink.received] == [["defer-1@mail.example"]]
    assert (await get_campaign(client, ws, campaign["id"]))["status"] == "sent"


async def test_a_cancelled_campaign_sends_nothing_more(client, db, ws, sink, driver):
    await verified_domain(client, db, ws)
    news = await make_list(client, ws)
    await make_contacts(client, ws, [f"c{i}@mail.example" for i in range(3)], news)
    campaign = await make_campaign(client, ws, news)
    await send_campaign(client, ws, campaign["id"])
    cancelled = await client.post(f"/api/v1/campaigns/{campaign['id']}/cancel", headers=ws.headers)
    assert (await ok(cancelled))["campaign"]["status"] == "cancelled"

    await driver.drain()

    assert sink.received == []
    assert {r["status"] for r in await recipients(client, ws, campaign["id"])} == {"skipped"}
    sending = (await ok(await client.get("/api/v1/sending", headers=ws.headers)))["sending"]
    assert sending["sent_this_month"] == 0
    again = await client.post(f"/api/v1/campaigns/{campaign['id']}/cancel", headers=ws.headers)
    assert again.status_code == 409
    assert again.json() == {
        "error": "Campaign is cancelled: only a scheduled or sending campaign can be cancelled"
    }


async def test_a_paused_workspace_sends_nothing_until_it_resumes(client, db, ws, sink, driver):
    await verified_domain(client, db, ws)
    news = await make_list(client, ws)
    await make_contacts(client, ws, ["a@mail.example", "b@mail.example"], news)
    campaign = await make_campaign(client, ws, news)
    await send_campaign(client, ws, campaign["id"])
    paused = await client.post("/api/v1/sending/pause", headers=ws.headers)
    assert (await ok(paused))["sending"]["paused"] is True

    for _ in range(5):
        await driver.engine.tick(driver.ctx)
    assert sink.received == []
    assert (await get_campaign(client, ws, campaign["id"]))["status"] == "sending"

    await ok(await client.post("/api/v1/sending/resume", headers=ws.headers))
    await driver.drain()
    assert len(sink.received) == 2
    assert (await get_campaign(client, ws, campaign["id"]))["status"] == "sent"


async def test_the_hourly_ceiling_holds_the_rest_for_the_next_hour(
    client, db, factory, sink, driver
):
    ws = await factory.workspace("free")
    await verified_domain(client, db, ws)
    news = await make_list(client, ws)
    await make_contacts(client, ws, [f"h{i}@mail.example" for i in range(3)], news)
    async with db.transaction() as session:  # Free mails only who confirmed a list
        await session.execute(update(ListMember).values(status="confirmed"))
    # Free: 500 an hour; 499 already went this hour.
    async with db.transaction() as session:
        session.add(SendMeter(account_id=ws.account_id, period=hour_period(utcnow()), count=499))
    campaign = await make_campaign(client, ws, news)
    await send_campaign(client, ws, campaign["id"])

    await driver.drain()

    assert len(sink.received) == 1
    async with db.session() as session:
        waiting = (
            await session.scalars(select(SendLog.run_at).where(SendLog.status == "pending"))
        ).all()
    assert len(waiting) == 2
    next_hour = utcnow().replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    assert all(at >= next_hour for at in waiting)
    assert (await get_campaign(client, ws, campaign["id"]))["status"] == "sending"


async def test_two_engines_share_a_campaign_and_finish_it_once(client, db, ws, sink, settings):
    from tests.sending.helpers import SendDriver

    await verified_domain(client, db, ws)
    news = await make_list(client, ws)
    await make_contacts(client, ws, [f"s{i}@mail.example" for i in range(12)], news)
    settings.send_batch = 2
    campaign = await make_campaign(client, ws, news)
    await send_campaign(client, ws, campaign["id"])
    one, two = SendDriver(db, settings), SendDriver(db, settings)
    two.ctx = type(two.ctx)(db, settings, "second-sender")
    try:
        import asyncio

        await asyncio.gather(one.drain(), two.drain())
    finally:
        await one.close()
        await two.close()
    addresses = sorted(r.recipients[0] for r in sink.received)
    assert addresses == sorted(f"s{i}@mail.example" for i in range(12))
    assert len(await events_of(db, ws.workspace_id, "campaign.sent")) == 1
    assert len(await events_of(db, ws.workspace_id, "email.sent")) == 12
