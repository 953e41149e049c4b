"""Reports coming back over real SMTP for transactional messages and through the generic
`bounces@` address: a transactional message's status follows success reports, complaints and
hard bounces (a complaint is never downgraded); the generic address acts only for the message's
own return-path domain and never next to a forged token; a report naming the original message
only by `Original-Message-ID` maps; soft bounces older than 15 days do not count towards the
three that make a hard bounce (three within 15 days do: see
`test_listener.test_soft_bounces_of_three_messages_make_a_hard_one`; here the edge of the
window)."""

from __future__ import annotations

from datetime import timedelta

import aiosmtplib
import pytest
from sqlalchemy import select, update

from mailroom.core.clock import utcnow
from mailroom.models import DeliveryReport, Suppression
from tests.bounces.fixtures import report
from tests.bounces.test_listener import _contact, _deliver, _send
from tests.sending.conftest import verified_domain
from tests.sending.helpers import events_of, make_contacts, ok

JANE = "jane@mail.example"
TOM = "tom@mail.example"
SEND = "/api/v1/send"


async def _transactional(client, ws, driver, sink, to=JANE):
    """One transactional message to `to`, sent: (its API id, return path, Message-ID)."""
    before = len(sink.received)
    response = await client.post(
        SEND,
        json={
            "to": to,
            "from_email": "orders@shop.example",
            "subject": "Your order",
            "text_content": "It ships today.",
        },
        headers=ws.headers,
    )
    message = (await ok(response, 202))["message"]
    await driver.drain()
    [item] = sink.received[before:]
    assert item.recipients == [to]
    return message["id"], item.sender, item.message_id.strip("<>")


async def _message(client, ws, message_id):
    return (await ok(await client.get(f"{SEND}/{message_id}", headers=ws.headers)))["message"]


async def _setup(client, db, ws, emails=(JANE,)):
    await verified_domain(client, db, ws)
    await make_contacts(client, ws, list(emails))


# ---------------------------------------------------------------- transactional status


async def test_a_transactional_message_follows_delivery_complaint_and_late_bounce(
    client, db, ws, sink, driver, bounce_listener
):
    await _setup(client, db, ws)
    sent_id, return_path, message_id = await _transactional(client, ws, driver, sink)
    assert (await _message(client, ws, sent_id))["status"] == "sent"

    success = report(
        "postfix_success", return_path=return_path, recipient=JANE, message_id=message_id
    )
    await _deliver(bounce_listener, return_path, success)
    delivered = await _message(client, ws, sent_id)
    assert delivered["status"] == "delivered"
    assert delivered["delivered_at"] is not None
    assert delivered["complained_at"] is None and delivered["bounced_at"] is None
    [event] = await events_of(db, ws.workspace_id, "email.delivered")
    assert event.data["recipient"]["email"] == JANE

    complaint = report("yahoo_arf", return_path=return_path, recipient=JANE, message_id=message_id)
    await _deliver(bounce_listener, return_path, complaint)
    complained = await _message(client, ws, sent_id)
    assert complained["status"] == "complained"
    assert complained["complained_at"] is not None
    assert complained["delivered_at"] == delivered["delivered_at"]
    assert (await _contact(client, ws))["status"] == "complained"

    hard = report("postfix_hard", return_path=return_path, recipient=JANE, message_id=message_id)
    await _deliver(bounce_listener, return_path, hard)
    after = await _message(client, ws, sent_id)
    assert after["status"] == "complained"  # never downgraded by a later bounce
    assert after["complained_at"] == complained["complained_at"]
    assert (await _contact(client, ws))["status"] == "complained"
    async with db.session() as session:
        [suppressed] = (await session.scalars(select(Suppression))).all()
    assert suppressed.reason == "complained"
    assert len(await events_of(db, ws.workspace_id, "email.complained")) == 1
    assert len(await events_of(db, ws.workspace_id, "contact.complained")) == 1
    assert await events_of(db, ws.workspace_id, "contact.bounced") == []


async def test_a_transactional_hard_bounce(client, db, ws, sink, driver, bounce_listener):
    await _setup(client, db, ws)
    sent_id, return_path, message_id = await _transactional(client, ws, driver, sink)
    data = report("gmail_hard", return_path=return_path, recipient=JANE, message_id=message_id)
    await _deliver(bounce_listener, return_path, data)

    message = await _message(client, ws, sent_id)
    assert message["status"] == "bounced"
    assert message["bounced_at"] is not None and message["complained_at"] is None
    assert (await _contact(client, ws))["status"] == "bounced"
    [bounced] = await events_of(db, ws.workspace_id, "email.bounced")
    assert bounced.campaign_id is None
    assert bounced.data["recipient"]["email"] == JANE
    assert len(await events_of(db, ws.workspace_id, "contact.bounced")) == 1
    # A bounced contact is not mailed again.
    again = await client.post(
        SEND,
        json={
            "to": JANE,
            "from_email": "orders@shop.example",
            "subject": "Hi",
            "text_content": "x",
        },
        headers=ws.headers,
    )
    assert again.status_code == 422


# ---------------------------------------------------------------- the generic address


def _domain_of(return_path: str) -> str:
    local, _, domain = return_path.rpartition("@")
    assert local.startswith("bounces+"), return_path
    return domain


async def test_the_generic_address_of_the_return_path_domain_acts(
    client, db, ws, sink, driver, bounce_listener
):
    _campaign, sent = await _send(client, db, ws, driver, sink)
    return_path, message_id = sent[JANE]
    generic = f"bounces@{_domain_of(return_path)}"
    data = report("postfix_hard", return_path=generic, recipient=JANE, message_id=message_id)
    await _deliver(bounce_listener, generic, data)
    assert (await _contact(client, ws))["status"] == "bounced"
    assert len(await events_of(db, ws.workspace_id, "email.bounced")) == 1


async def test_the_generic_address_of_another_domain_changes_nothing(
    client, db, ws, sink, driver, bounce_listener
):
    _campaign, sent = await _send(client, db, ws, driver, sink)
    _return_path, message_id = sent[JANE]
    elsewhere = "bounces@some-other-domain.example"
    for shape in ("postfix_hard", "yahoo_arf"):
        data = report(shape, return_path=elsewhere, recipient=JANE, message_id=message_id)
        await _deliver(bounce_listener, elsewhere, data)
    assert (await _contact(client, ws))["status"] == "subscribed"
    assert await events_of(db, ws.workspace_id, "email.bounced", "email.complained") == []
    async with db.session() as session:
        assert (await session.scalars(select(DeliveryReport))).all() == []
        assert (await session.scalars(select(Suppression))).all() == []


async def test_a_forged_token_next_to_the_generic_address_changes_nothing(
    client, db, ws, sink, driver, bounce_listener
):
    _campaign, sent = await _send(client, db, ws, driver, sink)
    return_path, message_id = sent[JANE]
    domain = _domain_of(return_path)
    forged = f"bounces+garbage0token0000@{domain}"
    generic = f"bounces@{domain}"
    data = report("postfix_hard", return_path=generic, recipient=JANE, message_id=message_id)
    for order in ((forged, generic), (generic, forged)):
        host, port = bounce_listener
        async with aiosmtplib.SMTP(hostname=host, port=port, start_tls=False) as smtp:
            await smtp.mail("")
            for to in order:
                await smtp.rcpt(to)
            await smtp.data(data)
    assert (await _contact(client, ws))["status"] == "subscribed"
    assert await events_of(db, ws.workspace_id, "email.bounced") == []
    async with db.session() as session:
        assert (await session.scalars(select(DeliveryReport))).all() == []


def _dsn_naming_original(generic: str, recipient: str, message_id: str, where: str) -> bytes:
    """A hand-written report naming the bounced message only as `Original-Message-ID`: in the
    report's own headers, in its machine-readable part, or in the text of a plain bounce. No
    `Message-ID:` line anywhere, and no returned headers."""
    line = f"Original-Message-ID: <{message_id}>"
    top = line + "\n" if where == "header" else ""
    if where == "text":
        text = (
            "From: Mail Delivery System <MAILER-DAEMON@mx.relay.example>\n"
            f"To: {generic}\n"
            "Subject: Mail delivery failed: returning message to sender\n"
            "MIME-Version: 1.0\n"
            "Content-Type: text/plain; charset=us-ascii\n"
            "\n"
            "This message was created automatically by mail delivery software.\n"
            "\n"
            "A message that you sent could not be delivered to one or more of its\n"
            "recipients. This is a permanent error. The following address(es) failed:\n"
            "\n"
            f"  {recipient}\n"
            "    host mx.mail.example [192.0.2.25]\n"
            "    SMTP error from remote mail server after RCPT TO:\n"
            f"    550 5.1.1 <{recipient}>: Recipient address rejected: User unknown\n"
            "\n"
            f"{line}\n"
        )
    else:
        fields = line + "\n" if where == "status" else ""
        text = (
            "From: MAILER-DAEMON@mx.relay.example (Mail Delivery System)\n"
            f"To: {generic}\n"
            "Subject: Undelivered Mail Returned to Sender\n"
            f"{top}"
            "MIME-Version: 1.0\n"
            'Content-Type: multipart/report; report-type=delivery-status; boundary="OMID"\n'
            "\n"
            "--OMID\n"
            "Content-Type: text/plain; charset=us-ascii\n"
            "\n"
            "Your message could not be delivered to one or more recipients.\n"
            "\n"
            "--OMID\n"
            "Content-Type: message/delivery-status\n"
            "\n"
            "Reporting-MTA: dns; mx.relay.example\n"
            f"{fields}"
            "\n"
            f"Final-Recipient: rfc822; {recipient}\n"
            "Action: failed\n"
            "Status: 5.1.1\n"
            "Diagnostic-Code: smtp; 550 5.1.1 User unknown\n"
            "\n"
            "--OMID--\n"
        )
    assert "\nmessage-id:" not in text.lower() and not text.lower().startswith("message-id:")
    return text.replace("\n", "\r\n").encode()


@pytest.mark.parametrize("where", ["header", "status", "text"])
async def test_a_report_naming_only_the_original_message_id_maps(
    client, db, ws, sink, driver, bounce_listener, where
):
    _campaign, sent = await _send(client, db, ws, driver, sink)
    return_path, message_id = sent[JANE]
    generic = f"bounces@{_domain_of(return_path)}"
    data = _dsn_naming_original(generic, JANE, message_id, where)
    await _deliver(bounce_listener, generic, data)
    assert (await _contact(client, ws))["status"] == "bounced"
    [bounced] = await events_of(db, ws.workspace_id, "email.bounced")
    assert bounced.data["recipient"]["email"] == JANE
    assert "5.1.1" in bounced.data["bounce"]["response"]


# ---------------------------------------------------------------- the soft-bounce window


async def _three_soft_bounces(client, db, ws, driver, sink, bounce_listener, first_age):
    """Three messages to Jane, each soft-bounced; the first report made `first_age` old."""
    sends = [await _transactional(client, ws, driver, sink) for _ in range(3)]
    for n, (_id, return_path, message_id) in enumerate(sends):
        data = report(
            "postfix_delayed", return_path=return_path, recipient=JANE, message_id=message_id
        )
        await _deliver(bounce_listener, return_path, data)
        if n == 0:
            async with db.transaction() as session:
                done = await session.execute(
                    update(DeliveryReport).values(created_at=utcnow() - first_age)
                )
                assert done.rowcount == 1
    return sends


async def test_soft_bounces_older_than_15_days_do_not_count(
    client, db, ws, sink, driver, bounce_listener
):
    await _setup(client, db, ws)
    sends = await _three_soft_bounces(
        client, db, ws, driver, sink, bounce_listener, timedelta(days=15, hours=1)
    )
    assert (await _contact(client, ws))["status"] == "subscribed"
    assert await events_of(db, ws.workspace_id, "email.bounced", "contact.bounced") == []
    for sent_id, _rp, _mid in sends:
        assert (await _message(client, ws, sent_id))["status"] == "sent"
    async with db.session() as session:
        assert (await session.scalars(select(Suppression))).all() == []
        kinds = (await session.scalars(select(DeliveryReport.kind))).all()
    assert kinds == ["soft"] * 3


async def test_soft_bounces_just_within_15_days_make_a_hard_one(
    client, db, ws, sink, driver, bounce_listener
):
    await _setup(client, db, ws)
    sends = await _three_soft_bounces(
        client, db, ws, driver, sink, bounce_listener, timedelta(days=14, hours=23)
    )
    assert (await _contact(client, ws))["status"] == "bounced"
    [hard] = await events_of(db, ws.workspace_id, "email.bounced")
    assert hard.data["bounce"]["response"].startswith("3 soft bounces within 15 days")
    assert (await _message(client, ws, sends[2][0]))["status"] == "bounced"
