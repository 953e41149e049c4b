"""Shared helpers for contact tests: direct reads of what the API stored."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from mailroom.models import Event


async def create(client, headers, email: str = "jane@example.com", **fields: Any) -> dict[str, Any]:
    response = await client.post(
        "/api/v1/contacts", json={"email": email, **fields}, headers=headers
    )
    assert response.status_code == 201, response.text
    return response.json()["contact"]


async def events_of(db, workspace_id: str, event_type: str | None = None) -> list[Event]:
    async with db.session() as session:
        query = select(Event).where(Event.workspace_id == workspace_id)
        if event_type:
            query = query.where(Event.type == event_type)
        return list((await session.scalars(query.order_by(Event.created_at, Event.id))).all())


CONTACT_EVENT_FIELDS = {
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
