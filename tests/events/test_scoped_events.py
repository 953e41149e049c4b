"""Membership events carry their list or tag, so an endpoint scoped to a list or tag learns of
every join and leave of it, whichever route made it: a list or tag deleted, a contact deleted,
an import (spec, Events: scoping with filters)."""

from __future__ import annotations

from collections import Counter

from sqlalchemy import select

from mailroom.events.catalog import EVENT_NAMES
from mailroom.models import WebhookDelivery, WebhookEndpoint
from tests.events.world import World, build


async def _endpoint(w: World, **filters: list[str]) -> str:
    async with w.db.transaction() as session:
        endpoint = WebhookEndpoint(
            workspace_id=w.workspace_id,
            url="http://127.0.0.1:9/scoped",
            event_types=list(EVENT_NAMES),
            filters=filters,
            secret="whsec_scoped",
        )
        session.add(endpoint)
        await session.flush()
        return endpoint.id


async def _received(w: World, endpoint_id: str) -> Counter[str]:
    async with w.db.session() as session:
        rows = await session.scalars(
            select(WebhookDelivery.event_type).where(WebhookDelivery.endpoint_id == endpoint_id)
        )
        return Counter(rows.all())


async def _world(client, db, factory):
    w = await build(client, db, await factory.workspace("pro", listen=False))
    news = await _endpoint(w, list_ids=[w.lists["News"]])
    double = await _endpoint(w, list_ids=[w.lists["Double"]])
    vip = await _endpoint(w, tag_ids=[w.tags["vip"]])
    return w, news, double, vip


async def test_deleting_a_list_tells_its_scoped_endpoint(client, db, factory):
    w, news, double, vip = await _world(client, db, factory)
    await w.ok("DELETE", f"/api/v1/lists/{w.lists['News']}")
    assert await _received(w, news) == Counter({"contact.list_left": 1})
    assert await _received(w, double) == Counter()
    assert await _received(w, vip) == Counter()


async def test_deleting_a_tag_tells_its_scoped_endpoint(client, db, factory):
    w, news, _double, vip = await _world(client, db, factory)
    await w.ok("DELETE", f"/api/v1/tags/{w.tags['vip']}")
    assert await _received(w, vip) == Counter({"contact.tag_removed": 1})
    assert await _received(w, news) == Counter()


async def test_deleting_contacts_tells_each_scoped_endpoint_once(client, db, factory):
    w, news, double, vip = await _world(client, db, factory)
    await w.ok("DELETE", f"/api/v1/contacts/{w.id('a@acme.io')}")
    await w.ok(
        "POST",
        "/api/v1/contacts/bulk",
        json={"action": "erase", "contact_ids": [w.id("d@acme.io"), w.id("b@acme.io")]},
    )
    assert await _received(w, news) == Counter({"contact.list_left": 1})
    assert await _received(w, vip) == Counter({"contact.tag_removed": 1})
    assert await _received(w, double) == Counter({"contact.list_left": 1})
    # contact.deleted carries no dimension: a scoped endpoint never receives it.
    [erased] = [e for e in await w.events() if e.list_id == w.lists["Double"]]
    assert erased.data["contact"]["id"] == w.id("d@acme.io")
    assert erased.data["contact"]["email"] is None  # erased: described by id only
    assert erased.data["list"] == {"id": w.lists["Double"], "name": "Double"}


async def test_import_joins_and_tags_reach_scoped_endpoints(client, db, factory):
    w, news, _double, vip = await _world(client, db, factory)
    response = await w.call(
        "POST",
        "/api/v1/contacts/import",
        files={"file": ("c.csv", b"email,tags\nb@acme.io,vip\nnew@acme.io,vip\n", "text/csv")},
        data={"list_id": w.lists["News"]},
    )
    assert response.status_code == 200, response.text
    assert await _received(w, vip) == Counter({"contact.tag_added": 2})
    assert await _received(w, news) == Counter({"contact.list_joined": 2})


async def test_contact_updated_never_reaches_a_scoped_endpoint(client, db, factory):
    w, news, _double, vip = await _world(client, db, factory)
    await w.ok(
        "POST",
        "/api/v1/contacts/bulk",
        json={"action": "archive", "contact_ids": [w.id("a@acme.io")]},
    )
    assert [e.type for e in await w.events()] == []  # nobody unscoped listens
    assert await _received(w, news) == Counter()
    assert await _received(w, vip) == Counter()
