"""GET /contacts: filters, sorting (stable ties), pagination."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update

from mailroom.core.clock import utcnow
from mailroom.models import Contact
from tests.contacts.helpers import create


async def _ids(client, ws, **params):
    response = await client.get("/api/v1/contacts", params=params, headers=ws.headers)
    assert response.status_code == 200, response.text
    return [c["id"] for c in response.json()["contacts"]]


async def test_newest_first_and_pagination(client, ws):
    made = [await create(client, ws.headers, f"p{i}@example.com") for i in range(7)]
    newest_first = [c["id"] for c in reversed(made)]
    assert await _ids(client, ws) == newest_first
    page = (
        await client.get("/api/v1/contacts", params={"limit": 3, "page": 3}, headers=ws.headers)
    ).json()
    assert page["pagination"] == {"page": 3, "limit": 3, "total": 7, "total_pages": 3}
    assert [c["id"] for c in page["contacts"]] == newest_first[6:]
    assert await _ids(client, ws, dir="asc") == [c["id"] for c in made]


async def test_ties_break_by_newest_then_id(client, ws, db):
    made = [
        await create(client, ws.headers, f"t{i}@example.com", first_name="Same") for i in range(4)
    ]
    stamp = utcnow() - timedelta(hours=1)
    async with db.transaction() as session:
        await session.execute(update(Contact).values(created_at=stamp))
    by_id_desc = sorted((c["id"] for c in made), reverse=True)
    assert await _ids(client, ws) == by_id_desc
    assert await _ids(client, ws, sort="name") == by_id_desc
    pages = [await _ids(client, ws, sort="name", limit=1, page=p) for p in range(1, 5)]
    assert [p[0] for p in pages] == by_id_desc


async def test_sort_by_name_email_status(client, ws):
    a = await create(client, ws.headers, "z@example.com", first_name="Anna", last_name="B")
    b = await create(client, ws.headers, "a@example.com", first_name="Anna", last_name="A")
    c = await create(client, ws.headers, "m@example.com", first_name="Bob")
    await client.patch(
        f"/api/v1/contacts/{c['id']}", json={"status": "unsubscribed"}, headers=ws.headers
    )
    assert await _ids(client, ws, sort="name") == [b["id"], a["id"], c["id"]]
    assert await _ids(client, ws, sort="name", dir="desc") == [c["id"], a["id"], b["id"]]
    assert await _ids(client, ws, sort="email") == [b["id"], c["id"], a["id"]]
    assert (await _ids(client, ws, sort="status"))[0] in (a["id"], b["id"])
    assert (await _ids(client, ws, sort="status"))[-1] == c["id"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"sort": "age"}, "sort must be one of created, name, email, status"),
        ({"dir": "up"}, "dir must be one of asc, desc"),
        (
            {"status": "pending"},
            "status must be one of subscribed, unsubscribed, bounced, complained, archived",
        ),
        ({"limit": 0}, "limit must be at least 1"),
        ({"limit": 101}, "limit must be at most 100"),
        ({"page": 0}, "page must be at least 1"),
    ],
)
async def test_bad_list_parameters_are_400(client, ws, params, message):
    response = await client.get("/api/v1/contacts", params=params, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": message}


async def test_q_searches_email_and_names_case_insensitively(client, ws):
    jane = await create(client, ws.headers, "jane@alpha.io", first_name="Jane", last_name="Smith")
    bob = await create(client, ws.headers, "bob@beta.io", first_name="Bob", last_name="JANESON")
    other = await create(client, ws.headers, "x@gamma.io", first_name="Xavier")
    assert set(await _ids(client, ws, q="JaNe")) == {jane["id"], bob["id"]}
    assert await _ids(client, ws, q="beta") == [bob["id"]]
    assert await _ids(client, ws, q="vier") == [other["id"]]
    assert await _ids(client, ws, q="%") == []
    assert await _ids(client, ws, q="_") == []


async def test_status_source_tag_and_list_filters(client, ws):
    a = await create(client, ws.headers, "a@x.io", source="form")
    b = await create(client, ws.headers, "b@x.io", source="import")
    c = await create(client, ws.headers, "c@x.io")
    await client.patch(
        f"/api/v1/contacts/{c['id']}", json={"status": "unsubscribed"}, headers=ws.headers
    )
    assert await _ids(client, ws, status="unsubscribed") == [c["id"]]
    assert await _ids(client, ws, source="form") == [a["id"]]
    tag = (await client.post("/api/v1/tags", json={"name": "vip"}, headers=ws.headers)).json()[
        "tag"
    ]
    lst = (await client.post("/api/v1/lists", json={"name": "news"}, headers=ws.headers)).json()[
        "list"
    ]
    for contact in (a, b):
        await client.post(
            f"/api/v1/contacts/{contact['id']}/tags", json={"tag_id": tag["id"]}, headers=ws.headers
        )
    await client.post(
        f"/api/v1/lists/{lst['id']}/contacts",
        json={"contact_ids": [b["id"], c["id"]]},
        headers=ws.headers,
    )
    assert set(await _ids(client, ws, tag=tag["id"])) == {a["id"], b["id"]}
    assert await _ids(client, ws, list=lst["id"]) == [b["id"]]  # c is unsubscribed: not added
    assert await _ids(client, ws, tag=tag["id"], list=lst["id"]) == [b["id"]]
    assert await _ids(client, ws, tag="unknown-tag") == []


async def test_date_range_is_whole_days_and_impossible_dates_are_ignored(client, ws, db):
    old = await create(client, ws.headers, "old@x.io")
    new = await create(client, ws.headers, "new@x.io")
    async with db.transaction() as session:
        await session.execute(
            update(Contact)
            .where(Contact.id == old["id"])
            .values(created_at=utcnow().replace(year=2026, month=3, day=15, hour=23, minute=59))
        )
        await session.execute(
            update(Contact)
            .where(Contact.id == new["id"])
            .values(created_at=utcnow().replace(year=2026, month=3, day=16, hour=0, minute=1))
        )
    assert await _ids(client, ws, to="2026-03-15") == [old["id"]]
    assert await _ids(client, ws, **{"from": "2026-03-16"}) == [new["id"]]
    assert await _ids(client, ws, **{"from": "2026-03-15", "to": "2026-03-15"}) == [old["id"]]
    assert len(await _ids(client, ws, to="2026-02-30")) == 2
    assert len(await _ids(client, ws, **{"from": "garbage"})) == 2
