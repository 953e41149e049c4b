"""Black-box checks of the MCP server against the spec ("A Model Context Protocol server exposes
every key-callable operation as a tool") and issue 7, with the real `mcp` client over streamable
HTTP (a real uvicorn server) and over stdio (`mailroom mcp`)."""

from __future__ import annotations

import base64
import io
import json
import re
import sys
from typing import Any

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from PIL import Image

from tests.mcp.helpers import mcp_session, tool_text

HTTP_METHODS = ("get", "post", "put", "patch", "delete")
ACCEPT = {"accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "spec-test", "version": "1"},
    },
}


def png_bytes(size: tuple[int, int] = (3, 3)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (1, 2, 3)).save(buffer, format="PNG")
    return buffer.getvalue()


async def _api_operations(client: httpx.AsyncClient) -> dict[str, tuple[str, str]]:
    """Every /api/v1 operation in /openapi.json (each is called with a workspace key)."""
    document = (await client.get("/openapi.json")).json()
    found: dict[str, tuple[str, str]] = {}
    for path, item in document["paths"].items():
        for method in HTTP_METHODS:
            if method in item and path.startswith("/api/v1/"):
                found[item[method]["operationId"]] = (method.upper(), path)
    return found


# --- the tool list ------------------------------------------------------------------------


async def test_tools_are_the_operation_ids_of_every_api_operation(server_url, ws, client):
    operations = await _api_operations(client)
    assert len(operations) >= 40
    async with mcp_session(server_url, ws.api_key) as session:
        listed = await session.list_tools()
    names = [tool.name for tool in listed.tools]
    assert len(names) == len(set(names))
    assert set(names) == set(operations)
    for name in names:
        assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", name), name
        assert len(name) <= 64, name
    for public in ("healthz", "serve_media", "submit_form", "unsubscribe"):
        assert public not in names
    # The names the README promises.
    for promised in (
        "list_contacts",
        "create_contact",
        "bulk_contacts",
        "import_contacts",
        "create_webhook",
        "upload_media",
        "list_media",
        "delete_media",
    ):
        assert promised in names
    assert listed.next_cursor is None


async def test_input_schemas_are_valid_json_schema_with_resolvable_refs(server_url, ws):
    jsonschema = pytest.importorskip("jsonschema")
    referencing = pytest.importorskip("referencing")
    from referencing.jsonschema import DRAFT202012

    async with mcp_session(server_url, ws.api_key) as session:
        tools = (await session.list_tools()).tools

    def refs(value: Any) -> list[str]:
        if isinstance(value, dict):
            found = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
            return found + [r for v in value.values() for r in refs(v)]
        if isinstance(value, list):
            return [r for v in value for r in refs(v)]
        return []

    for tool in tools:
        schema = tool.input_schema
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object", tool.name
        for required in schema.get("required", []):
            assert required in schema["properties"], (tool.name, required)
        registry = referencing.Registry().with_resource(
            "urn:tool", DRAFT202012.create_resource(schema)
        )
        resolver = registry.resolver(base_uri="urn:tool")
        for ref in refs(schema):
            assert ref.startswith("#/$defs/"), (tool.name, ref)
            resolver.lookup(ref)  # raises when the target is missing


async def test_schemas_accept_good_and_reject_bad_arguments(server_url, ws):
    jsonschema = pytest.importorskip("jsonschema")
    async with mcp_session(server_url, ws.api_key) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}

    def ok(name: str, arguments: dict[str, Any]) -> None:
        jsonschema.validate(arguments, tools[name].input_schema)

    def bad(name: str, arguments: dict[str, Any]) -> None:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(arguments, tools[name].input_schema)

    ok("create_contact", {"email": "a@example.com", "custom_fields": {"plan": "gold", "n": 3}})
    ok("get_contact", {"id": "x"})
    bad("get_contact", {})
    ok("update_custom_field", {"key": "plan", "body": {"label": "Plan"}})
    bad("update_custom_field", {"key": "plan"})
    ok("delete_media", {"id": "abcdefgh.png"})
    bad("delete_media", {})
    ok("list_contacts", {"page": 2, "limit": 10})
    ok("upload_media", {"file_base64": "AAAA", "filename": "a.png"})


async def test_tool_titles_and_descriptions_come_from_the_operation(server_url, ws, client):
    document = (await client.get("/openapi.json")).json()
    operations = await _api_operations(client)
    async with mcp_session(server_url, ws.api_key) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    for name, (method, path) in operations.items():
        spec = document["paths"][path][method.lower()]
        description = tools[name].description or ""
        assert spec["summary"] in description, name
        if spec.get("description"):
            assert spec["description"].strip()[:60] in description, name


# --- calls through the real API: results equal REST --------------------------------------


async def _seed(client: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, str]:
    contact = await client.post(
        "/api/v1/contacts",
        json={"email": "seed@example.com", "custom_fields": {"plan": "gold"}},
        headers=headers,
    )
    tag = await client.post("/api/v1/tags", json={"name": "Seeded"}, headers=headers)
    made_list = await client.post("/api/v1/lists", json={"name": "Seeded list"}, headers=headers)
    await client.post(
        "/api/v1/suppressions",
        json={"entries": ["blocked@example.com"], "reason": "bounced"},
        headers=headers,
    )
    await client.post(
        "/api/v1/media", files={"file": ("s.png", png_bytes(), "image/png")}, headers=headers
    )
    return {
        "contact": contact.json()["contact"]["id"],
        "tag": tag.json()["tag"]["id"],
        "list": made_list.json()["list"]["id"],
    }


@pytest.mark.parametrize(
    ("tool", "arguments", "path"),
    [
        ("list_tags", {}, "/api/v1/tags"),
        ("list_lists", {}, "/api/v1/lists"),
        ("list_custom_fields", {}, "/api/v1/custom-fields"),
        ("list_webhooks", {}, "/api/v1/webhooks"),
        ("list_media", {}, "/api/v1/media"),
        ("get_suppressions", {}, "/api/v1/suppressions"),
        ("list_suppressions", {"reason": "bounced"}, "/api/v1/suppressions/list?reason=bounced"),
        ("list_contacts", {"limit": 1, "page": 1}, "/api/v1/contacts?limit=1&page=1"),
        ("list_contacts", {"q": "seed"}, "/api/v1/contacts?q=seed"),
    ],
)
async def test_read_tool_structured_content_equals_the_rest_answer(
    server_url, factory, client, tool, arguments, path
):
    workspace = await factory.workspace("pro", listen=False)
    await _seed(client, workspace.headers)
    async with mcp_session(server_url, workspace.api_key) as session:
        result = await session.call_tool(tool, arguments)
    rest = await client.get(path, headers=workspace.headers)
    assert rest.status_code == 200
    assert not result.is_error, tool_text(result)
    assert result.structured_content == rest.json()
    assert json.loads(tool_text(result)) == rest.json()


async def test_path_parameter_reads_equal_rest(server_url, ws, client):
    ids = await _seed(client, ws.headers)
    checks = [
        ("get_contact", {"id": ids["contact"]}, f"/api/v1/contacts/{ids['contact']}"),
        ("get_tag", {"id": ids["tag"]}, f"/api/v1/tags/{ids['tag']}"),
        ("get_list", {"id": ids["list"]}, f"/api/v1/lists/{ids['list']}"),
        ("list_contact_tags", {"id": ids["contact"]}, f"/api/v1/contacts/{ids['contact']}/tags"),
        ("list_list_contacts", {"id": ids["list"]}, f"/api/v1/lists/{ids['list']}/contacts"),
    ]
    async with mcp_session(server_url, ws.api_key) as session:
        results = [(await session.call_tool(tool, args), path) for tool, args, path in checks]
    for result, path in results:
        assert not result.is_error, (path, tool_text(result))
        rest = await client.get(path, headers=ws.headers)
        assert result.structured_content == rest.json(), path


async def test_write_tools_across_resources(server_url, ws, client):
    async with mcp_session(server_url, ws.api_key) as session:
        contact = await session.call_tool("create_contact", {"email": "w@example.com"})
        contact_id = contact.structured_content["contact"]["id"]

        made_list = await session.call_tool("create_list", {"name": "Agents"})
        assert not made_list.is_error, tool_text(made_list)
        list_id = made_list.structured_content["list"]["id"]
        added = await session.call_tool(
            "add_list_contacts", {"id": list_id, "contact_ids": [contact_id]}
        )
        assert not added.is_error, tool_text(added)
        renamed = await session.call_tool("update_list", {"id": list_id, "name": "Agents 2"})
        assert not renamed.is_error, tool_text(renamed)

        field = await session.call_tool("create_custom_field", {"key": "tier", "type": "number"})
        assert not field.is_error, tool_text(field)
        relabelled = await session.call_tool(
            "update_custom_field", {"key": "tier", "body": {"label": "Customer tier"}}
        )
        assert not relabelled.is_error, tool_text(relabelled)

        tag = await session.call_tool("create_tag", {"name": "Temp"})
        tag_id = tag.structured_content["tag"]["id"]
        updated_tag = await session.call_tool("update_tag", {"id": tag_id, "name": "Kept"})
        assert not updated_tag.is_error, tool_text(updated_tag)
        gone_tag = await session.call_tool("create_tag", {"name": "Gone"})
        deleted = await session.call_tool(
            "delete_tag", {"id": gone_tag.structured_content["tag"]["id"]}
        )
        assert not deleted.is_error, tool_text(deleted)

        csv_import = await session.call_tool(
            "import_suppressions", {"file": "email\ncsv1@example.com\ncsv2@example.com\n"}
        )
        assert not csv_import.is_error, tool_text(csv_import)

    members = (await client.get(f"/api/v1/lists/{list_id}/contacts", headers=ws.headers)).json()
    assert contact_id in json.dumps(members)
    assert (await client.get(f"/api/v1/lists/{list_id}", headers=ws.headers)).json()["list"][
        "name"
    ] == "Agents 2"
    fields = (await client.get("/api/v1/custom-fields", headers=ws.headers)).json()
    assert "Customer tier" in json.dumps(fields)
    tags = (await client.get("/api/v1/tags", headers=ws.headers)).json()
    assert "Kept" in json.dumps(tags) and '"Gone"' not in json.dumps(tags)
    listed = (await client.get("/api/v1/suppressions/list", headers=ws.headers)).json()
    masked = json.dumps(listed)
    assert listed["pagination"]["total"] == 2, masked


async def test_media_tools_upload_list_and_delete(server_url, ws, client):
    data = png_bytes((5, 4))
    async with mcp_session(server_url, ws.api_key) as session:
        uploaded = await session.call_tool(
            "upload_media",
            {"file_base64": base64.b64encode(data).decode(), "filename": "agent.png"},
        )
        assert not uploaded.is_error, tool_text(uploaded)
        file = uploaded.structured_content["file"]
        assert set(uploaded.structured_content) == {"file", "used_bytes", "quota_bytes"}
        assert file["name"] == "agent.png" and file["type"] == "image/png"
        assert file["size"] == len(data)
        listed = await session.call_tool("list_media", {})
        assert [f["id"] for f in listed.structured_content["files"]] == [file["id"]]
        served = await client.get(file["url"].removeprefix("http://testserver"))
        assert served.content == data
        removed = await session.call_tool("delete_media", {"id": file["id"]})
        assert not removed.is_error, tool_text(removed)
        assert removed.structured_content["ok"] is True
        assert removed.structured_content["id"] == file["id"]
    assert (await client.get("/api/v1/media", headers=ws.headers)).json()["count"] == 0


# --- errors: the tool error text is the API's JSON body ---------------------------------


async def test_tool_error_text_is_exactly_the_api_body(server_url, ws, client):
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"/>'
    cases = [
        ("get_tag", {"id": "no-such-tag"}, ("GET", "/api/v1/tags/no-such-tag", {})),
        ("get_list", {"id": "no-such-list"}, ("GET", "/api/v1/lists/no-such-list", {})),
        (
            "delete_media",
            {"id": "abcdefgh.png"},
            ("DELETE", "/api/v1/media/abcdefgh.png", {}),
        ),
        (
            "list_suppressions",
            {"reason": "sleepy"},
            ("GET", "/api/v1/suppressions/list?reason=sleepy", {}),
        ),
        (
            "create_contact",
            {"email": "not-an-address"},
            ("POST", "/api/v1/contacts", {"json": {"email": "not-an-address"}}),
        ),
        (
            "lift_suppression",
            {"email": "nobody@example.com"},
            ("POST", "/api/v1/suppressions/lift", {"json": {"email": "nobody@example.com"}}),
        ),
        (
            "upload_media",
            {"file_base64": base64.b64encode(svg).decode(), "filename": "x.svg"},
            (
                "POST",
                "/api/v1/media",
                {"files": {"file": ("x.svg", svg, "application/octet-stream")}},
            ),
        ),
    ]
    async with mcp_session(server_url, ws.api_key) as session:
        results = [await session.call_tool(tool, args) for tool, args, _ in cases]
    for (tool, _, (method, path, kwargs)), result in zip(cases, results, strict=True):
        rest = await client.request(method, path, headers=ws.headers, **kwargs)
        assert 400 <= rest.status_code < 500, (tool, rest.status_code)
        assert result.is_error, tool
        assert json.loads(tool_text(result)) == rest.json(), tool
        assert "error" in rest.json()


async def test_quota_refusal_extras_reach_the_agent(server_url, ws, monkeypatch):
    import dataclasses

    from mailroom.core import plans

    monkeypatch.setitem(
        plans.PLANS, "pro", dataclasses.replace(plans.PLANS["pro"], media_quota_bytes=10)
    )
    async with mcp_session(server_url, ws.api_key) as session:
        refused = await session.call_tool(
            "upload_media", {"file_base64": base64.b64encode(png_bytes()).decode()}
        )
    assert refused.is_error
    body = json.loads(tool_text(refused))
    assert set(body) == {"error", "used_bytes", "quota_bytes"}
    assert body["used_bytes"] == 0 and body["quota_bytes"] == 10


async def test_permission_refusals_for_media_tools(server_url, ws, factory):
    reader = await factory.key(ws, "campaigns:read")
    stranger = await factory.key(ws, "contacts:read")
    image = base64.b64encode(png_bytes()).decode()
    async with mcp_session(server_url, reader["x-api-key"]) as session:
        listed = await session.call_tool("list_media", {})
        refused = await session.call_tool("upload_media", {"file_base64": image})
        refused_delete = await session.call_tool("delete_media", {"id": "abcdefgh.png"})
    async with mcp_session(server_url, stranger["x-api-key"]) as session:
        refused_list = await session.call_tool("list_media", {})
    assert not listed.is_error
    write_needed = {"error": "Forbidden: campaigns:write permission required"}
    assert refused.is_error and json.loads(tool_text(refused)) == write_needed
    assert refused_delete.is_error and json.loads(tool_text(refused_delete)) == write_needed
    assert refused_list.is_error
    assert json.loads(tool_text(refused_list)) == {
        "error": "Forbidden: campaigns:read permission required"
    }


async def test_upload_tool_argument_problems(server_url, ws, client):
    image = base64.b64encode(png_bytes()).decode()
    async with mcp_session(server_url, ws.api_key) as session:
        both = await session.call_tool("upload_media", {"file_base64": image, "file": "x"})
        extra = await session.call_tool("upload_media", {"file_base64": image, "colour": "red"})
    assert both.is_error and "error" in json.loads(tool_text(both))
    assert extra.is_error and "error" in json.loads(tool_text(extra))
    assert (await client.get("/api/v1/media", headers=ws.headers)).json()["count"] == 0


# --- CSV answers come back as text -------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "path"),
    [
        ("export_contacts", {}, "/api/v1/contacts/export"),
        ("export_suppressions", {}, "/api/v1/suppressions/export"),
        (
            "export_suppressions",
            {"reason": "bounced"},
            "/api/v1/suppressions/export?reason=bounced",
        ),
    ],
)
async def test_csv_exports_come_back_as_the_sametool_text(
    server_url, factory, client, tool, arguments, path
):
    workspace = await factory.workspace("pro", listen=False)
    await _seed(client, workspace.headers)
    async with mcp_session(server_url, workspace.api_key) as session:
        result = await session.call_tool(tool, arguments)
    rest = await client.get(path, headers=workspace.headers)
    assert rest.status_code == 200 and "csv" in rest.headers["content-type"]
    assert not result.is_error, tool_text(result)
    assert result.structured_content is None
    assert [part.type for part in result.content] == ["text"]
    assert tool_text(result) == rest.text
    assert len(rest.text.splitlines()) >= 2


async def test_export_without_the_export_permission_is_the_api_403(server_url, ws, factory):
    reader = await factory.key(ws, "contacts:read")
    async with mcp_session(server_url, reader["x-api-key"]) as session:
        refused = await session.call_tool("export_contacts", {})
    assert refused.is_error
    assert json.loads(tool_text(refused)) == {
        "error": "Forbidden: contacts:export permission required"
    }


# --- the HTTP endpoint itself -------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="missing"),
        pytest.param({"x-api-key": ""}, id="empty"),
        pytest.param({"x-api-key": "mr_live_abcdefgh_" + "b" * 32}, id="unknown"),
        pytest.param({"authorization": "Bearer mr_live_abcdefgh_" + "b" * 32}, id="bearer-only"),
    ],
)
async def test_mcp_endpoint_without_a_valid_key_is_401_json(server_url, method, headers):
    async with httpx.AsyncClient(base_url=server_url, timeout=10) as http:
        kwargs: dict[str, Any] = {"json": INITIALIZE} if method == "POST" else {}
        answer = await http.request(method, "/mcp", headers={**ACCEPT, **headers}, **kwargs)
    assert answer.status_code == 401
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.json() == {"error": "Unauthorized"}


async def test_key_from_another_workspace_cannot_reach_its_media(server_url, factory, client):
    first = await factory.workspace("pro", listen=False)
    second = await factory.workspace("pro", listen=False)
    made = await client.post(
        "/api/v1/media", files={"file": ("a.png", png_bytes(), "image/png")}, headers=first.headers
    )
    media_id = made.json()["file"]["id"]
    async with mcp_session(server_url, second.api_key) as session:
        listed = await session.call_tool("list_media", {})
        deleted = await session.call_tool("delete_media", {"id": media_id})
    assert listed.structured_content["files"] == []
    assert deleted.is_error and "error" in json.loads(tool_text(deleted))
    assert (await client.get("/api/v1/media", headers=first.headers)).json()["count"] == 1


async def test_initialize_advertises_tools_and_json_responses(server_url, ws):
    async with httpx.AsyncClient(base_url=server_url, timeout=10) as http:
        answer = await http.post("/mcp", json=INITIALIZE, headers={**ACCEPT, **ws.headers})
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/json")
    result = answer.json()["result"]
    assert "tools" in result["capabilities"]
    assert result["serverInfo"]["name"] == "mailroom"
    assert "mcp-session-id" not in answer.headers  # stateless


async def test_mcp_call_counts_as_a_write_only_for_writes(server_url, factory):
    """A tools/list or read tool is not a write; listing tools must work even at the limit."""
    free = await factory.workspace("free", listen=False)
    async with httpx.AsyncClient(base_url=server_url, timeout=30) as http:
        for n in range(120):
            made = await http.post("/api/v1/tags", json={"name": f"t{n}"}, headers=free.headers)
            assert made.status_code == 201
    async with mcp_session(server_url, free.api_key) as session:
        tools = await session.list_tools()
        read = await session.call_tool("list_media", {})
    assert tools.tools
    assert not read.is_error, tool_text(read)


# --- stdio ------------------------------------------------------------------------------


def _stdio(cli_env: dict[str, str], api_key: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "mailroom", "mcp"],
        env={**cli_env, "MAILROOM_API_KEY": api_key},
    )


async def test_stdio_offers_the_same_tools_and_api_errors(cli_env, server_url, ws, factory):
    reader = await factory.key(ws, "campaigns:read")
    async with mcp_session(server_url, ws.api_key) as session:
        http_tools = {t.name: t for t in (await session.list_tools()).tools}
    async with (
        stdio_client(_stdio(cli_env, reader["x-api-key"])) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        stdio_tools = {t.name: t for t in (await session.list_tools()).tools}
        listed = await session.call_tool("list_media", {})
        refused = await session.call_tool(
            "upload_media", {"file_base64": base64.b64encode(png_bytes()).decode()}
        )
        missing = await session.call_tool("get_tag", {"id": "nope"})
    assert set(stdio_tools) == set(http_tools)
    for name, tool in http_tools.items():
        assert stdio_tools[name].input_schema == tool.input_schema, name
        assert stdio_tools[name].description == tool.description, name
    assert not listed.is_error and listed.structured_content["files"] == []
    assert refused.is_error
    assert json.loads(tool_text(refused)) == {
        "error": "Forbidden: campaigns:write permission required"
    }
    assert missing.is_error
    assert json.loads(tool_text(missing)) == {"error": "Forbidden: tags:read permission required"}


# --- a path argument is data, never a path --------------------------------------------------


async def test_dot_segments_in_a_path_argument_never_reach_another_operation(
    server_url, ws, client
):
    """`remove_list_contact` must remove a list membership, whatever the agent passes as `id`;
    it must never become `DELETE /api/v1/contacts/{contact_id}` (or `DELETE /api/v1/tags/..`)."""
    contact = (
        await client.post(
            "/api/v1/contacts", json={"email": "keep@example.com"}, headers=ws.headers
        )
    ).json()["contact"]
    tag = (await client.post("/api/v1/tags", json={"name": "Keep"}, headers=ws.headers)).json()[
        "tag"
    ]
    async with mcp_session(server_url, ws.api_key) as session:
        from_list = await session.call_tool(
            "remove_list_contact", {"id": "..", "contact_id": contact["id"]}
        )
        from_contact = await session.call_tool(
            "remove_contact_tag", {"id": "..", "tagId": tag["id"]}
        )
        dotted = await session.call_tool("get_contact", {"id": "."})
    still = await client.get(f"/api/v1/contacts/{contact['id']}", headers=ws.headers)
    kept = await client.get(f"/api/v1/tags/{tag['id']}", headers=ws.headers)
    problems = []
    if still.status_code != 200:
        problems.append(f"remove_list_contact(id='..') deleted the contact: {tool_text(from_list)}")
    if kept.status_code != 200:
        problems.append(f"remove_contact_tag(id='..') deleted the tag: {tool_text(from_contact)}")
    if not dotted.is_error:
        problems.append(f"get_contact(id='.') answered another operation: {tool_text(dotted)[:80]}")
    assert not problems, "\n".join(problems)


async def test_slashes_in_a_path_argument_stay_in_the_argument(server_url, ws, client):
    tag = (await client.post("/api/v1/tags", json={"name": "Keep"}, headers=ws.headers)).json()[
        "tag"
    ]
    async with mcp_session(server_url, ws.api_key) as session:
        result = await session.call_tool("delete_contact", {"id": f"x/../../tags/{tag['id']}"})
    assert result.is_error
    assert (await client.get(f"/api/v1/tags/{tag['id']}", headers=ws.headers)).status_code == 200


async def test_a_write_tool_call_counts_once_toward_the_hourly_limit(server_url, factory):
    free = await factory.workspace("free", listen=False)
    async with httpx.AsyncClient(base_url=server_url, timeout=30) as http:
        for n in range(118):
            made = await http.post("/api/v1/tags", json={"name": f"t{n}"}, headers=free.headers)
            assert made.status_code == 201
    async with mcp_session(server_url, free.api_key) as session:
        await session.list_tools()
        first = await session.call_tool("create_tag", {"name": "mcp-119"})
        second = await session.call_tool("create_tag", {"name": "mcp-120"})
        third = await session.call_tool("create_tag", {"name": "mcp-121"})
    assert not first.is_error, tool_text(first)
    assert not second.is_error, tool_text(second)
    assert third.is_error
    assert json.loads(tool_text(third))["error"].startswith(
        "Hourly write limit reached (120 on the"
    )
