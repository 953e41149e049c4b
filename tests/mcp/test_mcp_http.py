"""The MCP server over streamable HTTP at /mcp, driven by the real `mcp` client against a real
uvicorn server on 127.0.0.1: tools generated from /openapi.json, calls through the real API."""

from __future__ import annotations

import base64
import io
import json

import httpx
from PIL import Image

from mailroom.mcp.tools import key_callable
from tests.mcp.helpers import mcp_session, tool_text


async def _key_callable_operations(client: httpx.AsyncClient) -> dict[str, tuple[str, str]]:
    document = (await client.get("/openapi.json")).json()
    found = {}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if key_callable(path, operation):
                found[operation["operationId"]] = (method.upper(), path)
    return found


async def test_tools_are_exactly_the_key_callable_operations(server_url, ws, client):
    operations = await _key_callable_operations(client)
    assert "create_contact" in operations and "healthz" not in operations
    async with mcp_session(server_url, ws.api_key) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}

    assert set(tools) == set(operations)
    document = (await client.get("/openapi.json")).json()
    for name, (method, path) in operations.items():
        tool = tools[name]
        spec = document["paths"][path][method.lower()]
        assert tool.description.startswith(spec["summary"])
        assert tool.annotations.read_only_hint is (method == "GET")
        assert tool.annotations.destructive_hint is (method == "DELETE")
        assert tool.annotations.idempotent_hint is (method in ("GET", "PUT", "DELETE"))
        schema = tool.input_schema
        assert schema["type"] == "object"
        raw = json.dumps(schema)
        assert "#/components/" not in raw, name
        for ref in {part.split('"')[0] for part in raw.split('"$ref": "#/$defs/')[1:]}:
            assert ref in schema["$defs"], (name, ref)
        for param in spec.get("parameters", []):
            if param["in"] == "header":  # Idempotency-Key: the HTTP client's, not a tool's
                continue
            assert param["name"] in schema["properties"], (name, param["name"])
            if param["in"] == "path":
                assert param["name"] in schema["required"]

    assert set(tools["get_contact"].input_schema["required"]) == {"id"}
    assert "email" in tools["create_contact"].input_schema["properties"]
    # The published body rules reach the tools: required fields, enums, bounds.
    create_contact = tools["create_contact"].input_schema
    assert create_contact["required"] == ["email"]
    assert create_contact["properties"]["email"]["format"] == "email"
    assert create_contact["properties"]["email"]["maxLength"] == 254
    assert tools["create_tag"].input_schema["required"] == ["name"]
    assert set(tools["bulk_contacts"].input_schema["properties"]["action"]["enum"]) >= {
        "unsubscribe",
        "add_tag",
        "export",
    }
    assert tools["list_contacts"].input_schema["properties"]["sort"]["enum"] == [
        "created",
        "name",
        "email",
        "status",
    ]
    assert {"file", "file_base64"} <= set(tools["import_contacts"].input_schema["properties"])


async def test_write_and_read_tools_act_through_the_api(server_url, ws, client):
    async with mcp_session(server_url, ws.api_key) as session:
        created = await session.call_tool(
            "create_contact", {"email": "Ada@Example.com", "first_name": "Ada"}
        )
        assert not created.is_error, tool_text(created)
        contact = created.structured_content["contact"]
        assert contact["email"] == "ada@example.com"

        listed = await session.call_tool("list_contacts", {"q": "ada"})
        assert not listed.is_error
        assert [c["id"] for c in listed.structured_content["contacts"]] == [contact["id"]]

        updated = await session.call_tool(
            "update_contact", {"id": contact["id"], "last_name": "Lovelace"}
        )
        assert not updated.is_error, tool_text(updated)

        tag = await session.call_tool("create_tag", {"name": "VIP"})
        assert not tag.is_error, tool_text(tag)
        tagged = await session.call_tool(
            "add_contact_tag",
            {"id": contact["id"], "tag_id": tag.structured_content["tag"]["id"]},
        )
        assert not tagged.is_error, tool_text(tagged)

        missing = await session.call_tool("get_contact", {"id": "no-such-contact"})
        assert missing.is_error
        assert json.loads(tool_text(missing)) == {"error": "Contact not found"}

        bad = await session.call_tool("create_contact", {"email": "not-an-address"})
        assert bad.is_error
        assert "error" in json.loads(tool_text(bad))

    seen = (await client.get(f"/api/v1/contacts/{contact['id']}", headers=ws.headers)).json()
    assert seen["contact"]["last_name"] == "Lovelace"
    assert [t["name"] for t in seen["contact"]["tags"]] == ["VIP"]
    total = (await client.get("/api/v1/contacts", headers=ws.headers)).json()
    assert total["pagination"]["total"] == 1

    audit = (await client.get("/api/v1/account/audit-log", headers=ws.headers)).json()
    operations = [entry["operation"] for entry in audit["entries"]]
    assert "create_contact" in operations and "update_contact" in operations


async def test_missing_permission_is_the_api_403_as_a_tool_error(server_url, ws, factory, client):
    reader = await factory.key(ws, "contacts:read")
    async with mcp_session(server_url, reader["x-api-key"]) as session:
        refused = await session.call_tool("create_contact", {"email": "x@example.com"})
        allowed = await session.call_tool("list_contacts", {})
    assert refused.is_error
    assert json.loads(tool_text(refused)) == {
        "error": "Forbidden: contacts:write permission required"
    }
    assert not allowed.is_error
    listed = (await client.get("/api/v1/contacts", headers=ws.headers)).json()
    assert listed["contacts"] == []


async def test_another_workspace_key_never_sees_the_first(server_url, factory, client):
    first = await factory.workspace("pro")
    second = await factory.workspace("pro")
    made = await client.post(
        "/api/v1/contacts", json={"email": "mine@example.com"}, headers=first.headers
    )
    contact_id = made.json()["contact"]["id"]

    async with mcp_session(server_url, second.api_key) as session:
        listed = await session.call_tool("list_contacts", {})
        fetched = await session.call_tool("get_contact", {"id": contact_id})
        deleted = await session.call_tool("delete_contact", {"id": contact_id})
    assert listed.structured_content["contacts"] == []
    assert fetched.is_error and json.loads(tool_text(fetched)) == {"error": "Contact not found"}
    assert deleted.is_error
    still = await client.get(f"/api/v1/contacts/{contact_id}", headers=first.headers)
    assert still.status_code == 200


async def test_the_key_sent_is_the_key_used_never_a_default(
    server_url, factory, client, monkeypatch
):
    first = await factory.workspace("pro")
    second = await factory.workspace("pro")
    await client.post("/api/v1/contacts", json={"email": "a@example.com"}, headers=first.headers)
    monkeypatch.setenv("MAILROOM_API_KEY", first.api_key)
    async with mcp_session(server_url, second.api_key) as session:
        listed = await session.call_tool("list_contacts", {})
    assert listed.structured_content["contacts"] == []


async def test_no_or_bad_key_is_401_on_mcp(server_url, ws, factory, db):
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    list_tools = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    accept = {"accept": "application/json, text/event-stream"}
    from mailroom.accounts import service as accounts_service

    revoked = await factory.key(ws, "all")
    async with db.transaction() as session:
        key_id = (await accounts_service.authenticate_key(session, revoked["x-api-key"])).principal
        await accounts_service.revoke_key(session, key_id.key_id)

    async with httpx.AsyncClient(base_url=server_url) as http:
        for headers in ({}, {"x-api-key": "mr_live_nope"}, revoked):
            for message in (initialize, list_tools):
                answer = await http.post("/mcp", json=message, headers={**accept, **headers})
                assert answer.status_code == 401
                assert answer.json() == {"error": "Unauthorized"}
        ok = await http.post("/mcp", json=initialize, headers={**accept, **ws.headers})
        assert ok.status_code == 200
        assert ok.json()["result"]["serverInfo"]["name"] == "mailroom"
        # Stateless: no event stream to open and no session to end.
        for method in ("GET", "DELETE"):
            other = await http.request(method, "/mcp", headers={**accept, **ws.headers})
            assert other.status_code == 405
            assert other.json() == {"error": "Method Not Allowed"}
            assert other.headers["allow"] == "POST"


async def test_host_check_allows_public_and_loopback_hosts_only(server_url, ws):
    message = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    headers = {
        **ws.headers,
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
    }
    async with httpx.AsyncClient(base_url=server_url) as http:
        # The tests' MAILROOM_PUBLIC_URL is http://testserver.
        public = await http.post("/mcp", json=message, headers={**headers, "host": "testserver"})
        assert public.status_code == 200, public.text
        assert public.json()["result"]["tools"]
        evil = await http.post("/mcp", json=message, headers={**headers, "host": "evil.example"})
        assert evil.status_code == 421


async def test_multipart_tools_take_text_and_base64_files(server_url, ws, client):
    csv_text = "email,first_name\nann@acme-mail.org,Ann\nbob@acme-mail.org,Bob\n"
    image = io.BytesIO()
    Image.new("RGB", (3, 2), (200, 10, 10)).save(image, format="PNG")
    png = image.getvalue()
    async with mcp_session(server_url, ws.api_key) as session:
        imported = await session.call_tool("import_contacts", {"file": csv_text, "tags": "mcp"})
        assert not imported.is_error, tool_text(imported)
        assert imported.structured_content["imported"] == 2

        uploaded = await session.call_tool(
            "upload_media", {"file_base64": base64.b64encode(png).decode(), "filename": "a.png"}
        )
        assert not uploaded.is_error, tool_text(uploaded)

        not_base64 = await session.call_tool("upload_media", {"file_base64": "%%%"})
        assert not_base64.is_error
        assert json.loads(tool_text(not_base64)) == {"error": "file_base64 is not valid base64"}
        no_file = await session.call_tool("upload_media", {})
        assert no_file.is_error

        suppressed = await session.call_tool(
            "import_suppressions", {"entries": ["gone@example.com"], "reason": "bounced"}
        )
        assert not suppressed.is_error, tool_text(suppressed)
        assert suppressed.structured_content["added"] == 1

        exported = await session.call_tool("export_contacts", {})
        assert not exported.is_error, tool_text(exported)
        csv_answer = tool_text(exported)

    assert csv_answer.splitlines()[0].startswith('"')
    assert "ann@acme-mail.org" in csv_answer and "bob@acme-mail.org" in csv_answer
    contacts = (await client.get("/api/v1/contacts?q=acme-mail.org", headers=ws.headers)).json()
    assert {c["email"] for c in contacts["contacts"]} == {"ann@acme-mail.org", "bob@acme-mail.org"}
    media = (await client.get("/api/v1/media", headers=ws.headers)).json()
    assert media["count"] == 1
    public = await client.get(media["files"][0]["url"].removeprefix("http://testserver"))
    assert public.content == png


async def test_write_limit_applies_to_tool_calls(server_url, factory, client):
    free = await factory.workspace("free")
    for number in range(120):
        made = await client.post("/api/v1/tags", json={"name": f"t{number}"}, headers=free.headers)
        assert made.status_code == 201
    async with mcp_session(server_url, free.api_key) as session:
        refused = await session.call_tool("create_tag", {"name": "one-too-many"})
        reading = await session.call_tool("list_tags", {})
    assert refused.is_error
    assert json.loads(tool_text(refused))["error"].startswith(
        "Hourly write limit reached (120 on the"
    )
    assert not reading.is_error


async def test_argument_problems_are_tool_errors(server_url, ws):
    async with mcp_session(server_url, ws.api_key) as session:
        unknown_tool = await session.call_tool("drop_everything", {})
        no_id = await session.call_tool("get_contact", {})
        extra = await session.call_tool("get_contact", {"id": "x", "colour": "red"})
        unknown_field = await session.call_tool(
            "update_contact", {"id": "x", "favourite_colour": "red"}
        )
    assert unknown_tool.is_error
    assert json.loads(tool_text(unknown_tool)) == {"error": "Unknown tool: drop_everything"}
    assert json.loads(tool_text(no_id)) == {"error": "Missing required argument: id"}
    assert json.loads(tool_text(extra)) == {"error": "Unknown argument(s): colour"}
    assert unknown_field.is_error  # the API's own answer (404 for the unknown contact)


async def test_a_path_argument_fills_one_segment_only(server_url, ws, client):
    """`id="<contact>/tags/<tag>"` must not turn delete_contact into remove_contact_tag."""
    contact = (
        await client.post("/api/v1/contacts", json={"email": "seg@ex.com"}, headers=ws.headers)
    ).json()["contact"]
    tag = (await client.post("/api/v1/tags", json={"name": "Seg"}, headers=ws.headers)).json()[
        "tag"
    ]
    attached = await client.post(
        f"/api/v1/contacts/{contact['id']}/tags", json={"tag_id": tag["id"]}, headers=ws.headers
    )
    assert attached.status_code == 201
    async with mcp_session(server_url, ws.api_key) as session:
        for value in (f"{contact['id']}/tags/{tag['id']}", "a/b", "/"):
            result = await session.call_tool("delete_contact", {"id": value})
            assert result.is_error
            assert json.loads(tool_text(result)) == {
                "error": f"Invalid id: {value} (one path segment, no '/')"
            }
    tags = await client.get(f"/api/v1/contacts/{contact['id']}/tags", headers=ws.headers)
    assert [t["id"] for t in tags.json()["tags"]] == [tag["id"]]


async def test_flattened_and_body_forms_of_an_update_tool(server_url, ws, client):
    created = await client.post(
        "/api/v1/custom-fields", json={"key": "tier", "type": "number"}, headers=ws.headers
    )
    assert created.status_code == 201
    async with mcp_session(server_url, ws.api_key) as session:
        flat = await session.call_tool("update_custom_field", {"key": "tier", "label": "Tier"})
        assert not flat.is_error, tool_text(flat)
        whole = await session.call_tool(
            "update_custom_field", {"key": "tier", "body": {"label": "Customer tier"}}
        )
        assert not whole.is_error, tool_text(whole)
    fields = (await client.get("/api/v1/custom-fields", headers=ws.headers)).json()["fields"]
    assert [f["label"] for f in fields if f["key"] == "tier"] == ["Customer tier"]
