"""The step tree as published: named schemas, a union discriminated by `type`, recursive through
`ConditionStep`, and bounds that are the service's own (100 steps in all, no depth limit and
no per-list limit), so a tree the document admits is one the service accepts."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

from mailroom.automations.steps import STEP_TYPES
from tests.sending.helpers import ok

UNION_REF = "#/components/schemas/"
RULES = {"conditions": [{"field": "first_name", "op": "eq", "value": "Ann"}]}


def _steps_schema(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    body = document["paths"][path][method]["requestBody"]["content"]["application/json"]
    name = body["schema"]["$ref"].removeprefix(UNION_REF)
    steps = document["components"]["schemas"][name]["properties"]["steps"]
    [array] = [option for option in steps["anyOf"] if option.get("type") == "array"]
    return array


def _admits(document: dict[str, Any], schema: dict[str, Any], value: Any) -> bool:
    root = {**schema, "components": document["components"]}
    return Draft202012Validator(root, format_checker=FormatChecker()).is_valid(value)


async def test_steps_are_named_schemas_discriminated_by_type(client):
    document = (await client.get("/openapi.json")).json()
    schemas = document["components"]["schemas"]
    for method, path in (("post", "/api/v1/automations"), ("patch", "/api/v1/automations/{id}")):
        union = _steps_schema(document, method, path)["items"]
        mapping = union["discriminator"]["mapping"]
        assert union["discriminator"]["propertyName"] == "type"
        assert set(mapping) == set(STEP_TYPES)
        assert sorted(option["$ref"] for option in union["oneOf"]) == sorted(mapping.values())
        for kind, ref in mapping.items():
            named = schemas[ref.removeprefix(UNION_REF)]
            assert named["properties"]["type"]["const"] == kind
            assert "type" in named["required"]
    # Recursive through the named condition: its branches hold the same union.
    condition = schemas["ConditionStep"]["properties"]
    for branch in ("yes", "no"):
        [array] = [option for option in condition[branch]["anyOf"] if option.get("type") == "array"]
        assert array["items"]["discriminator"]["mapping"]["condition"] == (
            f"{UNION_REF}ConditionStep"
        )


def _nested(depth: int) -> list[dict[str, Any]]:
    """A condition in a condition ... `depth` levels deep, a wait at the bottom."""
    steps: list[dict[str, Any]] = [{"type": "wait", "seconds": 60}]
    for _ in range(depth):
        steps = [{"type": "condition", "rules": RULES, "yes": steps, "no": []}]
    return steps


async def test_a_tree_the_document_admits_is_accepted(client, ws):
    """The document once capped each list at 20 steps and the depth at 3, which the service
    never did: both are now the service's bounds."""
    document = (await client.get("/openapi.json")).json()
    schema = _steps_schema(document, "post", "/api/v1/automations")
    trees = {
        "deep": _nested(6),
        "long": [{"type": "wait", "seconds": n + 1} for n in range(30)],
        "nulls": [
            {"type": "wait", "seconds": 5, "id": None, "label": None},
            {"type": "wait", "until": {"weekday": "monday"}, "id": ""},
            {"type": "call_webhook", "endpoint_ids": None},
            {"type": "condition", "rules": RULES, "yes": None, "no": None},
            {"type": "update_field", "field": "first_name", "value": None},
            {"type": "exit", "label": ""},
        ],
    }
    for name, steps in trees.items():
        assert _admits(document, schema, steps), name
        body = {"name": name, "trigger": {"type": "manual"}, "steps": steps}
        made = await ok(
            await client.post("/api/v1/automations", json=body, headers=ws.headers), 201
        )
        assert made["automation"]["steps"][0]["type"] == steps[0]["type"]
    long_one = await ok(await client.get("/api/v1/automations", headers=ws.headers))
    assert {a["name"] for a in long_one["automations"]} == set(trees)


async def test_what_the_document_refuses_the_service_refuses_with_its_place(client, ws):
    document = (await client.get("/openapi.json")).json()
    schema = _steps_schema(document, "post", "/api/v1/automations")
    cases = [
        ([{"type": "wait"}], "steps[0].seconds or steps[0].until is required"),
        ([{"type": "wait", "seconds": 0}], "steps[0].seconds must be at least 1"),
        ([{"type": "add_tag", "tag_id": " "}], "steps[0].tag_id is required"),
        (
            [{"type": "update_field", "field": "f" * 65, "value": 1}],
            "steps[0].field must be 64 characters or fewer",
        ),
        (
            [{"type": "send_email", "template_id": "t", "from_name": "  "}],
            "steps[0].from_name is required",
        ),
        (
            [{"type": "condition", "rules": RULES, "no": [{}]}],
            "steps[0].no[0].type must be one of: wait, send_email, add_tag, remove_tag, "
            "add_to_list, remove_from_list, update_field, condition, call_webhook, exit",
        ),
        ([{"type": "wait", "seconds": 1}] * 101, "An automation has at most 100 steps"),
    ]
    for steps, message in cases:
        assert not _admits(document, schema, steps), message
        body = {"name": "Refused", "trigger": {"type": "manual"}, "steps": steps}
        refused = await client.post("/api/v1/automations", json=body, headers=ws.headers)
        assert (refused.status_code, refused.json()) == (400, {"error": message})
    listed = await ok(await client.get("/api/v1/automations", headers=ws.headers))
    assert listed["automations"] == []
