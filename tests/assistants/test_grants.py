"""One-use grants: created with a key, exchanged once without one, the tokens then acting with
the grant's permissions."""

from __future__ import annotations

GRANTS = "/api/v1/assistants/grants"
EXCHANGE = "/api/v1/assistants/grants/exchange"


async def _grant(client, headers, **body):
    body.setdefault("name", "Claude Code")
    body.setdefault("permissions", ["contacts:read", "contacts:write"])
    return await client.post(GRANTS, headers=headers, json=body)


async def test_grant_exchanged_once_for_tokens_that_act_with_its_permissions(client, ws):
    created = await _grant(client, ws.headers)
    assert created.status_code == 201, created.text
    grant = created.json()["grant"]
    assert grant["code"].startswith("mr_grant_") and len(grant["code"]) == len("mr_grant_") + 32
    assert grant["permissions"] == ["contacts:read", "contacts:write"]
    assert grant["name"] == "Claude Code"

    exchanged = await client.post(EXCHANGE, json={"grant": grant["code"]})
    assert exchanged.status_code == 200, exchanged.text
    tokens = exchanged.json()
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 3600
    assert tokens["scope"] == "contacts:read contacts:write"
    assert tokens["workspace_id"] == ws.workspace_id
    bearer = {"Authorization": f"Bearer {tokens['access_token']}"}

    made = await client.post("/api/v1/contacts", headers=bearer, json={"email": "a@example.com"})
    assert made.status_code == 201, made.text
    refused = await client.get("/api/v1/campaigns", headers=bearer)
    assert refused.status_code == 403
    assert refused.json() == {"error": "Forbidden: campaigns:read permission required"}

    again = await client.post(EXCHANGE, json={"grant": grant["code"]})
    assert again.status_code == 400
    assert again.json() == {"error": "Grant already used"}

    listed = await client.get("/api/v1/assistants", headers=ws.headers)
    assert listed.status_code == 200, listed.text
    (assistant,) = listed.json()["assistants"]
    assert assistant["id"] == tokens["assistant_id"] and assistant["kind"] == "grant"

    revoked = await client.delete(f"/api/v1/assistants/{assistant['id']}", headers=ws.headers)
    assert revoked.json() == {"success": True, "id": assistant["id"]}
    after = await client.get("/api/v1/contacts", headers=bearer)
    assert after.status_code == 401
    gone = await client.get(f"/api/v1/assistants/{assistant['id']}", headers=ws.headers)
    assert gone.status_code == 404


async def test_grant_refresh_rotates_and_reuse_revokes(client, ws):
    grant = (await _grant(client, ws.headers)).json()["grant"]
    tokens = (await client.post(EXCHANGE, json={"grant": grant["code"]})).json()
    first = await client.post(
        "/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]},
    )
    assert first.status_code == 200, first.text
    fresh = first.json()
    assert fresh["refresh_token"] != tokens["refresh_token"]
    ok = await client.get(
        "/api/v1/contacts", headers={"Authorization": f"Bearer {fresh['access_token']}"}
    )
    assert ok.status_code == 200

    reused = await client.post(
        "/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]},
    )
    assert reused.status_code == 400
    assert reused.json()["error"] == "invalid_grant"
    dead = await client.get(
        "/api/v1/contacts", headers={"Authorization": f"Bearer {fresh['access_token']}"}
    )
    assert dead.status_code == 401
