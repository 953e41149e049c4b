"""Shared helpers for segment tests: contacts, tags, lists and fields made through the API;
timestamps and send-log rows (written by the sending engine of the next issue) set directly."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import update

from mailroom.core.ids import new_id
from mailroom.models import Contact, SendLog


async def contact(client, headers, email: str, **fields: Any) -> str:
    response = await client.post(
        "/api/v1/contacts", json={"email": email, **fields}, headers=headers
    )
    assert response.status_code == 201, response.text
    return str(response.json()["contact"]["id"])


async def named(client, headers, kind: str, name: str, **extra: Any) -> str:
    """A tag or list (`kind`: tags | lists); its id."""
    response = await client.post(f"/api/v1/{kind}", json={"name": name, **extra}, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["tag" if kind == "tags" else "list"]["id"])


async def tag(client, headers, contact_id: str, tag_id: str) -> None:
    response = await client.post(
        f"/api/v1/contacts/{contact_id}/tags", json={"tag_id": tag_id}, headers=headers
    )
    assert response.status_code == 201, response.text


async def field(client, headers, key: str, type_: str, **extra: Any) -> None:
    response = await client.post(
        "/api/v1/custom-fields", json={"key": key, "type": type_, **extra}, headers=headers
    )
    assert response.status_code == 201, response.text


async def set_columns(db, contact_id: str, **values: Any) -> None:
    """Timestamps, status or raw custom_fields as stored (no API sets them freely)."""
    async with db.transaction() as session:
        await session.execute(update(Contact).where(Contact.id == contact_id).values(**values))


async def sent(
    db,
    workspace_id: str,
    contact_id: str,
    *,
    at: datetime,
    campaign_id: str | None = None,
    opened: datetime | None = None,
    clicked: datetime | None = None,
    bounced: datetime | None = None,
) -> None:
    """A send-log row as the sending engine leaves it."""
    async with db.transaction() as session:
        session.add(
            SendLog(
                id=new_id(),
                workspace_id=workspace_id,
                kind="campaign" if campaign_id else "transactional",
                campaign_id=campaign_id,
                contact_id=contact_id,
                email="x@example.org",
                status="bounced" if bounced else "sent",
                run_at=at,
                sent_at=at,
                first_opened_at=opened,
                first_clicked_at=clicked,
                bounced_at=bounced,
                open_count=1 if opened else 0,
                click_count=1 if clicked else 0,
            )
        )


def rule(*conditions: dict[str, Any], match: str = "all") -> dict[str, Any]:
    return {"match": match, "conditions": list(conditions)}


def cond(field_: str, op: str, value: Any = None) -> dict[str, Any]:
    c: dict[str, Any] = {"field": field_, "op": op}
    if value is not None:
        c["value"] = value
    return c


async def preview(client, headers, rules: Any) -> dict[str, Any]:
    response = await client.post("/api/v1/segments/preview", json={"rules": rules}, headers=headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def matched(client, headers, rules: Any) -> set[str]:
    """Emails of the contacts a rule matches (the preview shows 10: tests stay below)."""
    answer = await preview(client, headers, rules)
    assert answer["count"] == len(answer["contacts"]) <= 10
    return {c["email"] for c in answer["contacts"]}
