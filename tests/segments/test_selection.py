"""A segment wherever contacts are selected: the contact list, the export, the bulk actions'
filter, and (for campaign audiences) `matching_ids` inside an INSERT ... SELECT."""

from __future__ import annotations

import csv
import io

from sqlalchemy import String, func, insert, literal, select

from mailroom.accounts import service as accounts
from mailroom.core.context import Context
from mailroom.core.ids import new_id
from mailroom.models import BulkSelection, ContactTag
from mailroom.segments import service as segments
from tests.segments.helpers import cond, contact, named, rule, set_columns, tag

A, B, C, D = (f"{x}@example.org" for x in "abcd")
NOT_FOUND = {"error": "Segment not found"}


async def _world(client, ws, db) -> dict[str, str]:
    """Four contacts; the segment takes those whose email does not start with d (a, b, c),
    c archived; a and d tagged vip."""
    ids = {e: await contact(client, ws.headers, e) for e in (A, B, C, D)}
    await set_columns(db, ids[C], status="archived", previous_status="subscribed")
    vip = await named(client, ws.headers, "tags", "vip")
    for email in (A, D):
        await tag(client, ws.headers, ids[email], vip)
    response = await client.post(
        "/api/v1/segments",
        json={"name": "Not d", "rules": rule(cond("email", "not_contains", "d@"))},
        headers=ws.headers,
    )
    assert response.status_code == 201, response.text
    return {**ids, "vip": vip, "segment": response.json()["segment"]["id"]}


async def _emails(client, ws, **params) -> tuple[set[str], int]:
    response = await client.get("/api/v1/contacts", params=params, headers=ws.headers)
    assert response.status_code == 200, response.text
    body = response.json()
    return {c["email"] for c in body["contacts"]}, body["pagination"]["total"]


async def test_contact_list_by_segment(client, ws, db, factory):
    world = await _world(client, ws, db)
    segment = world["segment"]
    # The rule decides the statuses: the archived contact is listed too.
    assert await _emails(client, ws, segment=segment) == ({A, B, C}, 3)
    assert await _emails(client, ws, segment=segment, status="subscribed") == ({A, B}, 2)
    # With a tag filter (or a list one) the total is still the segment's part of it.
    assert await _emails(client, ws, segment=segment, tag=world["vip"]) == ({A}, 1)
    assert await _emails(client, ws, segment=segment, q="b@") == ({B}, 1)
    assert await _emails(client, ws) == ({A, B, D}, 3)  # without one, archived stay hidden
    other = await factory.workspace("pro")
    theirs = await client.post(
        "/api/v1/segments",
        json={"name": "All", "rules": rule(cond("email", "is_set"))},
        headers=other.headers,
    )
    for unknown in ("nope", theirs.json()["segment"]["id"]):
        response = await client.get(
            "/api/v1/contacts", params={"segment": unknown}, headers=ws.headers
        )
        assert response.status_code == 404
        assert response.json() == NOT_FOUND


async def test_export_by_segment(client, ws, db):
    world = await _world(client, ws, db)
    response = await client.get(
        "/api/v1/contacts/export", params={"segment": world["segment"]}, headers=ws.headers
    )
    assert response.status_code == 200
    assert {row["email"] for row in csv.DictReader(io.StringIO(response.text))} == {A, B, C}
    missing = await client.get(
        "/api/v1/contacts/export", params={"segment": "nope"}, headers=ws.headers
    )
    assert missing.status_code == 404
    assert missing.json() == NOT_FOUND


async def test_bulk_actions_by_segment(client, ws, db):
    world = await _world(client, ws, db)
    promo = await named(client, ws.headers, "tags", "promo")
    response = await client.post(
        "/api/v1/contacts/bulk",
        json={"action": "add_tag", "tag_id": promo, "filter": {"segment": world["segment"]}},
        headers=ws.headers,
    )
    assert response.status_code == 200, response.text
    assert response.json()["tagged"] == 3
    async with db.session() as session:
        tagged = set(
            (
                await session.scalars(
                    select(ContactTag.contact_id).where(ContactTag.tag_id == promo)
                )
            ).all()
        )
    assert tagged == {world[A], world[B], world[C]}

    exported = await client.post(
        "/api/v1/contacts/bulk",
        json={"action": "export", "filter": {"segment": world["segment"], "status": "subscribed"}},
        headers=ws.headers,
    )
    assert exported.status_code == 200
    assert {r["email"] for r in csv.DictReader(io.StringIO(exported.text))} == {A, B}

    for body, status, message in (
        ({"segment": "nope"}, 404, "Segment not found"),
        ({"segment": world["segment"], "status": "bounced"}, 404, "No contacts match that filter"),
        ({"segment": 5}, 400, "segment must be a string"),
    ):
        for action in ("add_tag", "export"):
            response = await client.post(
                "/api/v1/contacts/bulk",
                json={"action": action, "tag_id": promo, "filter": body},
                headers=ws.headers,
            )
            assert response.status_code == status, (action, body)
            assert response.json() == {"error": message}


async def test_matching_ids_feed_an_insert_select(client, ws, db, settings):
    world = await _world(client, ws, db)
    run_id = new_id()
    async with db.session() as session:
        principal = await accounts.principal_for_workspace(session, ws.workspace_id)
    async with db.transaction() as session:
        ctx = Context(session, principal, settings)
        chosen = (await segments.matching_ids(ctx, world["segment"])).subquery()
        await session.execute(
            insert(BulkSelection).from_select(
                ["run_id", "contact_id"], select(literal(run_id, String(36)), chosen.c.id)
            )
        )
        selected = set(
            (
                await session.scalars(
                    select(BulkSelection.contact_id).where(BulkSelection.run_id == run_id)
                )
            ).all()
        )
        count = await session.scalar(select(func.count()).select_from(chosen))
        await session.rollback()
    assert selected == {world[A], world[B], world[C]}
    assert count == 3
