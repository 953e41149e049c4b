"""`Idempotency-Key` on POSTs under /api/v1: a replay within 24 hours answers the first status
and the identical body without doing the work again; the same key with another body is 409;
keys are per workspace; a refused first try leaves no key; two identical requests at once do
the work once."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import func, select

from mailroom.models import Contact, SendLog
from tests.sending.helpers import make_campaign, make_contacts, make_list, ok

REUSED = {"error": "Idempotency-Key reused with a different request"}


def keyed(ws, key: str) -> dict[str, str]:
    return {**ws.headers, "Idempotency-Key": key}


async def count(db, model, **where) -> int:
    async with db.session() as session:
        query = select(func.count()).select_from(model)
        for name, value in where.items():
            query = query.where(getattr(model, name) == value)
        return int(await session.scalar(query) or 0)


async def test_a_replay_answers_the_first_response_and_does_nothing(client, db, ws):
    first = await client.post(
        "/api/v1/contacts", json={"email": "jane@mailtest.io"}, headers=keyed(ws, "k-1")
    )
    assert first.status_code == 201
    again = await client.post(
        "/api/v1/contacts", json={"email": "jane@mailtest.io"}, headers=keyed(ws, "k-1")
    )
    assert again.status_code == 201
    assert again.content == first.content
    assert await count(db, Contact) == 1

    other = await client.post(
        "/api/v1/contacts", json={"email": "tom@mailtest.io"}, headers=keyed(ws, "k-1")
    )
    assert (other.status_code, other.json()) == (409, REUSED)
    assert await count(db, Contact) == 1
    elsewhere = await client.post("/api/v1/tags", json={"name": "x"}, headers=keyed(ws, "k-1"))
    assert (elsewhere.status_code, elsewhere.json()) == (409, REUSED)  # another route, same key


async def test_keys_are_per_workspace(client, db, factory, ws):
    other = await factory.workspace("pro")
    for workspace in (ws, other):
        made = await client.post(
            "/api/v1/contacts", json={"email": "jane@mailtest.io"}, headers=keyed(workspace, "same")
        )
        assert made.status_code == 201
    assert await count(db, Contact) == 2


async def test_a_refused_request_leaves_no_key(client, db, ws):
    refused = await client.post("/api/v1/contacts", json={"email": "nope"}, headers=keyed(ws, "r"))
    assert refused.status_code == 400
    fixed = await client.post(
        "/api/v1/contacts", json={"email": "jane@mailtest.io"}, headers=keyed(ws, "r")
    )
    assert fixed.status_code == 201
    assert await count(db, Contact) == 1


async def test_a_send_and_a_campaign_start_happen_once(client, db, ws):
    await ok(
        await client.patch(
            "/api/v1/sending", json={"from_email": "news@shop.example"}, headers=ws.headers
        )
    )
    news = await make_list(client, ws)
    await make_contacts(client, ws, ["jane@mailtest.io", "tom@mailtest.io"], news)
    body = {"to": "jane@mailtest.io", "subject": "Receipt", "text_content": "Thanks"}
    first = await client.post("/api/v1/send", json=body, headers=keyed(ws, "send-1"))
    again = await client.post("/api/v1/send", json=body, headers=keyed(ws, "send-1"))
    assert (first.status_code, again.status_code) == (202, 202)
    assert again.json() == first.json()
    assert await count(db, SendLog, kind="transactional") == 1

    campaign = await make_campaign(client, ws, news)
    url = f"/api/v1/campaigns/{campaign['id']}/send"
    started = await client.post(url, headers=keyed(ws, "start-1"))
    replay = await client.post(url, headers=keyed(ws, "start-1"))
    assert (started.status_code, replay.status_code) == (202, 202)
    assert replay.content == started.content
    assert await count(db, SendLog, kind="campaign") == 2
    unkeyed = await client.post(url, headers=ws.headers)
    assert unkeyed.status_code == 409  # without the key it is a second start, refused


@pytest.mark.parametrize("attempts", [4])
async def test_identical_requests_at_once_do_the_work_once(client, db, ws, attempts):
    answers = await asyncio.gather(
        *(
            client.post(
                "/api/v1/contacts", json={"email": "race@mailtest.io"}, headers=keyed(ws, "race")
            )
            for _ in range(attempts)
        )
    )
    assert await count(db, Contact) == 1
    statuses = sorted(a.status_code for a in answers)
    assert statuses.count(201) >= 1
    assert set(statuses) <= {201, 409}


async def test_a_bad_key_is_400(client, ws):
    response = await client.post("/api/v1/tags", json={"name": "x"}, headers=keyed(ws, "x" * 256))
    assert (response.status_code, response.json()) == (
        400,
        {"error": "Idempotency-Key must be 1-255 printable ASCII characters"},
    )
