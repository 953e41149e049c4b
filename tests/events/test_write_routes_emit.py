"""Every write route that changes a contact's fields, status, tags or list memberships writes
the catalog's event for each change, in the same transaction (spec, Events). The route list is
the app's own: a new write route fails `test_every_write_route_is_classified` until it gets a
case here (cases.py) or a place in the "changes no contact" table."""

from __future__ import annotations

from collections import Counter

import pytest
from fastapi.routing import APIRoute, iter_route_contexts

from tests.events.cases import CASES, NO_CONTACT_CHANGE, Case, body_of
from tests.events.world import build

WRITES = {"POST", "PUT", "PATCH", "DELETE"}


def write_routes(app) -> set[str]:
    found = set()
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, APIRoute) and context.path.startswith("/api/v1"):
            found.update(f"{m} {context.path}" for m in set(context.methods or ()) & WRITES)
    return found


def test_every_write_route_is_classified(app):
    changing = {case.route for case in CASES}
    assert not changing & set(NO_CONTACT_CHANGE)
    assert write_routes(app) == changing | set(NO_CONTACT_CHANGE)


PARAMS = [pytest.param(c, id=f"{c.route} {c.label}") for c in CASES]


@pytest.mark.parametrize("case", PARAMS)
async def test_write_route_emits(client, db, factory, case: Case):
    w = await build(client, db, await factory.workspace("pro"))
    if case.prepare:
        await case.prepare(w)
        await w.mark()
    response = await case.act(w)
    assert response.status_code == case.status, body_of(response)
    assert await w.written() == Counter(case.expected)
    # Each event queued one delivery for the workspace's catch-all endpoint.
    events = await w.events()
    assert await w.deliveries([e.id for e in events]) == Counter({e.id: 1 for e in events})
    if case.check:
        await case.check(w)


@pytest.mark.parametrize("route", sorted(NO_CONTACT_CHANGE))
async def test_write_route_changes_no_contact(client, db, factory, route):
    w = await build(client, db, await factory.workspace("pro"))
    act, prepare = NO_CONTACT_CHANGE[route]
    if prepare:
        await prepare(w)
        await w.mark()
    response = await act(w)
    assert response.status_code in (200, 201, 202), body_of(response)
    assert [e.type for e in await w.events() if e.type.startswith("contact.")] == []
