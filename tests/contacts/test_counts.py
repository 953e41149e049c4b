"""The per-status counts kept by database triggers stay equal to the rows they count."""

from __future__ import annotations

from sqlalchemy import func, select

from mailroom.models import Contact, ContactCounts
from tests.contacts.helpers import create


async def _assert_counts_match(db, workspace_id):
    async with db.session() as session:
        real = dict(
            (
                await session.execute(
                    select(Contact.status, func.count())
                    .where(Contact.workspace_id == workspace_id)
                    .group_by(Contact.status)
                )
            ).all()
        )
        kept = await session.get(ContactCounts, workspace_id)
    for status in ("subscribed", "unsubscribed", "bounced", "complained", "archived"):
        assert (getattr(kept, status) if kept else 0) == real.get(status, 0), status


async def test_counts_follow_every_change(client, ws, db):
    made = [await create(client, ws.headers, f"c{i}@example.com") for i in range(6)]
    await _assert_counts_match(db, ws.workspace_id)
    for contact, status in zip(
        made, ["unsubscribed", "bounced", "complained", "archived"], strict=False
    ):
        await client.patch(
            f"/api/v1/contacts/{contact['id']}", json={"status": status}, headers=ws.headers
        )
    await _assert_counts_match(db, ws.workspace_id)
    await client.delete(f"/api/v1/contacts/{made[4]['id']}", headers=ws.headers)
    await client.delete(
        f"/api/v1/contacts/{made[0]['id']}", params={"mode": "erase"}, headers=ws.headers
    )
    await client.post(
        "/api/v1/suppressions",
        json={"entries": ["c5@example.com"], "reason": "spam"},
        headers=ws.headers,
    )
    await _assert_counts_match(db, ws.workspace_id)
    listing = (await client.get("/api/v1/contacts", headers=ws.headers)).json()
    assert listing["pagination"]["total"] == 3  # c1 bounced, c2 and c5 complained; c3 archived
    archived = (
        await client.get("/api/v1/contacts", params={"status": "archived"}, headers=ws.headers)
    ).json()
    assert archived["pagination"]["total"] == 1
