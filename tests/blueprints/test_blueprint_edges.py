"""Blueprint edges: names as the workspace stores them, exact custom-field keys, documents
that are not in stored form, hostile documents, the field limit, who may change a blueprint."""

from __future__ import annotations

from typing import Any


async def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


async def imported(client: Any, ws: Any, parts: dict[str, Any]) -> str:
    doc = {"mailroom_blueprint": 1, "name": "Doc", "parts": parts}
    made = await ok(
        await client.post("/api/v1/blueprints/import", headers=ws.headers, json=doc), 201
    )
    blueprint_id: str = made["blueprint"]["id"]
    return blueprint_id


async def apply(client: Any, ws: Any, blueprint_id: str, **body: Any) -> Any:
    return await client.post(
        f"/api/v1/blueprints/{blueprint_id}/apply", headers=ws.headers, json=body
    )


async def test_updates_find_objects_whatever_the_spacing(client: Any, ws: Any) -> None:
    h = ws.headers
    await ok(
        await client.post(
            "/api/v1/templates", headers=h, json={"name": "My Template", "subject": "old"}
        ),
        201,
    )
    bp = await imported(client, ws, {"templates": [{"name": "  my  template", "subject": "new"}]})
    answer = await ok(await apply(client, ws, bp, dry_run=False, on_conflict="update"))
    assert [r["action"] for r in answer["plan"]] == ["update"]
    listed = await ok(await client.get("/api/v1/templates", headers=h))
    assert [t["subject"] for t in listed["templates"]] == ["new"]


async def test_custom_field_keys_are_exact(client: Any, ws: Any) -> None:
    await ok(
        await client.post("/api/v1/custom-fields", headers=ws.headers, json={"key": "plan"}), 201
    )
    bp = await imported(client, ws, {"custom_fields": [{"key": "Plan", "type": "text"}]})
    answer = await ok(await apply(client, ws, bp, dry_run=False))
    assert [(r["name"], r["action"]) for r in answer["plan"]] == [("Plan", "create")]
    fields = await ok(await client.get("/api/v1/custom-fields", headers=ws.headers))
    assert {"plan", "Plan"} <= {f["key"] for f in fields["fields"]}


async def test_a_document_not_in_stored_form_applies_once(
    client: Any, factory: Any, ws: Any
) -> None:
    target = await factory.workspace(account_id=ws.account_id, listen=False)
    bp = await imported(
        client,
        ws,
        {
            "tags": [{"name": "VIP", "color": "#2563EB"}],
            "lists": [{"name": "News", "description": None}],
            "custom_fields": [
                {"key": "tier", "type": "dropdown", "options": [" Gold ", "Gold", "Silver"]}
            ],
            "segments": [
                {
                    "name": "VIPs",
                    "rules": {"conditions": [{"field": "tags", "op": "has_any", "value": ["vip"]}]},
                }
            ],
            "templates": [{"name": "Hello", "subject": None, "html_content": "<p>Hi</p>"}],
            "sending": [{}],
        },
    )
    first = await ok(await apply(client, target, bp, dry_run=False))
    assert "skip" not in {r["action"] for r in first["plan"]}
    second = await ok(await apply(client, target, bp, dry_run=False))
    assert {r["action"] for r in second["plan"]} == {"unchanged"}, second["plan"]


async def test_hostile_documents_are_400(client: Any, ws: Any) -> None:
    deep: Any = []
    for _ in range(200):
        deep = [deep]
    doc = {
        "mailroom_blueprint": 1,
        "name": "Deep",
        "parts": {"tags": [{"name": "x", "color": deep}]},
    }
    answer = await client.post("/api/v1/blueprints/import", headers=ws.headers, json=doc)
    assert (answer.status_code, answer.json()) == (
        400,
        {"error": "The document nests too deeply (at most 24 levels)"},
    )
    raw = '{"a":' * 100_000 + "1" + "}" * 100_000
    answer = await client.post(
        "/api/v1/blueprints/import",
        headers={**ws.headers, "content-type": "application/json"},
        content=raw,
    )
    assert answer.status_code == 400
    answer = await client.post(
        "/api/v1/blueprints/import",
        headers=ws.headers,
        json={"mailroom_blueprint": True, "name": "x", "parts": {}},
    )
    assert answer.json() == {
        "error": "mailroom_blueprint: unsupported version true (this Mailroom reads 1)"
    }


async def test_the_field_limit_is_a_conflict_row(client: Any, ws: Any) -> None:
    for i in range(99):
        await ok(
            await client.post("/api/v1/custom-fields", headers=ws.headers, json={"key": f"f{i}"}),
            201,
        )
    bp = await imported(client, ws, {"custom_fields": [{"key": "extra1"}, {"key": "extra2"}]})
    answer = await ok(await apply(client, ws, bp))
    assert [r["action"] for r in answer["plan"]] == ["create", "conflict"]
    assert answer["plan"][1]["reason"] == (
        "the workspace would have more than 100 custom fields (the limit)"
    )
    refused = await apply(client, ws, bp, dry_run=False)
    assert refused.status_code == 409


async def test_changing_a_blueprint_needs_its_parts_write_permissions(
    client: Any, factory: Any, ws: Any
) -> None:
    bp = await imported(client, ws, {"tags": [{"name": "VIP"}], "lists": [{"name": "News"}]})
    reader = await factory.key(ws, ["tags:read", "lists:read"])
    renamed = await client.patch(f"/api/v1/blueprints/{bp}", headers=reader, json={"name": "Mine"})
    assert (renamed.status_code, renamed.json()) == (
        403,
        {"error": "Forbidden: tags:write permission required"},
    )
    removed = await client.delete(f"/api/v1/blueprints/{bp}", headers=reader)
    assert removed.status_code == 403
    assert (await ok(await client.get(f"/api/v1/blueprints/{bp}", headers=reader)))["blueprint"][
        "name"
    ] == "Doc"


async def test_an_unchanged_endpoint_is_not_refused_by_the_guard(client: Any, ws: Any) -> None:
    # conftest's catch-all endpoint is on 127.0.0.1, which the guard refuses here; applying the
    # workspace's own capture writes no endpoint, so it is not in the way.
    made = await ok(
        await client.post("/api/v1/blueprints", headers=ws.headers, json={"name": "Self"}), 201
    )
    answer = await ok(await apply(client, ws, made["blueprint"]["id"], dry_run=False))
    assert {r["action"] for r in answer["plan"]} == {"unchanged"}


async def test_what_was_deleted_since_a_rule_was_saved_is_left_out(client: Any, ws: Any) -> None:
    h = ws.headers
    keep = await ok(await client.post("/api/v1/tags", headers=h, json={"name": "Keep"}), 201)
    gone = await ok(await client.post("/api/v1/tags", headers=h, json={"name": "Gone"}), 201)
    old = await ok(await client.post("/api/v1/lists", headers=h, json={"name": "Old"}), 201)
    rules = {
        "match": "all",
        "conditions": [
            {"field": "tags", "op": "has_any", "value": [keep["tag"]["id"], gone["tag"]["id"]]},
            {"field": "lists", "op": "member", "value": old["list"]["id"]},
        ],
    }
    await ok(
        await client.post("/api/v1/segments", headers=h, json={"name": "S", "rules": rules}), 201
    )
    await ok(await client.delete(f"/api/v1/tags/{gone['tag']['id']}", headers=h))
    await ok(await client.delete(f"/api/v1/lists/{old['list']['id']}", headers=h))
    made = await ok(
        await client.post(
            "/api/v1/blueprints", headers=h, json={"name": "B", "include": ["tags", "segments"]}
        ),
        201,
    )
    document = await ok(
        await client.get(f"/api/v1/blueprints/{made['blueprint']['id']}/document", headers=h)
    )
    [segment] = document["parts"]["segments"]
    assert segment["rules"]["conditions"] == [{"field": "tags", "op": "has_any", "value": ["Keep"]}]
