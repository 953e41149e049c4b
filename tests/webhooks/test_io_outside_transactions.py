"""No connection is held while a webhook receiver or DNS takes its time: another tenant's
write goes through at once (on SQLite the write connection is a single one), and no pooled
connection is checked out during the wait (on PostgreSQL 30 slow calls would drain the pool)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from mailroom.webhooks import client as webhook_client
from tests.webhooks.helpers import PUBLIC_IP, create_hook, hook_by_id

QUICK = 1.5  # seconds; a write queued behind the slow call would wait 4 s or forever


def checked_out(db: Any) -> int:
    engines = {id(db.engine): db.engine, id(db.write_engine): db.write_engine}
    return sum(engine.pool.checkedout() for engine in engines.values())


async def until(condition: Any, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.02)


async def other_tenant_writes(client: Any, factory: Any, name: str) -> float:
    """Seconds another workspace's write takes (bounded, so a blocked write fails the test)."""
    other = await factory.workspace("pro", listen=False)
    started = time.monotonic()
    response = await asyncio.wait_for(
        client.post("/api/v1/tags", json={"name": name}, headers=other.headers), timeout=10
    )
    elapsed = time.monotonic() - started
    assert response.status_code == 201, response.text
    listed = await client.get("/api/v1/tags", headers=other.headers)
    assert [t["name"] for t in listed.json()["tags"]] == [name]
    return elapsed


async def test_slow_test_delivery_holds_no_connection(
    client, db, factory, pro, receiver, hook_settings
):
    hook_settings.webhook_timeout = 4.0  # the receiver answers after 5 s
    hook = await create_hook(client, pro, receiver.url("slow/test"), ["contact.created"])
    call = asyncio.create_task(
        client.post(
            f"/api/v1/webhooks/{hook['id']}/test",
            json={"event": "contact.created"},
            headers=pro.headers,
        )
    )
    await until(lambda: receiver.at("slow/test"))
    assert checked_out(db) == 0
    assert await other_tenant_writes(client, factory, "during-test-call") < QUICK
    assert not call.done()  # the write really happened while the receiver was still silent

    response = await call
    assert response.status_code == 200, response.text
    assert response.json() == {"ok": False, "status": 0, "error": "timeout after 4s"}
    audit = await client.get("/api/v1/account/audit-log", headers=pro.headers)
    assert audit.status_code == 200, audit.text
    [entry] = [e for e in audit.json()["entries"] if e["operation"] == "test_webhook"]
    assert entry["target_id"] == hook["id"] and entry["status"] == 200


class SlowDns:
    """A resolver that answers only when let go, so the test can look while it waits."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.answer = asyncio.Event()

    async def __call__(self, host: str, port: int) -> list[Any]:
        self.asked.set()
        await self.answer.wait()
        return [PUBLIC_IP]


@pytest.mark.parametrize("change", ["create", "update"])
async def test_dns_of_a_webhook_url_is_resolved_with_no_connection_held(
    client, db, factory, pro, receiver, monkeypatch, change
):
    hook = await create_hook(client, pro, receiver.url("ok/first"), ["contact.created"])
    dns = SlowDns()
    monkeypatch.setattr(webhook_client, "resolve_host", dns)
    url = "https://hooks.example.com/new"
    if change == "create":
        request = client.post(
            "/api/v1/webhooks",
            json={"url": url, "event_types": ["contact.created"]},
            headers=pro.headers,
        )
    else:
        request = client.patch(
            f"/api/v1/webhooks/{hook['id']}", json={"url": url}, headers=pro.headers
        )
    call = asyncio.create_task(request)
    try:
        await asyncio.wait_for(dns.asked.wait(), timeout=10)
        assert checked_out(db) == 0
        assert await other_tenant_writes(client, factory, f"during-{change}") < QUICK
    finally:
        dns.answer.set()
    response = await call
    assert response.status_code == (201 if change == "create" else 200), response.text
    stored = await hook_by_id(client, pro, response.json()["id"])
    assert stored["url"] == url


async def test_a_refused_url_on_an_unknown_webhook_is_still_404(client, pro, resolver):
    resolver.set("vm", "10.0.0.5")
    response = await client.patch(
        "/api/v1/webhooks/00000000-0000-0000-0000-000000000000",
        json={"url": "https://vm/hook"},
        headers=pro.headers,
    )
    assert response.status_code == 404, response.text
    assert response.json() == {"error": "Webhook not found"}
