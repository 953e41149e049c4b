"""Spec, GET /api/v1/contacts and the Pagination object: rules the existing listing tests
leave unchecked."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update

from mailroom.core.clock import utcnow
from mailroom.models import Contact
from tests.spec_contacts.helpers import CONTACTS, create, fill, ids, listing, patch


async def test_q_is_a_substring_of_one_field_not_of_fields_joined(client, ws):
    """`q`: case-insensitive substring of email, first_name or last_name. A term spanning
    two fields is a substring of none of them."""
    await create(client, ws.headers, "jane@alpha.io", first_name="Jane", last_name="Smith")
    for q in ("alpha.io jane", "io jane", "jane smith", "Jane Smith"):
        body = await listing(client, ws.headers, q=q)
        assert body["contacts"] == [], q
        assert body["pagination"]["total"] == 0, q


async def test_q_matches_each_field_on_its_own(client, ws):
    a = await create(client, ws.headers, "one@alpha.io", first_name="Zoë", last_name="Quill")
    b = await create(client, ws.headers, "two@beta.io", first_name="Max", last_name="OBrien")
    assert await ids(client, ws.headers, q="ZOË") == [a["id"]]
    assert await ids(client, ws.headers, q="quil") == [a["id"]]
    assert await ids(client, ws.headers, q="BRIEN") == [b["id"]]
    assert await ids(client, ws.headers, q="O@ALPHA") == []
    assert await ids(client, ws.headers, q="ne@alpha") == [a["id"]]


async def test_default_limit_is_50_and_pagination_is_four_integers(client, ws, db):
    await fill(db, ws.workspace_id, 51)
    body = await listing(client, ws.headers)
    assert len(body["contacts"]) == 50
    assert body["pagination"] == {"page": 1, "limit": 50, "total": 51, "total_pages": 2}
    assert all(type(v) is int for v in body["pagination"].values())
    second = await listing(client, ws.headers, page=2)
    assert len(second["contacts"]) == 1
    assert second["pagination"] == {"page": 2, "limit": 50, "total": 51, "total_pages": 2}
    first_ids = {c["id"] for c in body["contacts"]}
    assert second["contacts"][0]["id"] not in first_ids
    hundred = await listing(client, ws.headers, limit=100)
    assert len(hundred["contacts"]) == 51
    assert hundred["pagination"]["total_pages"] == 1
    one = await listing(client, ws.headers, limit=1, page=51)
    assert len(one["contacts"]) == 1
    assert one["pagination"] == {"page": 51, "limit": 1, "total": 51, "total_pages": 51}


async def test_page_past_the_end_is_empty_not_an_error(client, ws):
    await create(client, ws.headers, "only@mailtest.io")
    body = await listing(client, ws.headers, page=7)
    assert body["contacts"] == []
    assert body["pagination"]["total"] == 1 and body["pagination"]["page"] == 7


async def test_any_page_number_from_1_is_accepted(client, ws):
    """`page`: integer, default 1; the spec sets no upper bound."""
    response = await client.get(CONTACTS, params={"page": 2_000_000}, headers=ws.headers)
    assert response.status_code == 200, response.text
    assert response.json()["contacts"] == []


@pytest.mark.parametrize("limit", ["abc", "1.5", "-1"])
async def test_non_integer_or_negative_limit_is_400(client, ws, limit):
    response = await client.get(CONTACTS, params={"limit": limit}, headers=ws.headers)
    assert response.status_code == 400
    assert set(response.json()) == {"error"}


async def _same_created_at(db, contact_ids, when):
    async with db.transaction() as session:
        await session.execute(
            update(Contact).where(Contact.id.in_(contact_ids)).values(created_at=when)
        )


async def test_status_sort_is_asc_by_default_and_ties_are_newest_first(client, ws, db):
    made = [await create(client, ws.headers, f"s{i}@mailtest.io") for i in range(3)]
    unsub = await create(client, ws.headers, "u@mailtest.io")
    await patch(client, ws.headers, unsub["id"], {"status": "unsubscribed"})
    newest_first = [c["id"] for c in reversed(made)]
    assert await ids(client, ws.headers, sort="status") == [*newest_first, unsub["id"]]
    assert await ids(client, ws.headers, sort="status", dir="desc") == [unsub["id"], *newest_first]
    # Ties with one created_at fall back to id (descending, like the newest-first default).
    stamp = utcnow() - timedelta(hours=2)
    await _same_created_at(db, [c["id"] for c in made], stamp)
    by_id = sorted((c["id"] for c in made), reverse=True)
    assert (await ids(client, ws.headers, sort="status"))[:3] == by_id
    paged = [(await ids(client, ws.headers, sort="status", limit=1, page=p))[0] for p in (1, 2, 3)]
    assert paged == by_id


async def test_email_sort_defaults_to_ascending(client, ws):
    b = await create(client, ws.headers, "b@mailtest.io")
    a = await create(client, ws.headers, "a@mailtest.io")
    c = await create(client, ws.headers, "c@mailtest.io")
    assert await ids(client, ws.headers, sort="email") == [a["id"], b["id"], c["id"]]
    assert await ids(client, ws.headers, sort="email", dir="desc") == [c["id"], b["id"], a["id"]]


async def test_name_sort_uses_last_name_after_first_name(client, ws):
    x = await create(client, ws.headers, "x@mailtest.io", first_name="Ann", last_name="Zed")
    y = await create(client, ws.headers, "y@mailtest.io", first_name="Ann", last_name="Abe")
    z = await create(client, ws.headers, "z@mailtest.io", first_name="Bea", last_name="Abe")
    assert await ids(client, ws.headers, sort="name") == [y["id"], x["id"], z["id"]]
    # Same full name: newest first.
    w = await create(client, ws.headers, "w@mailtest.io", first_name="Ann", last_name="Abe")
    assert await ids(client, ws.headers, sort="name") == [w["id"], y["id"], x["id"], z["id"]]


async def test_archived_contacts_leave_every_filter_unless_asked(client, ws):
    tag = (await client.post("/api/v1/tags", json={"name": "t"}, headers=ws.headers)).json()["tag"]
    kept = await create(client, ws.headers, "kept@mailtest.io", source="form")
    hidden = await create(client, ws.headers, "hidden@mailtest.io", source="form")
    for contact in (kept, hidden):
        await client.post(
            f"{CONTACTS}/{contact['id']}/tags", json={"tag_id": tag["id"]}, headers=ws.headers
        )
    await patch(client, ws.headers, hidden["id"], {"status": "archived"})
    for params in ({}, {"tag": tag["id"]}, {"source": "form"}, {"q": "mailtest"}):
        body = await listing(client, ws.headers, **params)
        assert [c["id"] for c in body["contacts"]] == [kept["id"]], params
        assert body["pagination"]["total"] == 1, params
    for params in ({"tag": tag["id"]}, {"source": "form"}, {"q": "hidden"}):
        body = await listing(client, ws.headers, status="archived", **params)
        assert [c["id"] for c in body["contacts"]] == [hidden["id"]], params
        assert body["pagination"]["total"] == 1, params


async def test_source_is_an_exact_match(client, ws):
    form = await create(client, ws.headers, "f@mailtest.io", source="form")
    await create(client, ws.headers, "g@mailtest.io", source="Form")
    await create(client, ws.headers, "h@mailtest.io", source="formx")
    assert await ids(client, ws.headers, source="form") == [form["id"]]
    api = await ids(client, ws.headers, source="api")
    assert api == []


async def test_status_filter_returns_only_that_status(client, ws):
    made = {s: await create(client, ws.headers, f"{s}@mailtest.io") for s in ("a", "b", "c", "d")}
    await patch(client, ws.headers, made["b"]["id"], {"status": "bounced"})
    await patch(client, ws.headers, made["c"]["id"], {"status": "complained"})
    await patch(client, ws.headers, made["d"]["id"], {"status": "unsubscribed"})
    for status, key in (
        ("subscribed", "a"),
        ("bounced", "b"),
        ("complained", "c"),
        ("unsubscribed", "d"),
    ):
        body = await listing(client, ws.headers, status=status)
        assert [c["id"] for c in body["contacts"]] == [made[key]["id"]]
        assert body["pagination"]["total"] == 1


async def test_from_and_to_bound_the_day_the_contact_was_added(client, ws, db):
    contact = await create(client, ws.headers, "day@mailtest.io")
    async with db.transaction() as session:
        await session.execute(
            update(Contact)
            .where(Contact.id == contact["id"])
            .values(created_at=utcnow().replace(year=2026, month=5, day=10, hour=12))
        )
    assert await ids(client, ws.headers, **{"from": "2026-05-10", "to": "2026-05-10"}) == [
        contact["id"]
    ]
    assert await ids(client, ws.headers, **{"from": "2026-05-11"}) == []
    assert await ids(client, ws.headers, to="2026-05-09") == []
    # An impossible `to` is ignored, the valid `from` still applies.
    assert await ids(client, ws.headers, **{"from": "2026-05-11", "to": "2026-04-31"}) == []
    assert await ids(client, ws.headers, **{"from": "2026-05-10", "to": "2026-13-01"}) == [
        contact["id"]
    ]


async def test_listing_rows_are_contacts(client, ws):
    await create(client, ws.headers, "row@mailtest.io", language="de", custom_fields={"k": 1})
    body = await listing(client, ws.headers)
    assert set(body) == {"contacts", "pagination"}
    [row] = body["contacts"]
    for name in (
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
    ):
        assert name in row
    assert row["language"] == "de" and row["custom_fields"] == {"k": 1}
