"""The workspace's connected assistants as the API and the dashboard show them: one, a page,
and who connected each."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.core.auth import Principal
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.models import Assistant, OAuthClient, Person


async def get(session: AsyncSession, principal: Principal, assistant_id: str) -> Assistant:
    row = await session.scalar(
        select(Assistant).where(
            Assistant.id == assistant_id,
            Assistant.workspace_id == principal.workspace_id,
            Assistant.revoked_at.is_(None),
        )
    )
    if row is None:
        raise ApiError(404, "Assistant not found")
    return row


async def page(
    session: AsyncSession, principal: Principal, params: PageParams
) -> tuple[list[Assistant], int]:
    live = (Assistant.workspace_id == principal.workspace_id) & Assistant.revoked_at.is_(None)
    total = int(await session.scalar(select(func.count()).where(live)) or 0)
    rows = (
        await session.scalars(
            select(Assistant)
            .where(live)
            .order_by(Assistant.created_at.desc(), Assistant.id.desc())
            .offset(params.offset)
            .limit(params.limit)
        )
    ).all()
    return list(rows), total


async def describe(session: AsyncSession, rows: list[Assistant]) -> list[dict[str, Any]]:
    """The API's view: who connected each (a person's address, else the key), and the
    OAuth client's name."""
    people_ids = {r.connected_by_person_id for r in rows if r.connected_by_person_id}
    client_ids = {r.client_id for r in rows if r.client_id}
    emails: dict[str, str] = {}
    names: dict[str, str] = {}
    if people_ids:
        people_rows = await session.execute(
            select(Person.id, Person.email).where(Person.id.in_(people_ids))
        )
        emails = {person_id: email for person_id, email in people_rows}
    if client_ids:
        client_rows = await session.execute(
            select(OAuthClient.id, OAuthClient.client_name).where(OAuthClient.id.in_(client_ids))
        )
        names = {client_id: name for client_id, name in client_rows}
    return [
        {
            "id": r.id,
            "name": r.name,
            "kind": r.kind,
            "permissions": list(r.permissions),
            "requires_approval": r.requires_approval,
            "daily_recipient_budget": r.daily_recipient_budget,
            "client_name": names.get(r.client_id or "") if r.client_id else None,
            "connected_by": _connected_by(r, emails),
            "created_at": r.created_at,
            "last_used_at": r.last_used_at,
        }
        for r in rows
    ]


def _connected_by(row: Assistant, emails: dict[str, str]) -> dict[str, Any]:
    if row.connected_by_person_id:
        return {
            "type": "person",
            "id": row.connected_by_person_id,
            "email": emails.get(row.connected_by_person_id),
        }
    return {"type": "key", "id": row.connected_by_key_id, "email": None}
