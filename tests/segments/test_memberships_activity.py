"""Segment rules over tags, lists and the send log (`activity`; the sending engine writes the
log, so these tests write its rows as the engine leaves them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.segments.helpers import cond, contact, matched, named, rule, sent, tag

A, B, C, D, E = (f"{x}@example.org" for x in "abcde")


async def _check(client, ws, cases) -> None:
    wrong = []
    for condition, expected in cases:
        got = await matched(client, ws.headers, rule(condition))
        if got != expected:
            wrong.append((condition, sorted(got), sorted(expected)))
    assert wrong == []


async def test_tags(client, ws):
    ids = {e: await contact(client, ws.headers, e) for e in (A, B, C, D)}
    t1, t2, t3 = [await named(client, ws.headers, "tags", n) for n in ("t1", "t2", "t3")]
    for email, held in ((A, [t1]), (B, [t1, t2]), (C, [t2])):
        for tag_id in held:
            await tag(client, ws.headers, ids[email], tag_id)
    await _check(
        client,
        ws,
        [
            (cond("tags", "has_any", [t1]), {A, B}),
            (cond("tags", "has_any", [t1, t2]), {A, B, C}),
            (cond("tags", "has_all", [t1, t2]), {B}),
            (cond("tags", "has_all", [t1, t1]), {A, B}),
            (cond("tags", "has_all", [t1, t3]), set()),
            (cond("tags", "has_none", [t1]), {C, D}),
            (cond("tags", "has_none", [t3]), {A, B, C, D}),
        ],
    )
    saved = await client.post(
        "/api/v1/segments",
        json={"name": "t1", "rules": rule(cond("tags", "has_any", [t1]))},
        headers=ws.headers,
    )
    assert saved.status_code == 201
    assert (await client.delete(f"/api/v1/tags/{t1}", headers=ws.headers)).status_code == 200
    # A deleted tag is held by nobody: the rule stays and matches no one.
    preview = await client.get(
        f"/api/v1/segments/{saved.json()['segment']['id']}/preview", headers=ws.headers
    )
    assert preview.status_code == 200
    assert preview.json()["count"] == 0


async def test_lists(client, ws):
    ids = {e: await contact(client, ws.headers, e) for e in (A, B, C, D)}
    single = await named(client, ws.headers, "lists", "Single")
    double = await named(client, ws.headers, "lists", "Double", double_opt_in=True)
    for list_id, members in ((single, [A, C]), (double, [B, C])):
        response = await client.post(
            f"/api/v1/lists/{list_id}/contacts",
            json={"contact_ids": [ids[e] for e in members]},
            headers=ws.headers,
        )
        assert response.status_code == 200, response.text
    await _check(
        client,
        ws,
        [
            (cond("lists", "member", single), {A, C}),
            (cond("lists", "member", double), {B, C}),
            (cond("lists", "confirmed_member", single), {A, C}),
            (cond("lists", "confirmed_member", double), set()),
            (cond("lists", "not_member", single), {B, D}),
        ],
    )


async def test_activity(client, ws, db, factory):
    ids = {e: await contact(client, ws.headers, e) for e in (A, B, C, D, E)}
    now = datetime.now(UTC)
    x, y = "campaign-x", "campaign-y"
    await sent(
        db,
        ws.workspace_id,
        ids[A],
        at=now - timedelta(days=10),
        campaign_id=x,
        opened=now - timedelta(days=9),
    )
    await sent(db, ws.workspace_id, ids[B], at=now - timedelta(days=10), campaign_id=x)
    await sent(
        db,
        ws.workspace_id,
        ids[B],
        at=now - timedelta(days=100),
        campaign_id=y,
        opened=now - timedelta(days=99),
        clicked=now - timedelta(days=99),
    )
    await sent(
        db,
        ws.workspace_id,
        ids[C],
        at=now - timedelta(days=10),
        campaign_id=x,
        bounced=now - timedelta(days=10),
    )
    await sent(
        db,
        ws.workspace_id,
        ids[E],
        at=now - timedelta(days=2),
        opened=now - timedelta(days=1),
        clicked=now - timedelta(days=1),
    )
    # Another workspace's log says nothing about this one.
    other = await factory.workspace("pro")
    stranger = await contact(client, other.headers, D)
    await sent(db, other.workspace_id, stranger, at=now, campaign_id=x, opened=now)
    await _check(
        client,
        ws,
        [
            (cond("activity", "received"), {A, B, E}),
            (cond("activity", "received", {"campaign_id": x}), {A, B}),
            (cond("activity", "received", {"campaign_id": "another"}), set()),
            (cond("activity", "opened"), {A, B, E}),
            (cond("activity", "opened", {"within_days": 30}), {A, E}),
            (cond("activity", "opened", {"campaign_id": x, "within_days": 30}), {A}),
            (cond("activity", "clicked"), {B, E}),
            (cond("activity", "clicked", {"within_days": 30}), {E}),
            (cond("activity", "not_opened"), set()),
            (cond("activity", "not_opened", {"campaign_id": x}), {B}),
            (cond("activity", "not_opened", {"within_days": 30}), {B}),
        ],
    )


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        (cond("tags", "has_any", ["nope"]), "conditions[0].value[0]: Tag not found"),
        (cond("tags", "has_any", []), "conditions[0].value: must be an array of 1 to 100 tag ids"),
        (cond("tags", "has_any", "t"), "conditions[0].value: must be an array of 1 to 100 tag ids"),
        (cond("tags", "eq", ["x"]), "conditions[0].op: eq is not valid for tags"),
        (cond("lists", "member", "nope"), "conditions[0].value: List not found"),
        (cond("lists", "member", ["x"]), "conditions[0].value: must be a list id"),
        (cond("lists", "has_any", "x"), "conditions[0].op: has_any is not valid for lists"),
        (cond("activity", "bounced"), "conditions[0].op: bounced is not valid for activity"),
        (
            cond("activity", "opened", "x"),
            "conditions[0].value: must be an object with campaign_id and/or within_days",
        ),
        (cond("activity", "opened", {"x": 1}), "conditions[0].value: unknown key(s): x"),
        (
            cond("activity", "opened", {"campaign_id": 5}),
            "conditions[0].value.campaign_id: must be a campaign id",
        ),
        (
            cond("activity", "opened", {"within_days": 0}),
            "conditions[0].value.within_days: must be a whole number of days from 1 to 36500",
        ),
    ],
)
async def test_bad_membership_and_activity_rules_are_400(client, ws, condition, message):
    response = await client.post(
        "/api/v1/segments/preview", json={"rules": rule(condition)}, headers=ws.headers
    )
    assert response.status_code == 400
    assert response.json() == {"error": message}


async def test_ids_of_another_workspace_are_unknown_and_nested_places_are_named(
    client, ws, factory
):
    other = await factory.workspace("pro")
    mine = await named(client, ws.headers, "tags", "mine")
    theirs = await named(client, other.headers, "tags", "theirs")
    their_list = await named(client, other.headers, "lists", "theirs")
    rules = rule(
        cond("email", "contains", "@"),
        rule(cond("tags", "has_any", [mine, theirs]), match="any"),
    )
    response = await client.post(
        "/api/v1/segments", json={"name": "S", "rules": rules}, headers=ws.headers
    )
    assert response.status_code == 400
    assert response.json() == {"error": "conditions[1].conditions[0].value[1]: Tag not found"}
    response = await client.post(
        "/api/v1/segments",
        json={"name": "S", "rules": rule(cond("lists", "not_member", their_list))},
        headers=ws.headers,
    )
    assert response.status_code == 400
    assert response.json() == {"error": "conditions[0].value: List not found"}
    assert (await client.get("/api/v1/segments", headers=ws.headers)).json()["segments"] == []
