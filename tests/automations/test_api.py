"""The automation resource: CRUD on the shared named shape, what a bad trigger or step is
told, activation under the plan's cap, pausing, and one workspace never seeing another's."""

from __future__ import annotations

import pytest

from tests.automations.helpers import activate, make_automation, make_tag
from tests.sending.helpers import ok

WAIT = {"type": "wait", "seconds": 60}


async def test_create_read_list_update_delete(client, ws):
    created = await make_automation(
        client, ws, name="Welcome", trigger={"type": "contact_created"}, steps=[WAIT]
    )
    assert created["status"] == "draft" and created["allow_reentry"] is False
    assert created["steps"][0]["id"] and created["steps"][0]["label"] == "Wait"
    assert created["stats"] == {
        "enrolled": 0,
        "active": 0,
        "completed": 0,
        "exited": 0,
        "failed": 0,
        # No store, nothing bought: zero, in no currency.
        "revenue": {"orders": 0, "total": "0.00", "currency": None, "by_currency": None},
    }
    clash = await client.post(
        "/api/v1/automations",
        json={"name": "WELCOME", "trigger": {"type": "manual"}},
        headers=ws.headers,
    )
    assert (clash.status_code, clash.json()["error"]) == (
        409,
        "An automation with this name already exists",
    )
    url = f"/api/v1/automations/{created['id']}"
    changed = await ok(
        await client.patch(
            url,
            json={"name": "Hello", "steps": [{**WAIT, "id": "w1", "label": "A minute"}]},
            headers=ws.headers,
        )
    )
    assert changed["automation"]["name"] == "Hello"
    assert changed["automation"]["steps"] == [
        {"id": "w1", "type": "wait", "label": "A minute", "seconds": 60}
    ]
    listed = await ok(await client.get("/api/v1/automations?limit=10", headers=ws.headers))
    assert [a["name"] for a in listed["automations"]] == ["Hello"]
    assert listed["pagination"]["total"] == 1
    gone = await client.delete(url, headers=ws.headers)
    assert (gone.status_code, gone.json()) == (200, {"success": True, "id": created["id"]})
    assert (await client.get(url, headers=ws.headers)).status_code == 404


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"trigger": {"type": "birthday"}},
            "trigger.type must be one of: contact_created, "
            "tag_added, list_joined, form_submitted, date_anniversary, manual, order_placed, "
            "cart_abandoned",
        ),
        ({"trigger": {"type": "tag_added"}}, "trigger.tag_id is required"),
        ({"trigger": {"type": "tag_added", "tag_id": "nope"}}, "trigger.tag_id: Tag not found"),
        ({"steps": [{"type": "wait", "seconds": 0}]}, "steps[0].seconds must be at least 1"),
        ({"steps": [{"type": "wait"}]}, "steps[0].seconds or steps[0].until is required"),
        ({"steps": [{"type": "wait", "seconds": 1.5}]}, "steps[0].seconds must be an integer"),
        (
            {"steps": [{"type": "jump"}]},
            "steps[0].type must be one of: wait, send_email, "
            "add_tag, remove_tag, add_to_list, remove_from_list, update_field, condition, "
            "call_webhook, exit",
        ),
        (
            {"steps": [WAIT, {"type": "add_tag", "tag_id": "nope"}]},
            "steps[1].tag_id: Tag not found",
        ),
        (
            {"steps": [{"type": "send_email", "template_id": "nope"}]},
            "steps[0].template_id: Template not found",
        ),
        (
            {"steps": [{**WAIT, "id": "a"}, {**WAIT, "id": "a"}]},
            "steps[1].id a is used by another step",
        ),
        (
            {"steps": [{"type": "condition", "rules": {"conditions": []}, "yes": [{"type": "x"}]}]},
            "steps[0].yes[0].type must be one of: wait, send_email, add_tag, remove_tag, "
            "add_to_list, remove_from_list, update_field, condition, call_webhook, exit",
        ),
        (
            {"steps": [{"type": "update_field", "field": "plan", "value": "gold"}]},
            "steps[0].field: custom field plan is not registered",
        ),
        ({"time_zone": "Mars/Olympus"}, "time_zone must be an IANA time zone like Europe/Paris"),
    ],
)
async def test_bad_triggers_and_steps_are_named_and_change_nothing(client, ws, body, message):
    sent = {"name": "Broken", "trigger": {"type": "manual"}, **body}
    refused = await client.post("/api/v1/automations", json=sent, headers=ws.headers)
    assert (refused.status_code, refused.json()) == (400, {"error": message})
    listed = await ok(await client.get("/api/v1/automations", headers=ws.headers))
    assert listed["automations"] == []


async def test_a_whole_number_written_as_a_float_is_an_integer(client, ws):
    # JSON Schema counts 60.0 as an integer; clients that write numbers as floats must not be refused
    sent = {"name": "Floaty", "trigger": {"type": "manual"}, "steps": [{**WAIT, "seconds": 60.0}]}
    made = await ok(await client.post("/api/v1/automations", json=sent, headers=ws.headers), 201)
    path = f"/api/v1/automations/{made['automation']['id']}"
    read = (await ok(await client.get(path, headers=ws.headers)))["automation"]
    assert read["steps"][0]["seconds"] == 60


async def test_the_plan_caps_live_automations(client, factory):
    free = await factory.workspace(plan="free")
    first = await make_automation(
        client, free, name="One", trigger={"type": "manual"}, steps=[WAIT]
    )
    second = await make_automation(
        client, free, name="Two", trigger={"type": "manual"}, steps=[WAIT]
    )
    assert (await activate(client, free, first["id"]))["status"] == "active"
    refused = await client.post(
        f"/api/v1/automations/{second['id']}/activate", headers=free.headers
    )
    assert (refused.status_code, refused.json()) == (
        403,
        {
            "error": "Your plan allows 1 live automations across your workspaces. "
            "Pause one or upgrade."
        },
    )
    paused = await ok(
        await client.post(f"/api/v1/automations/{first['id']}/pause", headers=free.headers)
    )
    assert paused["automation"]["status"] == "paused"
    assert (await activate(client, free, second["id"]))["status"] == "active"


async def test_an_automation_without_steps_is_not_activated(client, ws):
    empty = await make_automation(client, ws, trigger={"type": "manual"})
    refused = await client.post(f"/api/v1/automations/{empty['id']}/activate", headers=ws.headers)
    assert (refused.status_code, refused.json()) == (
        409,
        {"error": "An automation needs at least one step to be activated"},
    )


async def test_another_workspaces_automation_is_404(client, ws, factory):
    other = await factory.workspace()
    tag = await make_tag(client, other, "Theirs")
    theirs = await make_automation(
        client, other, trigger={"type": "tag_added", "tag_id": tag}, steps=[WAIT]
    )
    for method, path in (
        ("GET", ""),
        ("PATCH", ""),
        ("DELETE", ""),
        ("POST", "/activate"),
        ("POST", "/pause"),
        ("GET", "/runs"),
    ):
        answer = await client.request(
            method,
            f"/api/v1/automations/{theirs['id']}{path}",
            json={"name": "Mine"} if method == "PATCH" else None,
            headers=ws.headers,
        )
        assert (answer.status_code, answer.json()) == (404, {"error": "Automation not found"})
    # Their tag is not ours to trigger on either.
    refused = await client.post(
        "/api/v1/automations",
        json={"name": "Sneaky", "trigger": {"type": "tag_added", "tag_id": tag}},
        headers=ws.headers,
    )
    assert refused.json() == {"error": "trigger.tag_id: Tag not found"}


async def test_another_workspaces_contacts_are_not_enrolled(client, ws, factory):
    other = await factory.workspace()
    theirs = (
        await ok(
            await client.post(
                "/api/v1/contacts", json={"email": "them@acme.io"}, headers=other.headers
            ),
            201,
        )
    )["contact"]["id"]
    mine = await make_automation(client, ws, trigger={"type": "manual"}, steps=[WAIT])
    await activate(client, ws, mine["id"])
    answer = await client.post(
        f"/api/v1/automations/{mine['id']}/enrol",
        json={"contact_ids": [theirs]},
        headers=ws.headers,
    )
    assert (answer.status_code, answer.json()) == (200, {"enrolled": 0})
