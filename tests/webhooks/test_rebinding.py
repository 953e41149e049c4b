"""DNS rebinding: a name that was public at registration and answers 127.0.0.1 at delivery
time must be refused at connection time; nothing may reach the local listener."""

from __future__ import annotations

from tests.webhooks.helpers import ConnectionCounter, create_hook, deliveries, emit


async def test_rebinding_at_delivery_is_refused(client, pro, driver, db, hook_settings, resolver):
    hook_settings.webhook_allow_networks = []  # no exception for loopback in this test
    async with ConnectionCounter() as listener:
        resolver.set("rebind.example.com", "93.184.216.34")
        hook = await create_hook(
            client,
            pro,
            f"https://rebind.example.com:{listener.port}/hook",
            ["workspace.paused"],
        )
        resolver.set("rebind.example.com", "127.0.0.1")
        await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
        await driver.drain()
        assert listener.connections == 0
    assert "rebind.example.com" in resolver.calls[1:]  # looked up again at delivery
    [entry] = (await deliveries(client, pro, hook["id"]))["deliveries"]
    assert entry["status"] == "failed"
    assert entry["attempts"] == 5
    assert entry["last_status_code"] is None
    assert entry["last_error"]
    assert entry["delivered_at"] is None


async def test_rebinding_to_a_mixed_answer_is_refused(
    client, pro, driver, db, hook_settings, resolver
):
    hook_settings.webhook_allow_networks = []
    async with ConnectionCounter() as listener:
        resolver.set("mixed.example.com", "93.184.216.34")
        hook = await create_hook(
            client, pro, f"https://mixed.example.com:{listener.port}/hook", ["workspace.paused"]
        )
        resolver.set("mixed.example.com", "127.0.0.1", "93.184.216.34")
        await emit(db, hook_settings, pro.workspace_id, "workspace.paused", {})
        await driver.drain()
        assert listener.connections == 0
    [entry] = (await deliveries(client, pro, hook["id"]))["deliveries"]
    assert entry["status"] == "failed"
    assert entry["last_status_code"] is None


async def test_rebinding_at_test_delivery_is_refused(client, pro, hook_settings, resolver):
    hook_settings.webhook_allow_networks = []
    async with ConnectionCounter() as listener:
        resolver.set("rebind2.example.com", "93.184.216.34")
        hook = await create_hook(
            client, pro, f"https://rebind2.example.com:{listener.port}/hook", ["workspace.paused"]
        )
        resolver.set("rebind2.example.com", "127.0.0.1")
        response = await client.post(
            f"/api/v1/webhooks/{hook['id']}/test",
            json={"event": "workspace.paused"},
            headers=pro.headers,
        )
        assert listener.connections == 0
    assert response.status_code == 200, response.text
    assert response.json()["ok"] is False
    assert response.json()["status"] != 200
