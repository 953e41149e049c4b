"""Automations, forms and webhooks in blueprints: what was deleted is never carried as an id,
names match whatever their case on every apply, documents in other shapes apply once, and the
CLI shows a new workspace's key even when its blueprint is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import run_cli


@pytest.fixture(autouse=True)
def allow_loopback(settings: Any) -> Any:
    settings.webhook_allow_networks = ["127.0.0.0/8"]
    return settings


async def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


async def imported(client: Any, ws: Any, parts: dict[str, Any]) -> Any:
    doc = {"mailroom_blueprint": 1, "name": "Doc", "parts": parts}
    return await client.post("/api/v1/blueprints/import", headers=ws.headers, json=doc)


async def apply(client: Any, ws: Any, blueprint_id: str, **body: Any) -> Any:
    return await ok(
        await client.post(f"/api/v1/blueprints/{blueprint_id}/apply", headers=ws.headers, json=body)
    )


async def test_deleted_objects_are_never_carried_as_ids(client: Any, factory: Any) -> None:
    ws = await factory.workspace(listen=False)
    h = ws.headers
    keep = await ok(await client.post("/api/v1/lists", headers=h, json={"name": "Keep"}), 201)
    gone = await ok(await client.post("/api/v1/lists", headers=h, json={"name": "Gone"}), 201)
    template = await ok(
        await client.post("/api/v1/templates", headers=h, json={"name": "T", "subject": "s"}), 201
    )
    form = {"name": "F", "list_ids": [keep["list"]["id"], gone["list"]["id"]]}
    await ok(await client.post("/api/v1/forms", headers=h, json=form), 201)
    automation = {
        "name": "A",
        "trigger": {"type": "contact_created"},
        "steps": [{"id": "s1", "type": "send_email", "template_id": template["template"]["id"]}],
    }
    await ok(await client.post("/api/v1/automations", headers=h, json=automation), 201)
    await ok(await client.delete(f"/api/v1/lists/{gone['list']['id']}", headers=h))
    await ok(await client.delete(f"/api/v1/templates/{template['template']['id']}", headers=h))
    made = await ok(await client.post("/api/v1/blueprints", headers=h, json={"name": "B"}), 201)
    doc = await ok(
        await client.get(f"/api/v1/blueprints/{made['blueprint']['id']}/document", headers=h)
    )
    assert doc["parts"]["forms"][0]["list_ids"] == ["Keep"]
    # Its email names a template that is gone: the automation cannot run anywhere.
    assert doc["parts"]["automations"] == []
    assert gone["list"]["id"] not in json.dumps(doc)


async def test_names_in_other_case_stay_unchanged_on_every_apply(client: Any, factory: Any) -> None:
    source = await factory.workspace(listen=False)
    h = source.headers
    news = await ok(await client.post("/api/v1/lists", headers=h, json={"name": "News"}), 201)
    await ok(
        await client.post(
            "/api/v1/forms", headers=h, json={"name": "F", "list_ids": [news["list"]["id"]]}
        ),
        201,
    )
    hook = {
        "url": "http://127.0.0.1:9/x",
        "event_types": ["contact.list_joined"],
        "filters": {"list_ids": [news["list"]["id"]]},
    }
    await ok(await client.post("/api/v1/webhooks", headers=h, json=hook), 201)
    automation = {
        "name": "A",
        "trigger": {"type": "list_joined", "list_id": news["list"]["id"]},
        "steps": [{"id": "s1", "type": "add_to_list", "list_id": news["list"]["id"]}],
    }
    await ok(await client.post("/api/v1/automations", headers=h, json=automation), 201)
    made = await ok(
        await client.post(
            "/api/v1/blueprints",
            headers=h,
            json={"name": "B", "include": ["automations", "forms", "webhooks"]},
        ),
        201,
    )
    target = await factory.workspace(account_id=source.account_id, listen=False)
    await ok(await client.post("/api/v1/lists", headers=target.headers, json={"name": "news"}), 201)
    first = await apply(client, target, made["blueprint"]["id"], dry_run=False)
    assert {r["action"] for r in first["plan"]} == {"create"}
    second = await apply(client, target, made["blueprint"]["id"], dry_run=False)
    assert {r["action"] for r in second["plan"]} == {"unchanged"}, second["plan"]


async def test_documents_in_other_shapes_apply_once(client: Any, factory: Any) -> None:
    ws = await factory.workspace(listen=False)
    made = await ok(
        await imported(
            client,
            ws,
            {
                "lists": [{"name": "L"}],
                "forms": [
                    {
                        "name": "F",
                        "fields": [{"key": "first_name"}],
                        "list_ids": ["L", "L"],
                        "languages": ["EN"],
                    }
                ],
                "webhooks": [
                    {
                        "url": " http://127.0.0.1:9/sp ",
                        "event_types": ["contact.created", "contact.created"],
                        "description": None,
                    }
                ],
                "automations": [
                    {
                        "name": "A",
                        "trigger": {"type": "contact_created"},
                        "steps": [{"id": "w", "type": "wait", "seconds": 60}],
                    }
                ],
            },
        ),
        201,
    )
    bp = made["blueprint"]["id"]
    await apply(client, ws, bp, dry_run=False)
    again = await apply(client, ws, bp, dry_run=False)
    assert {r["action"] for r in again["plan"]} == {"unchanged"}, again["plan"]
    hooks = await ok(await client.get("/api/v1/webhooks", headers=ws.headers))
    assert [w["url"] for w in hooks["webhooks"]] == ["http://127.0.0.1:9/sp"]


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ({"forms": [{"name": "F", "fields": 5}]}, None),
        ({"forms": [{"name": "F", "list_ids": 5}]}, None),
        (
            {
                "automations": [
                    {
                        "name": "A",
                        "trigger": {"type": "contact_created"},
                        "steps": [{"type": "wait", "seconds": 5}],
                    }
                ]
            },
            "parts.automations[0].steps[0].id is required (a step keeps its id)",
        ),
    ],
)
async def test_odd_documents_are_400(client: Any, ws: Any, parts: Any, message: str | None) -> None:
    answer = await imported(client, ws, parts)
    if answer.status_code == 201:  # a shape only the service judges: at apply, as a 400
        blueprint_id = answer.json()["blueprint"]["id"]
        answer = await client.post(
            f"/api/v1/blueprints/{blueprint_id}/apply", headers=ws.headers, json={}
        )
    assert answer.status_code == 400, answer.text
    if message:
        assert answer.json() == {"error": message}


async def test_the_cli_shows_the_key_when_the_blueprint_is_refused(cli_env: Any) -> None:
    made = run_cli("admin", "create-workspace", "--blueprint", "nope", "--json", env=cli_env)
    assert made.returncode == 1
    body = json.loads(made.stdout)
    assert (
        body["api_key"].startswith("mr_live_") and "Blueprint not found" in body["blueprint_error"]
    )


async def test_an_update_field_step_names_its_field_with_or_without_the_prefix(
    client: Any, factory: Any
) -> None:
    """The automation service reads `plan` as `custom_fields.plan`: so does the blueprint (a
    reference checked on import, unchanged on a second apply)."""
    ws = await factory.workspace(listen=False)
    automation = {
        "name": "Mark",
        "trigger": {"type": "contact_created"},
        "steps": [{"id": "s1", "type": "update_field", "field": "plan", "value": "Pro"}],
    }
    dangling = await imported(client, ws, {"automations": [automation]})
    assert dangling.status_code == 400
    assert dangling.json()["error"] == (
        "parts.automations[0].steps[0].field: custom field 'plan' is not in the blueprint "
        "(add it to parts.custom_fields)"
    )
    made = await ok(
        await imported(
            client,
            ws,
            {"custom_fields": [{"key": "plan", "type": "text"}], "automations": [automation]},
        ),
        201,
    )
    first = await apply(client, ws, made["blueprint"]["id"], dry_run=False)
    assert [r["action"] for r in first["plan"]] == ["create", "create"]
    again = await apply(client, ws, made["blueprint"]["id"], dry_run=False)
    assert [r["action"] for r in again["plan"]] == ["unchanged", "unchanged"]
    [listed] = (await ok(await client.get("/api/v1/automations", headers=ws.headers)))[
        "automations"
    ]
    shown = await ok(await client.get(f"/api/v1/automations/{listed['id']}", headers=ws.headers))
    assert shown["automation"]["steps"][0]["field"] == "custom_fields.plan"
