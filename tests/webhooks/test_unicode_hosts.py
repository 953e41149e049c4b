"""IP literals written with Unicode digits or dots are the address they fold to: the guard
judges the host the client connects to, at registration and at every delivery. And refusals
never name an address a host name resolved to."""

from __future__ import annotations

import pytest

from tests.webhooks.helpers import ConnectionCounter, create_hook, deliveries, emit

FULLWIDTH = "".join(chr(ord(c) + 0xFEE0) for c in "127.0.0.1")  # digits and dots, U+FF1x/FF0E
IDEOGRAPHIC_DOTS = "127.0.0.1".replace(".", "\u3002")
CIRCLED = "\u2460\u2461\u2466.0.0.1"  # circled one, two, seven
LOOPBACK_FORMS = [FULLWIDTH, IDEOGRAPHIC_DOTS, CIRCLED]
REFUSED = "127.0.0.1 is not a public address"


@pytest.mark.parametrize("host", LOOPBACK_FORMS)
async def test_registration_refuses_unicode_loopback(client, pro, hook_settings, host):
    hook_settings.webhook_allow_networks = []
    response = await client.post(
        "/api/v1/webhooks",
        json={"url": f"https://{host}/hook", "event_types": ["workspace.paused"]},
        headers=pro.headers,
    )
    assert response.status_code == 400, response.text
    assert response.json() == {"error": f"url is not allowed: {REFUSED}"}
    listed = await client.get("/api/v1/webhooks", headers=pro.headers)
    assert listed.json()["webhooks"] == []


@pytest.mark.parametrize("host", LOOPBACK_FORMS)
async def test_stored_unicode_loopback_is_refused_at_delivery(
    client, pro, driver, db, hook_settings, host
):
    async with ConnectionCounter() as listener:
        # Registered while an allow-list covered loopback; the list is gone by delivery time.
        hook = await create_hook(
            client, pro, f"https://{host}:{listener.port}/hook", ["workspace.paused"]
        )
        hook_settings.webhook_allow_networks = []
        await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
        await driver.drain()
        assert listener.connections == 0
    [entry] = (await deliveries(client, pro, hook["id"]))["deliveries"]
    assert entry["status"] == "failed"
    assert entry["last_status_code"] is None
    assert entry["last_error"] == f"refused: {REFUSED}"


@pytest.mark.parametrize("host", LOOPBACK_FORMS)
async def test_stored_unicode_loopback_is_refused_at_test_delivery(
    client, pro, hook_settings, host
):
    async with ConnectionCounter() as listener:
        hook = await create_hook(
            client, pro, f"https://{host}:{listener.port}/hook", ["workspace.paused"]
        )
        hook_settings.webhook_allow_networks = []
        response = await client.post(
            f"/api/v1/webhooks/{hook['id']}/test",
            json={"event": "workspace.paused"},
            headers=pro.headers,
        )
        assert listener.connections == 0
    assert response.status_code == 200, response.text
    assert response.json() == {"ok": False, "status": 0, "error": f"refused: {REFUSED}"}


async def test_refusal_names_the_host_but_not_its_address(client, pro, hook_settings, resolver):
    hook_settings.webhook_allow_networks = []
    resolver.set("vm", "10.20.30.40")
    created = await client.post(
        "/api/v1/webhooks",
        json={"url": "https://vm/hook", "event_types": ["workspace.paused"]},
        headers=pro.headers,
    )
    assert created.status_code == 400, created.text
    assert created.json() == {"error": "url is not allowed: vm resolves to a non-public address"}
    hook = await create_hook(client, pro, "https://hooks.example.com/x", ["workspace.paused"])
    patched = await client.patch(
        f"/api/v1/webhooks/{hook['id']}", json={"url": "https://vm/hook"}, headers=pro.headers
    )
    assert patched.status_code == 400, patched.text
    assert patched.json() == {"error": "url is not allowed: vm resolves to a non-public address"}
    listed = await client.get("/api/v1/webhooks", headers=pro.headers)
    assert [h["url"] for h in listed.json()["webhooks"]] == ["https://hooks.example.com/x"]


async def test_rebinding_refusal_in_the_log_names_no_address(
    client, pro, driver, db, hook_settings, resolver
):
    hook_settings.webhook_allow_networks = []
    async with ConnectionCounter() as listener:
        resolver.set("moving.example.com", "93.184.216.34")
        hook = await create_hook(
            client, pro, f"https://moving.example.com:{listener.port}/x", ["workspace.paused"]
        )
        resolver.set("moving.example.com", "10.20.30.40")
        await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
        await driver.drain()
        assert listener.connections == 0
    [entry] = (await deliveries(client, pro, hook["id"]))["deliveries"]
    assert entry["status"] == "failed"
    assert entry["last_error"] == (
        "connection failed: moving.example.com resolves to a non-public address"
    )
