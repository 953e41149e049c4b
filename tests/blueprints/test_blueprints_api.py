"""Blueprints through the API: capture a workspace, apply it to another of the account, plans,
conflicts, idempotence, permissions and document validation."""

from __future__ import annotations

from typing import Any

import pytest

PARTS = [
    "custom_fields",
    "tags",
    "lists",
    "segments",
    "templates",
    "automations",
    "forms",
    "webhooks",
    "sending",
]


@pytest.fixture(autouse=True)
def allow_loopback(settings: Any) -> Any:
    """Every test workspace has a catch-all endpoint on 127.0.0.1 (conftest's `listen`): the
    webhooks part carries it, and the guard must let its URL through here."""
    settings.webhook_allow_networks = ["127.0.0.0/8"]
    return settings


async def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


async def set_up_source(client: Any, ws: Any) -> None:
    h = ws.headers
    await ok(
        await client.post(
            "/api/v1/custom-fields",
            headers=h,
            json={"key": "plan", "label": "Plan", "type": "dropdown", "options": ["Free", "Pro"]},
        ),
        201,
    )
    await ok(
        await client.post(
            "/api/v1/custom-fields",
            headers=h,
            json={"key": "joined", "label": "Joined", "type": "date"},
        ),
        201,
    )
    vip = await ok(
        await client.post("/api/v1/tags", headers=h, json={"name": "VIP", "color": "#2563eb"}), 201
    )
    news = await ok(
        await client.post(
            "/api/v1/lists",
            headers=h,
            json={"name": "Newsletter", "description": "Weekly", "double_opt_in": True},
        ),
        201,
    )
    rules = {
        "match": "all",
        "conditions": [
            {"field": "tags", "op": "has_any", "value": [vip["tag"]["id"]]},
            {"field": "lists", "op": "member", "value": news["list"]["id"]},
            {"field": "custom_fields.plan", "op": "eq", "value": "Pro"},
        ],
    }
    await ok(
        await client.post("/api/v1/segments", headers=h, json={"name": "Pro VIPs", "rules": rules}),
        201,
    )
    welcome = await ok(
        await client.post(
            "/api/v1/templates",
            headers=h,
            json={
                "name": "Welcome",
                "subject": "Welcome, {{ first_name | default('friend') }}",
                "html_content": "<p>Hi {{ first_name }}</p>",
            },
        ),
        201,
    )
    automation = {
        "name": "Welcome series",
        "trigger": {"type": "list_joined", "list_id": news["list"]["id"]},
        "steps": [
            {
                "id": "hello",
                "type": "send_email",
                "label": "Say hello",
                "template_id": welcome["template"]["id"],
            },
            {"id": "pause", "type": "wait", "seconds": 3600},
            {
                "id": "vip",
                "type": "condition",
                "rules": {
                    "match": "all",
                    "conditions": [{"field": "tags", "op": "has_any", "value": [vip["tag"]["id"]]}],
                },
                "yes": [
                    {
                        "id": "thanks",
                        "type": "update_field",
                        "field": "custom_fields.plan",
                        "value": "Pro",
                    }
                ],
                "no": [{"id": "tag", "type": "add_tag", "tag_id": vip["tag"]["id"]}],
            },
        ],
    }
    await ok(await client.post("/api/v1/automations", headers=h, json=automation), 201)
    form = {
        "name": "Signup",
        "fields": [{"key": "email"}, {"key": "first_name", "label": "Your name"}, {"key": "plan"}],
        "list_ids": [news["list"]["id"]],
        "success_message": "Thanks!",
    }
    await ok(await client.post("/api/v1/forms", headers=h, json=form), 201)
    await ok(
        await client.patch(
            "/api/v1/sending",
            headers=h,
            json={"from_name": "Acme News", "reply_to": "hello@acme.io"},
        )
    )


async def capture(client: Any, ws: Any, name: str = "Set-up", **body: Any) -> dict[str, Any]:
    made = await ok(
        await client.post("/api/v1/blueprints", headers=ws.headers, json={"name": name, **body}),
        201,
    )
    return made["blueprint"]


async def document(client: Any, ws: Any, blueprint_id: str) -> dict[str, Any]:
    return await ok(
        await client.get(f"/api/v1/blueprints/{blueprint_id}/document", headers=ws.headers)
    )


async def apply(client: Any, ws: Any, blueprint_id: str, **body: Any) -> Any:
    return await client.post(
        f"/api/v1/blueprints/{blueprint_id}/apply", headers=ws.headers, json=body
    )


async def test_capture_apply_capture_round_trip(client: Any, factory: Any, ws: Any) -> None:
    await set_up_source(client, ws)
    blueprint = await capture(client, ws)
    assert blueprint["parts"] == PARTS
    assert blueprint["counts"] == {
        "custom_fields": 2,
        "tags": 1,
        "lists": 1,
        "segments": 1,
        "templates": 1,
        "automations": 1,
        "forms": 1,
        "webhooks": 1,
        "sending": 1,
    }
    assert blueprint["source_workspace_id"] == ws.workspace_id
    source = await document(client, ws, blueprint["id"])
    assert source["mailroom_blueprint"] == 1
    rule = source["parts"]["segments"][0]["rules"]
    # Named, never by id.
    assert rule["conditions"][0]["value"] == ["VIP"]
    assert rule["conditions"][1]["value"] == "Newsletter"
    assert source["parts"]["forms"][0]["list_ids"] == ["Newsletter"]

    target = await factory.workspace(account_id=ws.account_id)
    # Every workspace of the account sees the account's blueprints.
    listed = await ok(await client.get("/api/v1/blueprints", headers=target.headers))
    assert [b["id"] for b in listed["blueprints"]] == [
        "starter-newsletter",
        "starter-shop",
        blueprint["id"],
    ]

    dry = await ok(await apply(client, target, blueprint["id"]))
    assert (dry["dry_run"], dry["applied"]) == (True, False)
    assert {(row["part"], row["name"], row["action"]) for row in dry["plan"]} == {
        ("custom_fields", "plan", "create"),
        ("custom_fields", "joined", "create"),
        ("tags", "VIP", "create"),
        ("lists", "Newsletter", "create"),
        ("segments", "Pro VIPs", "create"),
        ("templates", "Welcome", "create"),
        ("forms", "Signup", "create"),
        ("automations", "Welcome series", "create"),
        ("webhooks", "http://127.0.0.1:9/recorder", "unchanged"),  # conftest's, in both
        ("sending", "sending", "create"),
    }
    assert (await ok(await client.get("/api/v1/tags", headers=target.headers)))["tags"] == []

    real = await ok(await apply(client, target, blueprint["id"], dry_run=False))
    assert (real["dry_run"], real["applied"]) == (False, True)
    again = await capture(client, target, "Target")
    assert (await document(client, target, again["id"]))["parts"] == source["parts"]
    # The segment in the target names the target's own tag and list.
    segments = await ok(await client.get("/api/v1/segments", headers=target.headers))
    tags = await ok(await client.get("/api/v1/tags", headers=target.headers))
    assert segments["segments"][0]["rules"]["conditions"][0]["value"] == [tags["tags"][0]["id"]]

    # Created paused: activating it stays the person's act.
    made = await ok(await client.get("/api/v1/automations", headers=target.headers))
    assert [a["status"] for a in made["automations"]] == ["paused"]
    steps = source["parts"]["automations"][0]["steps"]
    assert steps[0]["template_id"] == "Welcome" and steps[0]["label"] == "Say hello"
    assert steps[2]["no"][0]["tag_id"] == "VIP"
    # Idempotent: a second apply is all unchanged.
    second = await ok(await apply(client, target, blueprint["id"], dry_run=False))
    assert {row["action"] for row in second["plan"]} == {"unchanged"}


async def test_conflicts_refuse_and_change_nothing(client: Any, factory: Any, ws: Any) -> None:
    await set_up_source(client, ws)
    blueprint = await capture(client, ws)
    target = await factory.workspace(account_id=ws.account_id)
    await ok(
        await client.post(
            "/api/v1/custom-fields", headers=target.headers, json={"key": "plan", "type": "text"}
        ),
        201,
    )
    await ok(
        await client.post(
            "/api/v1/tags", headers=target.headers, json={"name": "vip", "color": "#000000"}
        ),
        201,
    )
    dry = await ok(await apply(client, target, blueprint["id"]))
    rows = {(row["part"], row["name"]): row for row in dry["plan"]}
    assert rows[("custom_fields", "plan")]["action"] == "conflict"
    assert rows[("custom_fields", "plan")]["reason"] == (
        "a custom field plan exists here with type text, not dropdown"
    )
    assert rows[("tags", "VIP")]["action"] == "skip"
    refused = await apply(client, target, blueprint["id"], dry_run=False)
    assert refused.status_code == 409
    body = refused.json()
    assert body["error"] == "Blueprint conflicts with this workspace"
    assert body["plan"] == dry["plan"]
    lists = await ok(await client.get("/api/v1/lists", headers=target.headers))
    assert lists["lists"] == []


async def test_on_conflict_update(client: Any, factory: Any, ws: Any) -> None:
    await set_up_source(client, ws)
    blueprint = await capture(client, ws, include=["tags", "lists"])
    target = await factory.workspace(account_id=ws.account_id)
    await ok(
        await client.post(
            "/api/v1/tags", headers=target.headers, json={"name": "VIP", "color": "#000000"}
        ),
        201,
    )
    skipped = await ok(await apply(client, target, blueprint["id"], dry_run=False))
    assert {(r["name"], r["action"]) for r in skipped["plan"]} == {
        ("VIP", "skip"),
        ("Newsletter", "create"),
    }
    tags = await ok(await client.get("/api/v1/tags", headers=target.headers))
    assert tags["tags"][0]["color"] == "#000000"
    updated = await ok(
        await apply(client, target, blueprint["id"], dry_run=False, on_conflict="update")
    )
    assert {(r["name"], r["action"]) for r in updated["plan"]} == {
        ("VIP", "update"),
        ("Newsletter", "unchanged"),
    }
    tags = await ok(await client.get("/api/v1/tags", headers=target.headers))
    assert tags["tags"][0]["color"] == "#2563eb"


async def test_a_name_neither_in_the_blueprint_nor_here_is_a_conflict(
    client: Any, factory: Any, ws: Any
) -> None:
    await set_up_source(client, ws)
    blueprint = await capture(client, ws, include=["segments"])
    target = await factory.workspace(account_id=ws.account_id)
    refused = await apply(client, target, blueprint["id"], dry_run=False)
    assert refused.status_code == 409
    [row] = refused.json()["plan"]
    assert (row["action"], row["reason"]) == (
        "conflict",
        "tag 'VIP' is neither in the blueprint nor here",
    )


async def test_permissions(client: Any, factory: Any, ws: Any) -> None:
    await set_up_source(client, ws)
    tags_only = await factory.key(ws, ["tags:read", "tags:write"])
    refused = await client.post("/api/v1/blueprints", headers=tags_only, json={"name": "All"})
    assert (refused.status_code, refused.json()) == (
        403,
        {"error": "Forbidden: contacts:read permission required"},
    )
    made = await client.post(
        "/api/v1/blueprints", headers=tags_only, json={"name": "Tags", "include": ["tags"]}
    )
    assert made.status_code == 201
    full = await capture(client, ws)
    no_write = await factory.key(ws, ["contacts:read", "tags:read"])
    refused = await client.post(f"/api/v1/blueprints/{full['id']}/apply", headers=no_write, json={})
    assert (refused.status_code, refused.json()) == (
        403,
        {"error": "Forbidden: contacts:write permission required"},
    )
    nothing = await factory.key(ws, ["campaigns:send"])
    listed = await client.get("/api/v1/blueprints", headers=nothing)
    assert listed.status_code == 403


async def test_other_accounts_never_see_a_blueprint(client: Any, factory: Any, ws: Any) -> None:
    blueprint = await capture(client, ws, include=["tags"])
    stranger = await factory.workspace()
    for method, path in (
        ("GET", f"/api/v1/blueprints/{blueprint['id']}"),
        ("GET", f"/api/v1/blueprints/{blueprint['id']}/document"),
        ("PATCH", f"/api/v1/blueprints/{blueprint['id']}"),
        ("DELETE", f"/api/v1/blueprints/{blueprint['id']}"),
        ("POST", f"/api/v1/blueprints/{blueprint['id']}/apply"),
    ):
        body = {"name": "x"} if method == "PATCH" else ({} if method == "POST" else None)
        answer = await client.request(method, path, headers=stranger.headers, json=body)
        assert (answer.status_code, answer.json()) == (404, {"error": "Blueprint not found"}), path
    theirs = await ok(await client.get("/api/v1/blueprints", headers=stranger.headers))
    assert [b["id"] for b in theirs["blueprints"]] == ["starter-newsletter", "starter-shop"]


async def test_rename_and_delete(client: Any, ws: Any) -> None:
    blueprint = await capture(client, ws, include=["tags"])
    renamed = await ok(
        await client.patch(
            f"/api/v1/blueprints/{blueprint['id']}",
            headers=ws.headers,
            json={"name": "Shop", "description": "For shops"},
        )
    )
    assert (renamed["blueprint"]["name"], renamed["blueprint"]["description"]) == (
        "Shop",
        "For shops",
    )
    assert (await document(client, ws, blueprint["id"]))["name"] == "Shop"
    gone = await ok(
        await client.delete(f"/api/v1/blueprints/{blueprint['id']}", headers=ws.headers)
    )
    assert gone == {"success": True, "id": blueprint["id"]}
    missing = await client.get(f"/api/v1/blueprints/{blueprint['id']}", headers=ws.headers)
    assert missing.status_code == 404


async def test_import_a_document(client: Any, factory: Any, ws: Any) -> None:
    doc = {
        "mailroom_blueprint": 1,
        "name": "Imported",
        "parts": {
            "tags": [{"name": "VIP", "color": "#2563eb"}],
            "segments": [
                {
                    "name": "VIPs",
                    "rules": {
                        "match": "all",
                        "conditions": [{"field": "tags", "op": "has_any", "value": ["vip"]}],
                    },
                }
            ],
        },
    }
    made = await ok(
        await client.post("/api/v1/blueprints/import", headers=ws.headers, json=doc), 201
    )
    assert made["blueprint"]["counts"] == {"tags": 1, "segments": 1}
    assert made["blueprint"]["source_workspace_id"] is None
    applied = await ok(await apply(client, ws, made["blueprint"]["id"], dry_run=False))
    assert [r["action"] for r in applied["plan"]] == ["create", "create"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"mailroom_blueprint": 2, "name": "x", "parts": {}},
            "mailroom_blueprint: unsupported version 2 (this Mailroom reads 1)",
        ),
        ({"name": "x", "parts": {}}, "mailroom_blueprint is required (the document's version, 1)"),
        (
            {"mailroom_blueprint": 1, "name": "x", "parts": {"robots": []}},
            "parts.robots: unknown part (one of custom_fields, tags, lists, segments, templates, automations, forms, webhooks, sending)",
        ),
        (
            {"mailroom_blueprint": 1, "name": "x", "parts": {"tags": [{"color": "#000000"}]}},
            "parts.tags[0].name is required",
        ),
        (
            {
                "mailroom_blueprint": 1,
                "name": "x",
                "parts": {"tags": [{"name": "A"}, {"name": " a "}]},
            },
            "parts.tags[1].name: the same as parts.tags[0].name",
        ),
        (
            {
                "mailroom_blueprint": 1,
                "name": "x",
                "parts": {
                    "segments": [
                        {
                            "name": "S",
                            "rules": {
                                "match": "all",
                                "conditions": [{"field": "lists", "op": "member", "value": "News"}],
                            },
                        }
                    ]
                },
            },
            "parts.segments[0].rules.conditions[0].value: list 'News' is not in the blueprint (add it to parts.lists)",
        ),
    ],
)
async def test_import_refusals(client: Any, ws: Any, doc: Any, message: str) -> None:
    answer = await client.post("/api/v1/blueprints/import", headers=ws.headers, json=doc)
    assert (answer.status_code, answer.json()) == (400, {"error": message})
