"""An assistant connected as an agent without a browser does it: a one-use grant made with the
workspace's key, exchanged for tokens; its calls then carry the bearer token."""

from __future__ import annotations

from typing import Any

GRANTS = "/api/v1/assistants/grants"
EXCHANGE = "/api/v1/assistants/grants/exchange"
CAMPAIGN_PERMISSIONS = ["campaigns:read", "campaigns:write", "campaigns:send"]


async def connect_assistant(
    client: Any, ws: Any, permissions: list[str] | None = None, **grant: Any
) -> tuple[dict[str, str], str]:
    """(headers carrying its access token, its id)."""
    body = {"name": "Drafting agent", "permissions": permissions or CAMPAIGN_PERMISSIONS, **grant}
    created = await client.post(GRANTS, headers=ws.headers, json=body)
    assert created.status_code == 201, created.text
    exchanged = await client.post(EXCHANGE, json={"grant": created.json()["grant"]["code"]})
    assert exchanged.status_code == 200, exchanged.text
    tokens = exchanged.json()
    return {"Authorization": f"Bearer {tokens['access_token']}"}, tokens["assistant_id"]
