"""Helpers for the spec-driven bulk / import / export suite: build CSV files, call the API,
read back what it stored (through the API where possible, the outbox table for events)."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from mailroom.models import Event

IMPORT = "/api/v1/contacts/import"
BULK = "/api/v1/contacts/bulk"
EXPORT = "/api/v1/contacts/export"

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
REPORT_KEYS = {
    "imported",
    "updated",
    "skipped",
    "skipped_duplicates",
    "suppressed",
    "skipped_unconfirmed",
    "invalid",
    "skipped_undeliverable",
    "undeliverable_domains",
    "skipped_placeholder",
    "placeholder_addresses",
    "tags_created",
    "tags_attached",
    "custom_field_keys",
    "dropped_columns",
    "list_added",
    "list_pending_confirmation",
    "truncated",
}


def make_csv(rows: list[list[Any]], delimiter: str = ",", bom: bool = False) -> bytes:
    """A CSV file (first row = header) as a spreadsheet would save it."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\r\n")
    for row in rows:
        writer.writerow(row)
    data = buffer.getvalue().encode("utf-8")
    return (b"\xef\xbb\xbf" + data) if bom else data


async def upload(client, headers, content: bytes, filename: str = "contacts.csv", **fields: Any):
    """POST the file to the import endpoint; returns the raw response."""
    form: dict[str, str] = {}
    for name, value in fields.items():
        if isinstance(value, bool):
            form[name] = "true" if value else "false"
        elif isinstance(value, list | dict):
            form[name] = json.dumps(value)
        else:
            form[name] = str(value)
    return await client.post(
        IMPORT,
        files={"file": (filename, content, "text/csv")},
        data=form,
        headers=headers,
    )


async def import_ok(client, headers, content: bytes, **fields: Any) -> dict[str, Any]:
    response = await upload(client, headers, content, **fields)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) >= REPORT_KEYS, sorted(REPORT_KEYS - set(body))
    return body


async def import_rows(client, headers, rows: list[list[Any]], **fields: Any) -> dict[str, Any]:
    return await import_ok(client, headers, make_csv(rows), **fields)


async def find(client, headers, email: str) -> dict[str, Any] | None:
    """The contact with exactly this address (archived included), with its tags."""
    for status in (None, "archived"):
        params: dict[str, Any] = {"q": email, "limit": 100}
        if status:
            params["status"] = status
        response = await client.get("/api/v1/contacts", params=params, headers=headers)
        assert response.status_code == 200, response.text
        for contact in response.json()["contacts"]:
            if contact["email"] == email:
                one = await client.get(f"/api/v1/contacts/{contact['id']}", headers=headers)
                assert one.status_code == 200, one.text
                return one.json()["contact"]
    return None


async def get(client, headers, email: str) -> dict[str, Any]:
    contact = await find(client, headers, email)
    assert contact is not None, f"{email} was not stored"
    return contact


async def total(client, headers, **params: Any) -> int:
    response = await client.get("/api/v1/contacts", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return int(response.json()["pagination"]["total"])


def tag_names(contact: dict[str, Any]) -> set[str]:
    return {t["name"] for t in contact["tags"]}


def when(value: str | None) -> datetime | None:
    if value is None:
        return None
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


async def create_contact(client, headers, email: str, **fields: Any) -> dict[str, Any]:
    response = await client.post(
        "/api/v1/contacts", json={"email": email, **fields}, headers=headers
    )
    assert response.status_code == 201, response.text
    return response.json()["contact"]


async def set_status(client, headers, contact_id: str, status: str) -> None:
    response = await client.patch(
        f"/api/v1/contacts/{contact_id}", json={"status": status}, headers=headers
    )
    assert response.status_code == 200, response.text


async def create_tag(client, headers, name: str) -> dict[str, Any]:
    response = await client.post("/api/v1/tags", json={"name": name}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["tag"]


async def all_tags(client, headers) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/tags", params={"limit": 100}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["tags"]


async def create_list(client, headers, name: str, **extra: Any) -> dict[str, Any]:
    response = await client.post("/api/v1/lists", json={"name": name, **extra}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["list"]


async def list_members(client, headers, list_id: str) -> dict[str, str]:
    """email -> membership status."""
    response = await client.get(
        f"/api/v1/lists/{list_id}/contacts", params={"limit": 100}, headers=headers
    )
    assert response.status_code == 200, response.text
    return {c["email"]: c["membership"]["status"] for c in response.json()["contacts"]}


async def suppression(client, headers, email: str) -> dict[str, Any]:
    response = await client.get("/api/v1/suppressions", params={"email": email}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def suppress(client, headers, emails: list[str], reason: str = "unsubscribed") -> None:
    response = await client.post(
        "/api/v1/suppressions", json={"reason": reason, "entries": emails}, headers=headers
    )
    assert response.status_code == 200, response.text


async def events_of(db, workspace_id: str, event_type: str | None = None) -> list[Event]:
    async with db.session() as session:
        query = select(Event).where(Event.workspace_id == workspace_id)
        if event_type:
            query = query.where(Event.type == event_type)
        return list((await session.scalars(query.order_by(Event.created_at, Event.id))).all())


def read_export(text: str, strict: bool = True) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows of a CSV download. `strict`: every row has exactly the header's cells
    (tests about something else pass False so one defect does not fail them all)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    rows = list(reader)
    header, body = rows[0], rows[1:]
    if strict:
        for row in body:
            assert len(row) == len(header), f"{len(row)} cells, header {len(header)}: {row}"
    return header, [dict(zip(header, r, strict=False)) for r in body]
