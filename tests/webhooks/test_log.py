"""The delivery log: entries, newest first, paging, payload only on request."""

from __future__ import annotations

from tests.webhooks.helpers import (
    ENTRY_KEYS,
    ENVELOPE_KEYS,
    create_contact,
    create_hook,
    deliveries,
    emit,
)


async def test_log_entries_are_paged_newest_first(client, pro, receiver, driver):
    hook = await create_hook(client, pro, receiver.url("ok/log"), ["contact.created"])
    emails = [f"c{i}@example.com" for i in range(5)]
    for email in emails:
        await create_contact(client, pro, email)
    await driver.drain()

    everything = await deliveries(client, pro, hook["id"], include="payload")
    assert everything["pagination"] == {"page": 1, "limit": 50, "total": 5, "total_pages": 1}
    order = [e["payload"]["data"]["contact"]["email"] for e in everything["deliveries"]]
    assert order == list(reversed(emails))
    created = [e["created_at"] for e in everything["deliveries"]]
    assert created == sorted(created, reverse=True)

    pages = [await deliveries(client, pro, hook["id"], limit=2, page=p) for p in (1, 2, 3, 4)]
    for number, page in enumerate(pages, start=1):
        assert page["pagination"] == {"page": number, "limit": 2, "total": 5, "total_pages": 3}
    ids = [e["id"] for page in pages for e in page["deliveries"]]
    assert [len(p["deliveries"]) for p in pages] == [2, 2, 1, 0]
    assert ids == [e["id"] for e in everything["deliveries"]]


async def test_log_entry_fields_and_payload_only_on_request(client, pro, receiver, driver):
    hook = await create_hook(client, pro, receiver.url("ok/fields"), ["contact.created"])
    await create_contact(client, pro, "f@example.com")
    await driver.drain()
    [request] = receiver.at("ok/fields")

    plain = await deliveries(client, pro, hook["id"])
    [entry] = plain["deliveries"]
    assert set(entry) >= ENTRY_KEYS
    assert entry.get("payload") is None  # omitted unless include=payload
    assert entry["id"] == request.json["id"]
    assert entry["event_type"] == "contact.created"
    assert entry["status"] == "delivered"
    assert entry["attempts"] == 1
    assert entry["last_status_code"] == 200
    assert entry["last_error"] is None
    assert entry["delivered_at"] and entry["created_at"]
    assert "f@example.com" not in str(plain)

    with_payload = await deliveries(client, pro, hook["id"], include="payload")
    [entry] = with_payload["deliveries"]
    assert set(entry["payload"]) == ENVELOPE_KEYS
    assert entry["payload"] == request.json


async def test_log_shows_failures_and_pending(client, pro, receiver, driver, db, hook_settings):
    hook = await create_hook(client, pro, receiver.url("fail/log"), ["workspace.paused"])
    await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
    [entry] = (await deliveries(client, pro, hook["id"]))["deliveries"]
    assert entry["status"] == "pending"
    assert entry["attempts"] == 0
    assert entry["last_status_code"] is None
    assert entry["last_error"] is None
    assert entry["delivered_at"] is None
    await driver.drain()
    [entry] = (await deliveries(client, pro, hook["id"]))["deliveries"]
    assert entry["status"] == "failed"
    assert entry["attempts"] == 5
    assert entry["last_status_code"] == 500
    assert isinstance(entry["last_error"], str) and entry["last_error"]


async def test_log_is_per_endpoint(client, pro, receiver, driver):
    one = await create_hook(client, pro, receiver.url("ok/l1"), ["contact.created"])
    two = await create_hook(client, pro, receiver.url("ok/l2"), ["contact.deleted"])
    await create_contact(client, pro, "p@example.com")
    await driver.drain()
    assert len((await deliveries(client, pro, one["id"]))["deliveries"]) == 1
    second = await deliveries(client, pro, two["id"])
    assert second["deliveries"] == []
    assert second["pagination"]["total"] == 0


async def test_log_paging_limits(client, pro, receiver):
    hook = await create_hook(client, pro, receiver.url("ok/limits"), ["contact.created"])
    for params in ({"limit": 101}, {"limit": 0}, {"page": 0}, {"limit": "x"}):
        response = await client.get(
            f"/api/v1/webhooks/{hook['id']}/deliveries", params=params, headers=pro.headers
        )
        assert response.status_code == 400, (params, response.text)
    ok = await deliveries(client, pro, hook["id"], limit=100)
    assert ok["pagination"]["limit"] == 100
