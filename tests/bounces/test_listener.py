"""Reports coming back over a real SMTP conversation to the listener (aiosmtplib client): hard
bounces, soft bounces (three different messages make a hard one), complaints, success reports,
auto-replies, the generic bounces@ address, forged tokens, and the List-Unsubscribe mailto."""

from __future__ import annotations

import asyncio

import aiosmtplib
from sqlalchemy import select

from mailroom.models import DeliveryReport, Suppression
from tests.bounces.fixtures import report
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

JANE = "jane@mail.example"


async def _send(client, db, ws, driver, sink, emails=(JANE,)):
    """A campaign sent to `emails`; (campaign, {email: (return path, message id)})."""
    if not sink.received:
        await verified_domain(client, db, ws)
    news = await make_list(client, ws, name=f"List {len(sink.received)}")
    await make_contacts(client, ws, [e for e in emails if e not in _known(sink)], news)
    if any(e in _known(sink) for e in emails):
        contacts = await ok(await client.get("/api/v1/contacts?limit=100", headers=ws.headers))
        ids = [c["id"] for c in contacts["contacts"] if c["email"] in emails]
        await ok(
            await client.post(
                f"/api/v1/lists/{news}/contacts",
                json={"contact_ids": ids, "status": "confirmed"},
                headers=ws.headers,
            )
        )
    before = len(sink.received)
    campaign = await make_campaign(client, ws, news, name=f"Campaign {before}")
    await send_campaign(client, ws, campaign["id"])
    await driver.drain()
    sent = {}
    for item in sink.received[before:]:
        sent[item.recipients[0]] = (item.sender, item.message_id.strip("<>"))
    return campaign, sent


def _known(sink) -> set[str]:
    return {r.recipients[0] for r in sink.received}


async def _deliver(where, to: str, data: bytes) -> None:
    """As an MTA returns a report: the null reverse-path `MAIL FROM:<>`."""
    host, port = where
    async with aiosmtplib.SMTP(hostname=host, port=port, start_tls=False) as smtp:
        await smtp.mail("")
        await smtp.rcpt(to)
        await smtp.data(data)


async def _contact(client, ws, email=JANE):
    found = await ok(await client.get(f"/api/v1/contacts?q={email}", headers=ws.headers))
    return found["contacts"][0]


async def test_a_hard_bounce_bounces_and_suppresses(client, db, ws, sink, driver, bounce_listener):
    campaign, sent = await _send(client, db, ws, driver, sink)
    return_path, message_id = sent[JANE]
    for shape in ("postfix_hard", "gmail_hard"):  # the second report of the same message: once
        data = report(shape, return_path=return_path, recipient=JANE, message_id=message_id)
        await _deliver(bounce_listener, return_path, data)

    assert (await _contact(client, ws))["status"] == "bounced"
    stats = (await get_campaign(client, ws, campaign["id"]))["stats"]
    assert stats["bounced"] == 1
    [row] = (
        await ok(
            await client.get(f"/api/v1/campaigns/{campaign['id']}/recipients", headers=ws.headers)
        )
    )["recipients"]
    assert row["status"] == "bounced"
    bounced = await events_of(db, ws.workspace_id, "email.bounced")
    assert len(bounced) == 1 and bounced[0].campaign_id == campaign["id"]
    assert "5.1.1" in bounced[0].data["bounce"]["response"]
    assert len(await events_of(db, ws.workspace_id, "contact.bounced")) == 1
    async with db.session() as session:
        [suppressed] = (await session.scalars(select(Suppression))).all()
    assert suppressed.reason == "bounced"


async def test_soft_bounces_of_three_messages_make_a_hard_one(
    client, db, ws, sink, driver, bounce_listener
):
    for n in range(3):
        _campaign, sent = await _send(client, db, ws, driver, sink)
        return_path, message_id = sent[JANE]
        data = report(
            "postfix_delayed", return_path=return_path, recipient=JANE, message_id=message_id
        )
        await _deliver(bounce_listener, return_path, data)
        if n == 0:  # the same message reported twice still counts once
            await _deliver(bounce_listener, return_path, data)
        status = (await _contact(client, ws))["status"]
        assert status == ("bounced" if n == 2 else "subscribed")
        if n < 2:
            assert await events_of(db, ws.workspace_id, "email.bounced") == []
    [hard] = await events_of(db, ws.workspace_id, "email.bounced")
    assert hard.data["bounce"]["response"].startswith("3 soft bounces within 15 days")


async def test_a_delivery_report_between_soft_bounces_starts_the_count_again(
    client, db, ws, sink, driver, bounce_listener
):
    for shape in ("postfix_delayed", "postfix_delayed", "postfix_success", "postfix_delayed"):
        _campaign, sent = await _send(client, db, ws, driver, sink)
        return_path, message_id = sent[JANE]
        data = report(shape, return_path=return_path, recipient=JANE, message_id=message_id)
        await _deliver(bounce_listener, return_path, data)
    assert (await _contact(client, ws))["status"] == "subscribed"
    delivered = await events_of(db, ws.workspace_id, "email.delivered")
    assert len(delivered) == 1


async def test_success_report_is_delivered(client, db, ws, sink, driver, bounce_listener):
    campaign, sent = await _send(client, db, ws, driver, sink)
    return_path, message_id = sent[JANE]
    data = report("postfix_success", return_path=return_path, recipient=JANE, message_id=message_id)
    await _deliver(bounce_listener, return_path, data)
    await _deliver(bounce_listener, return_path, data)
    assert (await get_campaign(client, ws, campaign["id"]))["stats"]["delivered"] == 1
    [event] = await events_of(db, ws.workspace_id, "email.delivered")
    assert event.campaign_id == campaign["id"] and event.data["recipient"]["email"] == JANE


async def test_complaints_from_feedback_loops(client, db, ws, sink, driver, bounce_listener):
    people = ["a@mail.example", "b@mail.example"]
    campaign, sent = await _send(client, db, ws, driver, sink, people)
    for person, shape in zip(people, ("yahoo_arf", "outlook_arf"), strict=True):
        return_path, message_id = sent[person]
        data = report(shape, return_path=return_path, recipient=person, message_id=message_id)
        await _deliver(bounce_listener, return_path, data)
        assert (await _contact(client, ws, person))["status"] == "complained"
    assert (await get_campaign(client, ws, campaign["id"]))["stats"]["complained"] == 2
    assert len(await events_of(db, ws.workspace_id, "email.complained")) == 2
    assert len(await events_of(db, ws.workspace_id, "contact.complained")) == 2
    async with db.session() as session:
        reasons = sorted(s.reason for s in (await session.scalars(select(Suppression))).all())
    assert reasons == ["complained", "complained"]


async def test_a_bounce_never_downgrades_a_complaint(client, db, ws, sink, driver, bounce_listener):
    _campaign, sent = await _send(client, db, ws, driver, sink)
    return_path, message_id = sent[JANE]
    for shape in ("yahoo_arf", "postfix_hard"):
        data = report(shape, return_path=return_path, recipient=JANE, message_id=message_id)
        await _deliver(bounce_listener, return_path, data)
    assert (await _contact(client, ws))["status"] == "complained"
    async with db.session() as session:
        [suppressed] = (await session.scalars(select(Suppression))).all()
    assert suppressed.reason == "complained"


async def test_auto_replies_are_ignored(client, db, ws, sink, driver, bounce_listener):
    _campaign, sent = await _send(client, db, ws, driver, sink)
    return_path, message_id = sent[JANE]
    data = report("auto_reply", return_path=return_path, recipient=JANE, message_id=message_id)
    await _deliver(bounce_listener, return_path, data)
    assert (await _contact(client, ws))["status"] == "subscribed"
    async with db.session() as session:
        assert (await session.scalars(select(DeliveryReport))).all() == []


async def test_forged_tokens_change_nothing_whatever_they_quote(
    client, db, ws, sink, driver, bounce_listener
):
    _campaign, sent = await _send(client, db, ws, driver, sink)
    return_path, message_id = sent[JANE]
    local, domain = return_path.split("@")
    token = local.split("+", 1)[1]
    forged = [
        f"bounces+{token[:-1]}{'a' if token[-1] != 'a' else 'b'}@{domain}",
        f"bounces+{'a' * len(token)}@{domain}",
        f"bounce+{token}@{domain}",
        f"someone@{domain}",
    ]
    for address in forged:
        data = report("postfix_hard", return_path=address, recipient=JANE, message_id=message_id)
        await _deliver(bounce_listener, address, data)
    assert (await _contact(client, ws))["status"] == "subscribed"
    assert await events_of(db, ws.workspace_id, "email.bounced") == []


async def test_the_generic_address_maps_by_message_id(
    client, db, ws, sink, driver, bounce_listener
):
    _campaign, sent = await _send(client, db, ws, driver, sink)
    _return_path, message_id = sent[JANE]
    generic = "bounces@shop.example"
    unknown = report(
        "exim_text", return_path=generic, recipient=JANE, message_id="nope@shop.example"
    )
    await _deliver(bounce_listener, generic, unknown)
    assert (await _contact(client, ws))["status"] == "subscribed"
    data = report("exchange_hard", return_path=generic, recipient=JANE, message_id=message_id)
    await _deliver(bounce_listener, generic, data)
    assert (await _contact(client, ws))["status"] == "bounced"


async def test_the_list_unsubscribe_mailto_unsubscribes(
    client, db, ws, sink, driver, bounce_listener
):
    campaign, _sent = await _send(client, db, ws, driver, sink)
    header = sink.received[-1].parsed()["List-Unsubscribe"]
    mailto = header.split("<mailto:", 1)[1].split(">", 1)[0]
    await _deliver(
        bounce_listener,
        mailto,
        f"From: {JANE}\r\nTo: {mailto}\r\nSubject: unsubscribe\r\n\r\n".encode(),
    )
    assert (await _contact(client, ws))["status"] == "unsubscribed"
    assert (await get_campaign(client, ws, campaign["id"]))["stats"]["unsubscribed"] == 1
    forged = mailto.replace("unsubscribe+", "unsubscribe+x")
    await _deliver(bounce_listener, forged, b"Subject: unsubscribe\r\n\r\n")


async def test_reports_arriving_together_are_acted_on_together_once_each(
    client, db, ws, sink, driver, bounce_listener
):
    """Ten connections at once (the listener writes what arrives during one batch as the
    next): each message's first report acts once, however many copies race, and one report
    the listener cannot map does not turn the others away."""
    people = [f"p{i}@mail.example" for i in range(12)]
    campaign, sent = await _send(client, db, ws, driver, sink, emails=people)
    shapes = ["postfix_hard"] * 8 + ["yahoo_arf"] * 2 + ["postfix_success"] * 2
    deliveries = []
    for person, shape in zip(people, shapes, strict=True):
        return_path, message_id = sent[person]
        data = report(shape, return_path=return_path, recipient=person, message_id=message_id)
        deliveries += [(return_path, data), (return_path, data)]  # every report twice
    forged = sent[people[0]][0].replace("bounces+", "bounces+x")
    deliveries.append((forged, deliveries[0][1]))

    async def connection(items):
        host, port = bounce_listener
        async with aiosmtplib.SMTP(hostname=host, port=port, start_tls=False) as smtp:
            for to, data in items:
                await smtp.mail("")
                await smtp.rcpt(to)
                await smtp.data(data)

    await asyncio.gather(*(connection(deliveries[i::10]) for i in range(10)))

    stats = (await get_campaign(client, ws, campaign["id"]))["stats"]
    assert (stats["bounced"], stats["complained"], stats["delivered"]) == (8, 2, 2)
    assert len(await events_of(db, ws.workspace_id, "email.bounced")) == 8
    assert len(await events_of(db, ws.workspace_id, "email.complained")) == 2
    assert len(await events_of(db, ws.workspace_id, "email.delivered")) == 2
    assert len(await events_of(db, ws.workspace_id, "contact.bounced")) == 8
    assert len(await events_of(db, ws.workspace_id, "contact.complained")) == 2
    statuses = {p: (await _contact(client, ws, p))["status"] for p in people}
    assert statuses == dict(
        zip(people, ["bounced"] * 8 + ["complained"] * 2 + ["subscribed"] * 2, strict=True)
    )
    async with db.session() as session:
        reasons = sorted((await session.scalars(select(Suppression.reason))).all())
        reports = (await session.scalars(select(DeliveryReport.kind))).all()
    assert reasons == ["bounced"] * 8 + ["complained"] * 2
    assert len(reports) == 24  # both copies of every report are kept; the forged one is not
