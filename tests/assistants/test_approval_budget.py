"""Transactional sends by an assistant are never held, but count toward the daily recipient
budget set when it was connected: past it, 403 and nothing queued. A refused send spends
nothing; keys and assistants without a budget are unaffected; the budget renews each UTC day."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select

from mailroom.core.clock import utcnow
from mailroom.models import SendLog
from mailroom.sending import budget
from tests.assistants.connect import connect_assistant
from tests.sending.helpers import make_contacts, ok

SEND = "/api/v1/send"
SPENT = "Forbidden: this assistant's daily recipient budget (2) is spent; it renews at 00:00 UTC"


def message(to: str) -> dict[str, str]:
    return {"to": to, "subject": "Your order", "text_content": "It ships today."}


async def queued(db) -> int:
    async with db.session() as session:
        return int(await session.scalar(select(func.count()).select_from(SendLog)) or 0)


async def ready(client, ws) -> None:
    await ok(
        await client.patch(
            "/api/v1/sending", json={"from_email": "hello@shop.example"}, headers=ws.headers
        )
    )
    await make_contacts(client, ws, ["a@mail.example", "b@mail.example", "c@mail.example"])


async def test_the_budget_refuses_once_spent_and_keys_are_unaffected(client, db, ws):
    await ready(client, ws)
    agent, _ = await connect_assistant(client, ws, ["transactional:send"], daily_recipient_budget=2)
    for to in ("a@mail.example", "b@mail.example"):
        sent = await ok(await client.post(SEND, json=message(to), headers=agent), 202)
        assert sent["message"]["status"] == "queued"  # not held: it goes at once
    assert await queued(db) == 2

    over = await client.post(SEND, json=message("c@mail.example"), headers=agent)
    assert (over.status_code, over.json()) == (403, {"error": SPENT})
    assert await queued(db) == 2

    # The workspace's key, and an assistant connected without a budget, send on.
    await ok(await client.post(SEND, json=message("c@mail.example"), headers=ws.headers), 202)
    unbounded, _ = await connect_assistant(client, ws, ["transactional:send"])
    await ok(await client.post(SEND, json=message("c@mail.example"), headers=unbounded), 202)
    # Another assistant's budget is its own.
    other, _ = await connect_assistant(client, ws, ["transactional:send"], daily_recipient_budget=2)
    await ok(await client.post(SEND, json=message("a@mail.example"), headers=other), 202)
    assert await queued(db) == 5
    still = await client.post(SEND, json=message("a@mail.example"), headers=agent)
    assert (still.status_code, still.json()) == (403, {"error": SPENT})


async def test_a_refused_send_spends_nothing_and_a_zero_budget_sends_nothing(client, db, ws):
    await ready(client, ws)
    agent, _ = await connect_assistant(client, ws, ["transactional:send"], daily_recipient_budget=1)
    unknown = await client.post(SEND, json=message("nobody@mail.example"), headers=agent)
    assert (unknown.status_code, unknown.json()) == (404, {"error": "Contact not found"})
    await ok(await client.post(SEND, json=message("a@mail.example"), headers=agent), 202)
    over = await client.post(SEND, json=message("b@mail.example"), headers=agent)
    assert over.status_code == 403
    assert over.json()["error"].startswith("Forbidden: this assistant's daily recipient budget (1)")

    muted, _ = await connect_assistant(client, ws, ["transactional:send"], daily_recipient_budget=0)
    refused = await client.post(SEND, json=message("a@mail.example"), headers=muted)
    assert refused.status_code == 403
    assert await queued(db) == 1


async def test_the_budget_renews_the_next_utc_day(client, db, ws, monkeypatch):
    await ready(client, ws)
    agent, _ = await connect_assistant(client, ws, ["transactional:send"], daily_recipient_budget=2)
    for to in ("a@mail.example", "b@mail.example"):
        await ok(await client.post(SEND, json=message(to), headers=agent), 202)
    assert (
        await client.post(SEND, json=message("c@mail.example"), headers=agent)
    ).status_code == 403
    tomorrow = utcnow() + timedelta(days=1)
    monkeypatch.setattr(budget, "utcnow", lambda: tomorrow)
    await ok(await client.post(SEND, json=message("c@mail.example"), headers=agent), 202)
    assert await queued(db) == 3
