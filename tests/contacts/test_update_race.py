"""A PATCH whose contact is deleted between reading it and writing it answers 404 `Contact
not found` (it was a 500 StaleDataError). The delete is made to land in that window through
a hook in the service: deterministic, no timing."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from mailroom.contacts import service
from tests.contacts.helpers import create


def _delete_during_patch(monkeypatch, delete) -> None:
    """Run `delete(ctx, contact_id)` once the PATCH has read the contact and before it
    writes (custom_fields are merged in between)."""
    original = service.custom_fields.apply_values

    async def apply_values(ctx, current, raw, **kwargs):
        await delete(ctx)
        return await original(ctx, current, raw, **kwargs)

    monkeypatch.setattr(service.custom_fields, "apply_values", apply_values)


async def test_patch_of_a_row_deleted_in_the_same_window_is_404(client, ws, monkeypatch):
    contact = await create(client, ws.headers, "race@acme.io", first_name="Ann")

    async def delete(ctx):  # as a bulk delete's statement would, behind the ORM's back
        await ctx.session.execute(
            text("DELETE FROM contacts WHERE id = :id"), {"id": contact["id"]}
        )

    _delete_during_patch(monkeypatch, delete)
    response = await client.patch(
        f"/api/v1/contacts/{contact['id']}",
        json={"first_name": "Bo", "custom_fields": {"plan": "gold"}},
        headers=ws.headers,
    )
    assert response.status_code == 404
    assert response.json() == {"error": "Contact not found"}
    monkeypatch.undo()
    # The refused PATCH kept nothing (here the emulated delete rolled back with it).
    kept = await client.get(f"/api/v1/contacts/{contact['id']}", headers=ws.headers)
    assert kept.json()["contact"]["first_name"] == "Ann"
    assert kept.json()["contact"]["custom_fields"] == {}


@pytest.mark.postgresql_only
async def test_patch_racing_a_committed_bulk_delete_is_404(client, db, ws, monkeypatch):
    contact = await create(client, ws.headers, "race@acme.io", first_name="Ann")

    async def delete(ctx):  # another request's bulk delete commits in the window
        async with db.transaction() as other:
            await other.execute(text("DELETE FROM contacts WHERE id = :id"), {"id": contact["id"]})

    _delete_during_patch(monkeypatch, delete)
    response = await client.patch(
        f"/api/v1/contacts/{contact['id']}",
        json={"status": "unsubscribed", "custom_fields": {"plan": "gold"}},
        headers=ws.headers,
    )
    assert response.status_code == 404
    assert response.json() == {"error": "Contact not found"}
    monkeypatch.undo()
    gone = await client.get(f"/api/v1/contacts/{contact['id']}", headers=ws.headers)
    assert gone.status_code == 404
