"""Issue 2, items 9-10: the audit log of key-authenticated writes, and /healthz, on real routes."""

from __future__ import annotations

from datetime import datetime


async def _log(client, headers, **params):
    response = await client.get("/api/v1/account/audit-log", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def test_real_writes_are_recorded_newest_first(client, ws):
    created = await client.post("/api/v1/contacts", json={"email": "a@shop.io"}, headers=ws.headers)
    contact_id = created.json()["contact"]["id"]
    await client.post("/api/v1/suppressions", json={"entries": ["s@shop.io"]}, headers=ws.headers)
    deleted = await client.delete(f"/api/v1/contacts/{contact_id}", headers=ws.headers)
    assert deleted.status_code == 200
    await client.get("/api/v1/contacts", headers=ws.headers)  # reads are not recorded
    entries = (await _log(client, ws.headers))["entries"]
    assert [e["status"] for e in entries] == [200, 200, 201]
    assert entries[0]["target_id"] == contact_id
    assert entries[2]["target_id"] == contact_id
    assert all(e["key_id"] == ws.key_id for e in entries)
    ops = [e["operation"] for e in entries]
    assert len(set(ops)) == 3 and all(ops)
    times = [datetime.fromisoformat(e["created_at"].replace("Z", "+00:00")) for e in entries]
    assert times == sorted(times, reverse=True)


async def test_refused_writes_are_recorded_with_their_status(client, ws, factory):
    reader = await factory.key(ws, ["contacts:read"])
    await client.post("/api/v1/contacts", json={"email": "x@shop.io"}, headers=reader)
    await client.post("/api/v1/suppressions/lift", json={"email": "no@shop.io"}, headers=ws.headers)
    statuses = [e["status"] for e in (await _log(client, ws.headers))["entries"]]
    assert statuses == [404, 403]


async def test_audit_log_is_per_workspace_and_cursor_paged(client, ws, factory):
    other = await factory.workspace("pro", listen=False)
    for i in range(5):
        await client.post("/api/v1/tags", json={"name": f"t{i}"}, headers=ws.headers)
    await client.post("/api/v1/tags", json={"name": "theirs"}, headers=other.headers)
    seen = []
    cursor = None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = await _log(client, ws.headers, **params)
        seen += page["entries"]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert len(seen) == 5
    assert len({e["id"] for e in seen}) == 5
    assert all(e["key_id"] == ws.key_id for e in seen)


async def test_health_without_a_key(client):
    response = await client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["database"] == "ok"
