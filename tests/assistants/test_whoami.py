"""`GET /api/v1/account` says who is calling: a key, or an assistant with its permissions."""

from __future__ import annotations


async def test_account_names_the_assistant_and_its_permissions(client, ws):
    grant = await client.post(
        "/api/v1/assistants/grants",
        headers=ws.headers,
        json={"name": "Agent", "permissions": ["tags:read", "contacts:read"]},
    )
    code = grant.json()["grant"]["code"]
    tokens = (await client.post("/api/v1/assistants/grants/exchange", json={"grant": code})).json()

    me = await client.get(
        "/api/v1/account", headers={"Authorization": f"Bearer {tokens['access_token']}"}
    )
    assert me.status_code == 200, me.text
    body = me.json()
    assert body["assistant_id"] == tokens["assistant_id"]
    assert body["key_id"] is None
    assert body["workspace_id"] == ws.workspace_id
    assert body["permissions"] == ["contacts:read", "tags:read"]

    by_key = (await client.get("/api/v1/account", headers=ws.headers)).json()
    assert by_key["key_id"] == ws.key_id and by_key["assistant_id"] is None


async def test_malformed_bearer_is_unauthorized(client):
    for header in ("Bearer", "Bearer ", "Basic abc", "Bearer mr_at_nope", "bearer " + "x" * 500):
        answer = await client.get("/api/v1/account", headers={"Authorization": header})
        assert answer.status_code == 401, header
        assert answer.json() == {"error": "Unauthorized"}
