"""Deleting or erasing a contact anonymises its send-log rows (the spec's state table): the rows
and the campaign's counts stay, the address becomes its masked form (delete) or its hash
(erase), and the rows no longer name the contact. Single and bulk paths alike."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from mailroom.models import Contact, SendLog
from tests.sending.helpers import (
    get_campaign,
    make_campaign,
    make_contacts,
    make_list,
    ok,
    recipients,
    send_campaign,
)


async def _sent_to(client, ws, emails):
    news = await make_list(client, ws)
    ids = await make_contacts(client, ws, emails, news)
    campaign = await make_campaign(client, ws, news)
    await send_campaign(client, ws, campaign["id"])
    return ids, campaign["id"]


async def _hash_of(db, contact_id):
    async with db.session() as session:
        return await session.scalar(select(Contact.email_hash).where(Contact.id == contact_id))


@pytest.mark.parametrize("mode", ["delete", "erase"])
async def test_a_single_delete_or_erase_anonymises_its_rows(client, db, ws, mode):
    (jane, tom), campaign = await _sent_to(client, ws, ["jane.doe@mailtest.io", "tom@mailtest.io"])
    hashed = await _hash_of(db, jane)
    gone = await client.delete(
        f"/api/v1/contacts/{jane}", params={"mode": mode}, headers=ws.headers
    )
    assert gone.status_code == 200, gone.text

    rows = {r["email"]: r for r in await recipients(client, ws, campaign)}
    expected = "j***@mailtest.io" if mode == "delete" else hashed
    assert set(rows) == {expected, "tom@mailtest.io"}
    assert rows[expected]["contact_id"] is None
    assert rows["tom@mailtest.io"]["contact_id"] == tom
    assert (await get_campaign(client, ws, campaign))["stats"]["recipients"] == 2
    async with db.session() as session:
        stored = set((await session.scalars(select(SendLog.email))).all())
    assert "jane.doe@mailtest.io" not in stored


@pytest.mark.parametrize("action", ["delete", "erase"])
async def test_a_bulk_delete_or_erase_anonymises_every_row(client, db, ws, action):
    emails = [f"user{i}@mailtest.io" for i in range(5)]
    ids, campaign = await _sent_to(client, ws, emails)
    hashes = {await _hash_of(db, i) for i in ids[:3]}
    done = await client.post(
        "/api/v1/contacts/bulk",
        json={"action": action, "contact_ids": ids[:3]},
        headers=ws.headers,
    )
    await ok(done)
    rows = await recipients(client, ws, campaign)
    assert len(rows) == 5
    kept = {r["email"] for r in rows if r["contact_id"] is not None}
    assert kept == {"user3@mailtest.io", "user4@mailtest.io"}
    anonymous = {r["email"] for r in rows if r["contact_id"] is None}
    assert anonymous == ({"u***@mailtest.io"} if action == "delete" else hashes)


async def test_another_workspaces_rows_are_untouched(client, db, factory, ws):
    other = await factory.workspace("pro")
    _ids, campaign = await _sent_to(client, other, ["same@mailtest.io"])
    [mine] = await make_contacts(client, ws, ["same@mailtest.io"])
    await ok(await client.delete(f"/api/v1/contacts/{mine}", headers=ws.headers))
    [row] = await recipients(client, other, campaign)
    assert row["email"] == "same@mailtest.io" and row["contact_id"] is not None
