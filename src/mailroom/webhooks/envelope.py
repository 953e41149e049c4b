"""What is sent: the signed JSON envelope for servers, a chat message for Slack and Teams."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

from mailroom.webhooks import chat, signing


def iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def envelope(
    delivery_id: str, event_type: str, created_at: datetime, data: dict[str, Any]
) -> dict[str, Any]:
    """Exactly four fields; `id` is the delivery id (the same on every retry)."""
    return {"id": delivery_id, "event": event_type, "created_at": iso(created_at), "data": data}


def request_for(
    *,
    channel: str,
    secret: str,
    delivery_id: str,
    event_type: str,
    created_at: datetime,
    data: dict[str, Any],
    workspace_name: str,
    public_url: str,
) -> tuple[bytes, dict[str, str]]:
    """Body and headers of one attempt (servers are signed afresh at every attempt)."""
    if channel == "server":
        body = orjson.dumps(envelope(delivery_id, event_type, created_at, data))
        return body, {
            "Content-Type": "application/json",
            "X-Mailroom-Event": event_type,
            "X-Mailroom-Delivery": delivery_id,
            "X-Mailroom-Signature": signing.sign(secret, body),
        }
    message = chat.render(channel, event_type, data, workspace_name, public_url)
    return orjson.dumps(message), {"Content-Type": "application/json"}
