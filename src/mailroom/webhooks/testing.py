"""Test deliveries: the real shape with fake values, `data.test: true`, an id starting `test_`,
sent at once and never logged.

The receiver may take the whole timeout to answer, so the request's unit of work ends its
(read-only) transaction before sending: no pooled connection, and on SQLite not the single
write connection, is held during the call. The route's audit entry opens a new one after.
"""

from __future__ import annotations

from typing import Any

from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.ids import new_id
from mailroom.events.catalog import CATALOG, CHAT_EVENTS
from mailroom.models import WebhookEndpoint
from mailroom.webhooks import client
from mailroom.webhooks.envelope import iso, request_for
from mailroom.webhooks.service import allowed_networks


def fake_data(event_type: str, workspace_id: str) -> dict[str, Any]:
    now = iso(utcnow())
    contact = {
        "id": "test_contact",
        "email": "jane.doe@example.com",
        "status": "subscribed",
        "first_name": "Jane",
        "last_name": "Doe",
        "source": "api",
        "custom_fields": {"plan": "pro"},
        "created_at": now,
        "subscribed_at": now,
        "unsubscribed_at": None,
        "tags": ["customer"],
    }
    group = event_type.split(".")[0]
    data: dict[str, Any]
    if group == "contact":
        data = {"contact": contact}
        if "tag" in event_type:
            data["tag"] = {"id": "test_tag", "name": "customer"}
        if "list" in event_type:
            data["list"] = {"id": "test_list", "name": "Newsletter"}
    elif group == "email":
        data = {
            "message": {
                "id": "test_message",
                "subject": "Hello from Mailroom",
                "campaign_id": "test_campaign",
            },
            "recipient": {"email": contact["email"], "contact_id": contact["id"]},
        }
    elif group == "campaign":
        data = {"campaign": {"id": "test_campaign", "name": "Test campaign", "recipients": 1234}}
    elif group == "form":
        data = {"form": {"id": "test_form", "name": "Signup form"}, "contact": contact}
    elif group == "domain":
        data = {"domain": {"id": "test_domain", "name": "mail.example.com"}}
        if event_type == "domain.failed":
            data["domain"]["reason"] = "DKIM record not found"
    elif group == "workspace":
        data = {"workspace": {"id": workspace_id}, "reason": "test notification"}
    else:
        data = {
            "automation": {"id": "test_automation", "name": "Welcome series"},
            "contact": contact,
            "step": {"label": "Notify CRM"},
        }
        if event_type == "automation.failed":
            data["error"] = "test failure"
    data["test"] = True
    return data


async def send_test(
    ctx: Context, endpoint: WebhookEndpoint, event_type: Any, workspace_name: str
) -> dict[str, Any]:
    if event_type is None or event_type == "":
        raise ApiError(400, "event is required")
    if not isinstance(event_type, str) or event_type not in CATALOG:
        raise ApiError(400, f"Unknown event type: {event_type}")
    if endpoint.channel != "server" and event_type not in CHAT_EVENTS:
        raise ApiError(
            400,
            f"{endpoint.channel.capitalize()} endpoints receive only {', '.join(sorted(CHAT_EVENTS))}",
        )
    body, headers = request_for(
        channel=endpoint.channel,
        secret=endpoint.secret,
        delivery_id=f"test_{new_id()}",
        event_type=event_type,
        created_at=utcnow(),
        data=fake_data(event_type, ctx.workspace_id),
        workspace_name=workspace_name,
        public_url=ctx.settings.public_url,
    )
    url = endpoint.url  # read before the rollback below expires the endpoint
    await ctx.session.rollback()  # only reads so far: nothing is lost
    allowed = allowed_networks(ctx)
    async with client.make_session(allowed, limit=1, per_host=1) as session:
        attempt = await client.post(
            session,
            url,
            body,
            headers,
            deadline_seconds=ctx.settings.webhook_timeout,
            allowed=allowed,
        )
    result: dict[str, Any] = {"ok": attempt.ok, "status": attempt.status or 0}
    if attempt.error:
        result["error"] = attempt.error
    return result
