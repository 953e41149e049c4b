"""Helpers for the spec-conformance contact tests: API calls a new user would make, plus
two direct reads/writes the API cannot give (the events outbox, and seeding many contacts
to reach a plan's contact cap quickly)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import insert, select

from mailroom.core.clock import utcnow
from mailroom.core.emails import email_hash
from mailroom.core.ids import new_id
from mailroom.models import Contact, Event

CONTACTS = "/api/v1/contacts"
FIELDS = "/api/v1/custom-fields"

CONTACT_FIELDS = {
    "id",
    "tenant_id",
    "email",
    "first_name",
    "last_name",
    "status",
    "custom_fields",
    "source",
    "language",
    "subscribed_at",
    "unsubscribed_at",
    "created_at",
}

EVENT_CONTACT_FIELDS = {
    "id",
    "email",
    "status",
    "first_name",
    "last_name",
    "source",
    "custom_fields",
    "created_at",
    "subscribed_at",
    "unsubscribed_at",
    "tags",
}


async def create(client, headers, email: str, **fields: Any) -> dict[str, Any]:
    response = await client.post(CONTACTS, json={"email": email, **fields}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["contact"]


async def get(client, headers, contact_id: str) -> dict[str, Any]:
    response = await client.get(f"{CONTACTS}/{contact_id}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["contact"]


async def patch(client, headers, contact_id: str, body: Any):
    return await client.patch(f"{CONTACTS}/{contact_id}", json=body, headers=headers)


async def listing(client, headers, **params: Any) -> dict[str, Any]:
    response = await client.get(CONTACTS, params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def ids(client, headers, **params: Any) -> list[str]:
    return [c["id"] for c in (await listing(client, headers, **params))["contacts"]]


async def suppression(client, headers, email: str) -> dict[str, Any]:
    response = await client.get("/api/v1/suppressions", params={"email": email}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def suppress(client, headers, email: str, reason: str = "unsubscribed") -> None:
    response = await client.post(
        "/api/v1/suppressions", json={"entries": [email], "reason": reason}, headers=headers
    )
    assert response.status_code == 200, response.text


async def events_of(db, workspace_id: str, event_type: str | None = None) -> list[Event]:
    async with db.session() as session:
        query = select(Event).where(Event.workspace_id == workspace_id)
        if event_type:
            query = query.where(Event.type == event_type)
        return list((await session.scalars(query.order_by(Event.created_at, Event.id))).all())


async def fill(db, workspace_id: str, count: int, status: str = "subscribed") -> None:
    """`count` contacts of `status` written straight into the workspace (reaching a cap by the
    API would take thousands of requests)."""
    when = utcnow() - timedelta(days=1)
    rows = [
        {
            "id": new_id(),
            "workspace_id": workspace_id,
            "email": f"{status}{i}-{workspace_id[-8:]}@seed.io",
            "search_text": f"{status}{i}-{workspace_id[-8:]}@seed.io",
            "email_hash": email_hash("seed", f"{i}{workspace_id}{status}"),
            "first_name": "",
            "last_name": "",
            "status": status,
            "custom_fields": {},
            "source": "api",
            "subscribed_at": when,
            "created_at": when,
            "updated_at": when,
        }
        for i in range(count)
    ]
    async with db.transaction() as session:
        for start in range(0, len(rows), 5000):
            await session.execute(insert(Contact), rows[start : start + 5000])
