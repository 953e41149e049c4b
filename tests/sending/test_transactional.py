"""`POST /api/v1/send`: one message to one subscribed contact, queued ahead of campaign
batches, sent by the engine, its status readable at `GET /api/v1/send/{id}`; every refusal
exact and nothing queued."""

from __future__ import annotations

from email import policy
from email.parser import BytesParser

from sqlalchemy import func, select, update

from mailroom.core.clock import utcnow
from mailroom.models import Contact, SendLog, SendMeter, Suppression
from mailroom.sending.limits import hour_period, month_period
from tests.sending.conftest import verified_domain
from tests.sending.helpers import make_campaign, make_contacts, make_list, ok, send_campaign

SEND = "/api/v1/send"


async def identity(client, ws, **fields):
    body = {"from_email": "hello@shop.example", "from_name": "Shop", **fields}
    return (await ok(await client.patch("/api/v1/sending", json=body, headers=ws.headers)))[
        "sending"
    ]


async def queued_rows(db) -> int:
    async with db.session() as session:
        return int(await session.scalar(select(func.count()).select_from(SendLog)) or 0)


async def test_a_message_is_queued_sent_and_its_status_follows(client, db, ws, sink, driver):
    await verified_domain(client, db, ws)
    await identity(client, ws, reply_to="help@shop.example")
    await make_contacts(client, ws, ["jane@mail.example"], first_name="Jane")
    response = await client.post(
        SEND,
        json={
            "to": "Jane@Mail.example",
            "subject": "Your order {{ vars.order }}",
            "html_content": "<p>Hi {{ first_name }}, order {{ vars.order }} ships today.</p>",
            "variables": {"order": "A-1001"},
        },
        headers=ws.headers,
    )
    message = (await ok(response, 202))["message"]
    assert (message["status"], message["to"]) == ("queued", "jane@mail.example")
    assert message["created_at"]
    first = await ok(await client.get(f"{SEND}/{message['id']}", headers=ws.headers))
    assert first["message"]["status"] == "queued"

    await driver.drain()

    [received] = sink.received
    parsed = BytesParser(policy=policy.default).parsebytes(received.data)
    assert parsed["Subject"] == "Your order A-1001"
    assert parsed["From"] == "Shop <hello@shop.example>"
    assert parsed["Reply-To"] == "help@shop.example"
    assert "Hi Jane, order A-1001 ships today." in parsed.get_body(("html",)).get_content()
    assert "Hi Jane, order A-1001 ships today." in parsed.get_body(("plain",)).get_content()
    after = (await ok(await client.get(f"{SEND}/{message['id']}", headers=ws.headers)))["message"]
    assert after["status"] == "sent"
    assert after["message_id"] == parsed["Message-ID"]
    assert after["sent_at"] is not None


async def test_a_template_and_an_explicit_sender(client, db, ws, sink, driver):
    await verified_domain(client, db, ws)
    [contact] = await make_contacts(client, ws, ["tom@mail.example"], first_name="Tom")
    template = await ok(
        await client.post(
            "/api/v1/templates",
            json={
                "name": "Receipt",
                "subject": "Receipt for {{ first_name }}",
                "text_content": "Paid.",
            },
            headers=ws.headers,
        ),
        201,
    )
    response = await client.post(
        SEND,
        json={
            "contact_id": contact,
            "template_id": template["template"]["id"],
            "from_email": "billing@shop.example",
        },
        headers=ws.headers,
    )
    await ok(response, 202)
    await driver.drain()
    [received] = sink.received
    parsed = BytesParser(policy=policy.default).parsebytes(received.data)
    assert parsed["Subject"] == "Receipt for Tom"
    assert parsed["From"] == "billing@shop.example"
    assert parsed.get_body(("plain",)).get_content().strip() == "Paid."


async def test_a_bounce_shows_on_the_message(client, db, ws, sink, driver):
    await verified_domain(client, db, ws)
    await identity(client, ws)
    await make_contacts(client, ws, ["bounce-x@mail.example"])
    message = (
        await ok(
            await client.post(
                SEND,
                json={"to": "bounce-x@mail.example", "subject": "Hi", "text_content": "Hello"},
                headers=ws.headers,
            ),
            202,
        )
    )["message"]
    await driver.drain()
    after = (await ok(await client.get(f"{SEND}/{message['id']}", headers=ws.headers)))["message"]
    assert after["status"] == "bounced"
    assert after["error"].startswith("550")


async def test_transactional_messages_go_ahead_of_campaign_batches(client, db, ws, sink, driver):
    await verified_domain(client, db, ws)
    await identity(client, ws)
    news = await make_list(client, ws)
    await make_contacts(client, ws, [f"c{i}@mail.example" for i in range(6)], news)
    campaign = await make_campaign(client, ws, news)
    await send_campaign(client, ws, campaign["id"])
    await ok(
        await client.post(
            SEND,
            json={"to": "c5@mail.example", "subject": "Reset", "text_content": "Your code"},
            headers=ws.headers,
        ),
        202,
    )
    driver.engine.batch_size = 2
    claimed = await driver.engine.claim(db, "test-sender")
    # Queued last, claimed first: the six campaign rows were due earlier.
    assert [row.kind for row in claimed] == ["transactional", "campaign"]


async def test_refusals_queue_nothing(client, db, factory, settings):
    ws = await factory.workspace("free")
    await identity(client, ws)
    await make_contacts(client, ws, ["jane@mail.example"])
    left, suppressed = await make_contacts(client, ws, ["left@mail.example", "sup@mail.example"])
    await ok(
        await client.patch(
            f"/api/v1/contacts/{left}", json={"status": "unsubscribed"}, headers=ws.headers
        )
    )
    # Suppressed while still subscribed (e.g. listed before the contact existed).
    async with db.transaction() as session:
        hashed = await session.scalar(select(Contact.email_hash).where(Contact.id == suppressed))
        session.add(
            Suppression(workspace_id=ws.workspace_id, email_hash=hashed, reason="complained")
        )
    body = {"to": "jane@mail.example", "subject": "Hi", "text_content": "Hello"}

    async def refused(status, message=None, prefix=None, json=None, headers=None):
        response = await client.post(SEND, json=json or body, headers=headers or ws.headers)
        assert response.status_code == status, response.text
        if message is not None:
            assert response.json() == {"error": message}
        if prefix is not None:
            assert response.json()["error"].startswith(prefix)
        return response

    await refused(404, "Contact not found", json={**body, "to": "stranger@mail.example"})
    await refused(404, "Contact not found", json={**body, "to": None, "contact_id": "nope"})
    await refused(
        422,
        "The contact is unsubscribed: only a subscribed contact can be mailed",
        json={**body, "to": "left@mail.example"},
    )
    await refused(
        422,
        prefix="The address is on the suppression list",
        json={**body, "to": "sup@mail.example"},
    )
    await refused(400, "to or contact_id is required", json={"subject": "Hi", "text_content": "x"})
    await refused(
        400, "subject is required (or a template_id with one)", json={**body, "subject": ""}
    )
    await refused(
        400,
        "html_content or text_content is required (or a template_id)",
        json={"to": "jane@mail.example", "subject": "Hi"},
    )
    await refused(400, "variables must be an object", json={**body, "variables": [1]})

    reader = await factory.key(ws, ["contacts:read"])
    await refused(403, "Forbidden: transactional:send permission required", headers=reader)
    sender = await factory.key(ws, ["campaigns:send"])
    response = await client.post(SEND, json=body, headers=sender)
    assert response.status_code == 202, response.text  # campaigns:send may send too
    assert await queued_rows(db) == 1

    # The hourly ceiling (Free: 500): 429 with Retry-After.
    async with db.transaction() as session:
        session.add(SendMeter(account_id=ws.account_id, period=hour_period(utcnow()), count=500))
    limited = await refused(429, prefix="Hourly sending limit reached (500 on the Free plan).")
    assert 1 <= int(limited.headers["Retry-After"]) <= 3600

    # The month (Free: 2,000).
    async with db.transaction() as session:
        await session.execute(
            update(SendMeter).where(SendMeter.period == month_period(utcnow())).values(count=2000)
        )
    await refused(403, "Monthly email limit reached (2,000 on the Free plan).")

    await ok(await client.post("/api/v1/sending/pause", headers=ws.headers))
    await refused(403, prefix="Sending is paused for this account")
    assert await queued_rows(db) == 1


async def test_an_unverified_sender_is_refused_when_a_relay_is_configured(client, db, ws, sink):
    await identity(client, ws, from_email="hello@elsewhere.example")
    await make_contacts(client, ws, ["jane@mail.example"])
    response = await client.post(
        SEND,
        json={"to": "jane@mail.example", "subject": "Hi", "text_content": "Hello"},
        headers=ws.headers,
    )
    assert response.status_code == 422
    assert response.json()["error"].startswith(
        "Sending is not configured: elsewhere.example is not a verified sending domain"
    )
    assert await queued_rows(db) == 0


async def test_unknown_message_is_404(client, ws):
    response = await client.get(f"{SEND}/nope", headers=ws.headers)
    assert (response.status_code, response.json()) == (404, {"error": "Message not found"})
