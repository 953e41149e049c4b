"""Plan caps hold under real concurrency on PostgreSQL: each "count, then insert" is one
serialised step per workspace (READ COMMITTED alone let two creates both see room)."""

from __future__ import annotations

import asyncio

import pytest

from mailroom.models import CustomFieldDefinition

pytestmark = pytest.mark.postgresql_only

ENDPOINT_LIMIT = "Webhook endpoint limit reached (1 on the Free plan). Upgrade to add more."
FIELD_LIMIT = "A workspace can have at most 100 custom fields"


async def test_concurrent_webhook_creates_respect_the_free_plan_cap(client, factory, settings):
    settings.webhook_allow_networks = ["127.0.0.0/8"]
    for trial in range(3):  # the race showed in 5 of 6 trials; three in a row must all hold
        free = await factory.workspace("free", listen=False)
        responses = await asyncio.gather(
            *(
                client.post(
                    "/api/v1/webhooks",
                    json={"url": f"http://127.0.0.1:9/hook{i}", "event_types": ["contact.created"]},
                    headers=free.headers,
                )
                for i in range(10)
            )
        )
        statuses = sorted(r.status_code for r in responses)
        assert statuses == [201] + [403] * 9, (trial, [r.text for r in responses])
        for refused in (r for r in responses if r.status_code == 403):
            assert refused.json() == {"error": ENDPOINT_LIMIT}
        listed = await client.get("/api/v1/webhooks", headers=free.headers)
        assert len(listed.json()["webhooks"]) == 1


async def _seed_fields(db, workspace_id: str, count: int) -> None:
    async with db.transaction() as session:
        session.add_all(
            CustomFieldDefinition(
                workspace_id=workspace_id,
                key=f"seed_{i:03}",
                label=f"Seed {i}",
                type="text",
                position=i,
            )
            for i in range(count)
        )


async def _registry(client, headers) -> list[str]:
    response = await client.get("/api/v1/custom-fields", headers=headers)
    assert response.status_code == 200, response.text
    return [f["key"] for f in response.json()["fields"]]


async def test_concurrent_custom_field_creates_stop_at_100(client, db, factory):
    ws = await factory.workspace("pro", listen=False)
    await _seed_fields(db, ws.workspace_id, 95)
    responses = await asyncio.gather(
        *(
            client.post("/api/v1/custom-fields", json={"key": f"new_{i}"}, headers=ws.headers)
            for i in range(10)
        )
    )
    assert sorted(r.status_code for r in responses) == [201] * 5 + [400] * 5
    for refused in (r for r in responses if r.status_code == 400):
        assert refused.json() == {"error": FIELD_LIMIT}
    keys = await _registry(client, ws.headers)
    assert len(keys) == 100
    created = {r.json()["field"]["key"] for r in responses if r.status_code == 201}
    assert created <= set(keys)


async def _contacts(client, headers, count: int) -> list[str]:
    ids = []
    for i in range(count):
        response = await client.post(
            "/api/v1/contacts", json={"email": f"c{i}@example.com"}, headers=headers
        )
        assert response.status_code == 201, response.text
        ids.append(response.json()["contact"]["id"])
    return ids


async def test_concurrent_auto_registration_stops_at_100(client, db, factory):
    ws = await factory.workspace("pro", listen=False)
    await _seed_fields(db, ws.workspace_id, 97)
    ids = await _contacts(client, ws.headers, 8)
    responses = await asyncio.gather(
        *(
            client.patch(
                f"/api/v1/contacts/{contact_id}",
                json={"custom_fields": {f"auto_{i}": "x"}},
                headers=ws.headers,
            )
            for i, contact_id in enumerate(ids)
        )
    )
    assert [r.status_code for r in responses] == [200] * 8, [r.text for r in responses]
    keys = await _registry(client, ws.headers)
    assert len(keys) == 100  # three registered; the other values are kept, unregistered
    for i, contact_id in enumerate(ids):
        stored = await client.get(f"/api/v1/contacts/{contact_id}", headers=ws.headers)
        assert stored.json()["contact"]["custom_fields"] == {f"auto_{i}": "x"}


async def test_concurrent_writers_registering_the_same_key_all_succeed(client, factory):
    ws = await factory.workspace("pro", listen=False)
    ids = await _contacts(client, ws.headers, 8)
    responses = await asyncio.gather(
        *(
            client.patch(
                f"/api/v1/contacts/{contact_id}",
                json={"custom_fields": {"plan": "gold"}},
                headers=ws.headers,
            )
            for contact_id in ids
        )
    )
    assert [r.status_code for r in responses] == [200] * 8, [r.text for r in responses]
    assert await _registry(client, ws.headers) == ["plan"]
