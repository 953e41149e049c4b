"""The worker's `prune-assistants` loop: token rows past their expiry (and a day's memory for
reuse detection) go; live ones, and the assistant itself, stay."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select, update

from mailroom.core.clock import utcnow
from mailroom.models import AssistantGrant, AssistantToken
from mailroom.worker import WorkerContext, default_loops

GRANTS = "/api/v1/assistants/grants"
EXCHANGE = "/api/v1/assistants/grants/exchange"


async def _connect(client, ws):
    grant = await client.post(
        GRANTS, headers=ws.headers, json={"name": "Agent", "permissions": ["contacts:read"]}
    )
    code = grant.json()["grant"]["code"]
    return (await client.post(EXCHANGE, json={"grant": code})).json()


async def _count(db, model):
    async with db.session() as session:
        return await session.scalar(select(func.count()).select_from(model))


async def test_expired_tokens_and_grants_are_pruned_live_ones_kept(client, db, ws, settings):
    old = await _connect(client, ws)
    live = await _connect(client, ws)
    lapsed = await client.post(
        GRANTS, headers=ws.headers, json={"name": "Never used", "permissions": ["tags:read"]}
    )
    assert lapsed.status_code == 201
    async with db.transaction() as session:
        await session.execute(
            update(AssistantToken)
            .where(AssistantToken.assistant_id == old["assistant_id"])
            .values(expires_at=utcnow() - timedelta(days=1, minutes=1))
        )
        await session.execute(
            update(AssistantGrant)
            .where(AssistantGrant.name == "Never used")
            .values(expires_at=utcnow() - timedelta(days=31))
        )
    assert await _count(db, AssistantToken) == 4
    assert await _count(db, AssistantGrant) == 3

    [loop] = [lp for lp in default_loops(settings) if lp.name == "prune-assistants"]
    await loop.tick(WorkerContext(db, settings, "test-worker"))

    assert await _count(db, AssistantToken) == 2
    assert await _count(db, AssistantGrant) == 2  # the two exchanged, not yet lapsed
    bearer = {"Authorization": f"Bearer {live['access_token']}"}
    assert (await client.get("/api/v1/contacts", headers=bearer)).status_code == 200
    listed = await client.get("/api/v1/assistants", headers=ws.headers)
    assert {a["id"] for a in listed.json()["assistants"]} == {
        old["assistant_id"],
        live["assistant_id"],
    }
