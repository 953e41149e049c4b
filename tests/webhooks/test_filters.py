"""Scoping with filters: a scoped dimension must be on the event; dimensions AND together;
events without a dimension (contact.updated, workspace.*) never reach a scoped endpoint."""

from __future__ import annotations

from tests.webhooks.helpers import (
    attach_tag,
    create_contact,
    create_hook,
    create_list,
    create_tag,
    emit,
    join_list,
)

WORKSPACE_EVENTS = ["workspace.paused", "workspace.resumed", "workspace.health_warning"]


def events_at(receiver, path):
    """What arrived, in event order (deliveries run concurrently: arrival order is free)."""
    return sorted((r.json for r in receiver.at(path)), key=lambda e: e["created_at"])


async def test_list_scoped_endpoint_gets_only_its_list(client, pro, receiver, driver):
    mine = await create_list(client, pro, "Mine")
    other = await create_list(client, pro, "Other")
    await create_hook(
        client,
        pro,
        receiver.url("ok/list"),
        ["contact.list_joined", "contact.list_left", "contact.updated", "contact.created"],
        filters={"list_ids": [mine["id"]]},
    )
    unscoped = await create_hook(
        client, pro, receiver.url("ok/all"), ["contact.list_joined", "contact.updated"]
    )
    contact = await create_contact(client, pro, "l@example.com")
    await join_list(client, pro, other["id"], contact["id"])
    await join_list(client, pro, mine["id"], contact["id"])
    response = await client.patch(
        f"/api/v1/contacts/{contact['id']}", json={"first_name": "Lin"}, headers=pro.headers
    )
    assert response.status_code == 200, response.text
    response = await client.delete(
        f"/api/v1/lists/{other['id']}/contacts/{contact['id']}", headers=pro.headers
    )
    assert response.status_code == 200, response.text
    response = await client.delete(
        f"/api/v1/lists/{mine['id']}/contacts/{contact['id']}", headers=pro.headers
    )
    assert response.status_code == 200, response.text
    await driver.drain()

    got = events_at(receiver, "ok/list")
    assert [e["event"] for e in got] == ["contact.list_joined", "contact.list_left"]
    for event in got:
        assert event["data"]["contact"]["id"] == contact["id"]
    assert got[0]["data"]["list"]["id"] == mine["id"]
    assert unscoped["filters"] in ({}, None)
    assert sorted(e["event"] for e in events_at(receiver, "ok/all")) == [
        "contact.list_joined",
        "contact.list_joined",
        "contact.updated",
    ]


async def test_tag_scoped_endpoint_gets_only_its_tag(client, pro, receiver, driver):
    vip = await create_tag(client, pro, "vip")
    trial = await create_tag(client, pro, "trial")
    await create_hook(
        client,
        pro,
        receiver.url("ok/tag"),
        ["contact.tag_added", "contact.tag_removed", "contact.updated", "contact.list_joined"],
        filters={"tag_ids": [vip["id"]]},
    )
    contact = await create_contact(client, pro, "t@example.com")
    newsletter = await create_list(client, pro, "News")
    await attach_tag(client, pro, contact["id"], trial["id"])
    await attach_tag(client, pro, contact["id"], vip["id"])
    await join_list(client, pro, newsletter["id"], contact["id"])
    await client.patch(
        f"/api/v1/contacts/{contact['id']}", json={"last_name": "Tan"}, headers=pro.headers
    )
    for tag in (trial, vip):
        response = await client.delete(
            f"/api/v1/contacts/{contact['id']}/tags/{tag['id']}", headers=pro.headers
        )
        assert response.status_code == 200, response.text
    await driver.drain()

    got = events_at(receiver, "ok/tag")
    assert [e["event"] for e in got] == ["contact.tag_added", "contact.tag_removed"]
    assert all(e["data"]["tag"]["id"] == vip["id"] for e in got)


async def test_two_dimensions_combine_with_and(client, pro, receiver, driver, db, hook_settings):
    news = await create_list(client, pro, "News")
    vip = await create_tag(client, pro, "vip")
    trial = await create_tag(client, pro, "trial")
    await create_hook(
        client,
        pro,
        receiver.url("ok/and"),
        ["contact.list_joined", "contact.tag_added"],
        filters={"list_ids": [news["id"]], "tag_ids": [vip["id"]]},
    )
    # Real operations carry one of the two dimensions only: nothing matches.
    contact = await create_contact(client, pro, "a@example.com")
    await join_list(client, pro, news["id"], contact["id"])
    await attach_tag(client, pro, contact["id"], vip["id"])
    # Events carrying both dimensions: only the one with both matching ids gets through.
    ws = pro.workspace_id
    await emit(
        db,
        hook_settings,
        ws,
        "contact.list_joined",
        {"n": "both"},
        list_id=news["id"],
        tag_id=vip["id"],
    )
    await emit(
        db,
        hook_settings,
        ws,
        "contact.list_joined",
        {"n": "wrong-tag"},
        list_id=news["id"],
        tag_id=trial["id"],
    )
    await emit(db, hook_settings, ws, "contact.list_joined", {"n": "list-only"}, list_id=news["id"])
    await emit(db, hook_settings, ws, "contact.tag_added", {"n": "tag-only"}, tag_id=vip["id"])
    await driver.drain()
    assert [e["data"] for e in events_at(receiver, "ok/and")] == [{"n": "both"}]


async def test_several_ids_in_one_dimension_are_alternatives(client, pro, receiver, driver):
    a = await create_list(client, pro, "A")
    b = await create_list(client, pro, "B")
    c = await create_list(client, pro, "C")
    await create_hook(
        client,
        pro,
        receiver.url("ok/or"),
        ["contact.list_joined"],
        filters={"list_ids": [a["id"], b["id"]]},
    )
    contact = await create_contact(client, pro, "o@example.com")
    for target in (a, b, c):
        await join_list(client, pro, target["id"], contact["id"])
    await driver.drain()
    assert sorted(e["data"]["list"]["id"] for e in events_at(receiver, "ok/or")) == sorted(
        [a["id"], b["id"]]
    )


async def test_workspace_events_never_reach_a_scoped_endpoint(
    client, pro, receiver, driver, db, hook_settings
):
    news = await create_list(client, pro, "News")
    vip = await create_tag(client, pro, "vip")
    await create_hook(
        client,
        pro,
        receiver.url("ok/ws-list"),
        WORKSPACE_EVENTS,
        filters={"list_ids": [news["id"]]},
    )
    await create_hook(
        client, pro, receiver.url("ok/ws-tag"), WORKSPACE_EVENTS, filters={"tag_ids": [vip["id"]]}
    )
    await create_hook(client, pro, receiver.url("ok/ws-all"), WORKSPACE_EVENTS, filters={})
    for name in WORKSPACE_EVENTS:
        await emit(db, hook_settings, pro.workspace_id, name, {"reason": "x"})
    await driver.drain()
    assert receiver.at("ok/ws-list") == []
    assert receiver.at("ok/ws-tag") == []
    assert sorted(e["event"] for e in events_at(receiver, "ok/ws-all")) == sorted(WORKSPACE_EVENTS)


async def test_contact_created_never_reaches_a_list_scoped_endpoint(client, pro, receiver, driver):
    news = await create_list(client, pro, "News")
    await create_hook(
        client,
        pro,
        receiver.url("ok/created"),
        ["contact.created", "contact.deleted", "contact.unsubscribed"],
        filters={"list_ids": [news["id"]]},
    )
    contact = await create_contact(client, pro, "c@example.com")
    await join_list(client, pro, news["id"], contact["id"])
    await client.patch(
        f"/api/v1/contacts/{contact['id']}", json={"status": "unsubscribed"}, headers=pro.headers
    )
    await client.delete(f"/api/v1/contacts/{contact['id']}", headers=pro.headers)
    await driver.drain()
    assert receiver.at("ok/created") == []


async def test_changing_filters_applies_to_later_events(client, pro, receiver, driver):
    a = await create_list(client, pro, "A")
    b = await create_list(client, pro, "B")
    hook = await create_hook(
        client,
        pro,
        receiver.url("ok/change"),
        ["contact.list_joined"],
        filters={"list_ids": [a["id"]]},
    )
    first = await create_contact(client, pro, "1@example.com")
    await join_list(client, pro, b["id"], first["id"])
    response = await client.patch(
        f"/api/v1/webhooks/{hook['id']}",
        json={"filters": {"list_ids": [b["id"]]}},
        headers=pro.headers,
    )
    assert response.status_code == 200, response.text
    assert response.json()["filters"] == {"list_ids": [b["id"]]}
    second = await create_contact(client, pro, "2@example.com")
    await join_list(client, pro, a["id"], second["id"])
    await join_list(client, pro, b["id"], second["id"])
    await driver.drain()
    got = events_at(receiver, "ok/change")
    assert [(e["data"]["contact"]["id"], e["data"]["list"]["id"]) for e in got] == [
        (second["id"], b["id"])
    ]
