"""Shared helpers for the custom-field tests: API calls a client would make, plus one way to
seed values stored before the registry knew their keys."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from mailroom.models import Contact

FIELDS = "/api/v1/custom-fields"
CONTACTS = "/api/v1/contacts"


async def new_contact(client, headers, email: str, **body: Any) -> dict[str, Any]:
    response = await client.post(CONTACTS, json={"email": email, **body}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["contact"]


async def get_contact(client, headers, contact_id: str) -> dict[str, Any]:
    response = await client.get(f"{CONTACTS}/{contact_id}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["contact"]


async def stored(client, headers, contact_id: str) -> dict[str, Any]:
    """The contact's custom_fields as a later GET shows them."""
    return (await get_contact(client, headers, contact_id))["custom_fields"]


async def patch_contact(client, headers, contact_id: str, body: dict[str, Any]):
    return await client.patch(f"{CONTACTS}/{contact_id}", json=body, headers=headers)


async def create_field(client, headers, **body: Any) -> dict[str, Any]:
    response = await client.post(FIELDS, json=body, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["field"]


async def listing(client, headers) -> dict[str, Any]:
    response = await client.get(FIELDS, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def fields_by_key(client, headers) -> dict[str, dict[str, Any]]:
    return {f["key"]: f for f in (await listing(client, headers))["fields"]}


async def seed_values(db, contact_id: str, values: dict[str, Any]) -> None:
    """Write a contact's custom_fields straight into the database, as data stored before the
    registry existed (or by an earlier version) would be: no registration, no typing."""
    async with db.session() as session:
        contact = await session.scalar(select(Contact).where(Contact.id == contact_id))
        assert contact is not None
        contact.custom_fields = dict(values)
        await session.commit()
