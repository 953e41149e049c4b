"""Templates (project design; the spec gives the limits and the 413): create, read, update,
delete, listing, sizes, syntax checks, permissions and workspace isolation."""

from __future__ import annotations

import httpx
import pytest

TEMPLATE_KEYS = {
    "id",
    "name",
    "subject",
    "preheader",
    "html_content",
    "text_content",
    "created_at",
    "updated_at",
}
BASE = "/api/v1/templates"


@pytest.fixture
async def raw_client(app):
    """Like `client`, but an unhandled error comes back as the 500 a user would get."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


async def create(client, headers, name="Welcome", **fields):
    response = await client.post(BASE, json={"name": name, **fields}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["template"]


async def listed(client, headers, **params):
    response = await client.get(BASE, params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


# ---------------------------------------------------------------- create and read


async def test_create_returns_the_template_and_get_reads_it_back(client, ws):
    body = {
        "name": "Welcome",
        "subject": "Hi {{ first_name }}",
        "preheader": "A short hello",
        "html_content": "<p>Hi {{ first_name | default('there') }}</p>",
        "text_content": "Hi {{ first_name }}",
    }
    response = await client.post(BASE, json=body, headers=ws.headers)
    assert response.status_code == 201
    template = response.json()["template"]
    assert set(template) == TEMPLATE_KEYS
    assert {k: template[k] for k in body} == body
    assert template["created_at"] == template["updated_at"]

    again = await client.get(f"{BASE}/{template['id']}", headers=ws.headers)
    assert again.status_code == 200
    assert again.json() == {"template": template}


async def test_only_a_name_is_required_and_absent_or_null_parts_are_empty(client, ws):
    template = await create(client, ws.headers, "Bare", subject=None)
    assert [template[k] for k in ("subject", "preheader", "html_content", "text_content")] == [
        "",
        "",
        "",
        "",
    ]


async def test_name_is_trimmed_and_inner_whitespace_folded(client, ws):
    template = await create(client, ws.headers, "  Spring   News  ")
    assert template["name"] == "Spring News"


async def test_parts_at_their_limits_are_accepted(client, ws):
    template = await create(
        client,
        ws.headers,
        "n" * 100,
        subject="s" * 200,
        preheader="p" * 200,
        html_content="h" * 500_000,
        text_content="t" * 200_000,
    )
    stored = (await client.get(f"{BASE}/{template['id']}", headers=ws.headers)).json()["template"]
    assert len(stored["html_content"]) == 500_000
    assert len(stored["text_content"]) == 200_000
    assert len(stored["name"]) == 100


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({}, "name is required"),
        ({"name": None}, "name is required"),
        ({"name": "   "}, "name is required"),
        ({"name": 5}, "name must be a string"),
        ({"name": "x" * 101}, "name must be 100 characters or fewer"),
        ({"name": "ok", "subject": "s" * 201}, "subject must be 200 characters or fewer"),
        ({"name": "ok", "preheader": "p" * 201}, "preheader must be 200 characters or fewer"),
        ({"name": "ok", "subject": 3}, "subject must be a string"),
        ({"name": "ok", "html_content": ["<p>"]}, "html_content must be a string"),
        ({"name": "ok", "text_content": {"a": 1}}, "text_content must be a string"),
    ],
)
async def test_invalid_create_is_400_and_stores_nothing(client, ws, payload, message):
    response = await client.post(BASE, json=payload, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert (await listed(client, ws.headers))["templates"] == []


@pytest.mark.parametrize(
    ("field", "size", "message"),
    [
        ("html_content", 500_001, "html_content must be 500,000 characters or fewer"),
        ("text_content", 200_001, "text_content must be 200,000 characters or fewer"),
    ],
)
async def test_over_size_content_is_413_and_stores_nothing(client, ws, field, size, message):
    response = await client.post(BASE, json={"name": "Big", field: "x" * size}, headers=ws.headers)
    assert response.status_code == 413
    assert response.json() == {"error": message}
    assert (await listed(client, ws.headers))["templates"] == []

    kept = await create(client, ws.headers, "Small", **{field: "small"})
    patched = await client.patch(
        f"{BASE}/{kept['id']}", json={field: "x" * size}, headers=ws.headers
    )
    assert patched.status_code == 413
    assert patched.json() == {"error": message}
    stored = (await client.get(f"{BASE}/{kept['id']}", headers=ws.headers)).json()["template"]
    assert stored[field] == "small"


async def test_body_over_two_megabytes_is_413_before_it_is_parsed(client, ws):
    response = await client.post(
        BASE, json={"name": "Huge", "html_content": "x" * (2 * 1024 * 1024)}, headers=ws.headers
    )
    assert response.status_code == 413
    assert response.json()["error"].startswith("Request body too large")
    assert (await listed(client, ws.headers))["templates"] == []


@pytest.mark.parametrize("duplicate", ["Welcome", "welcome", "  WELCOME  "])
async def test_duplicate_name_ignoring_case_is_409(client, ws, duplicate):
    original = await create(client, ws.headers, "Welcome")
    response = await client.post(BASE, json={"name": duplicate}, headers=ws.headers)
    assert response.status_code == 409
    assert response.json()["error"] == "A template with this name already exists"
    assert [t["id"] for t in (await listed(client, ws.headers))["templates"]] == [original["id"]]


async def test_the_same_name_in_another_workspace_is_fine(client, ws, factory):
    other = await factory.workspace()
    await create(client, ws.headers, "Welcome")
    await create(client, other.headers, "Welcome")


async def test_nul_character_is_refused_or_kept_never_500(raw_client, ws):
    response = await raw_client.post(
        BASE, json={"name": "Nul", "html_content": "<p>a\x00b</p>"}, headers=ws.headers
    )
    assert response.status_code in (201, 400), response.text
    if response.status_code == 201:
        template_id = response.json()["template"]["id"]
        stored = await raw_client.get(f"{BASE}/{template_id}", headers=ws.headers)
        assert stored.json()["template"]["html_content"] == "<p>a\x00b</p>"
    else:
        assert response.json() == {"error": "Text must not contain NUL (\\u0000) characters"}


# ---------------------------------------------------------------- syntax


@pytest.mark.parametrize(
    ("field", "source", "message"),
    [
        ("subject", "Hi {{ first_name", "Template syntax error in subject, line 1: "),
        ("preheader", "{% if x %}open", "Template syntax error in preheader, line 1: "),
        ("html_content", "<p>\n\n{{ a }</p>", "Template syntax error in html_content, line 3: "),
        ("text_content", "ok\n{% endfor %}", "Template syntax error in text_content, line 2: "),
        ("html_content", "{{ a | no_such_filter }}", "Template syntax error in html_content, "),
        ("html_content", "{% include 'x.html' %}", "Template syntax error in html_content, "),
    ],
)
async def test_syntax_error_is_400_naming_field_and_line(client, ws, field, source, message):
    response = await client.post(BASE, json={"name": "Bad", field: source}, headers=ws.headers)
    assert response.status_code == 400
    assert response.json()["error"].startswith(message), response.json()
    assert (await listed(client, ws.headers))["templates"] == []


async def test_syntax_error_messages_say_what_is_wrong(client, ws):
    response = await client.post(
        BASE, json={"name": "Bad", "html_content": "<p>{{ a }</p>"}, headers=ws.headers
    )
    assert response.json() == {
        "error": "Template syntax error in html_content, line 1: unexpected '}'"
    }
    response = await client.post(
        BASE, json={"name": "Bad", "html_content": "x\n{% include 'a' %}"}, headers=ws.headers
    )
    assert response.json() == {
        "error": "Template syntax error in html_content, line 2: "
        "templates cannot include, import or extend other templates"
    }


async def test_the_first_broken_part_is_named_in_field_order(client, ws):
    response = await client.post(
        BASE,
        json={"name": "Bad", "text_content": "{{", "subject": "{%", "html_content": "{{ }"},
        headers=ws.headers,
    )
    assert response.json()["error"].startswith("Template syntax error in subject, line 1:")


async def test_patch_with_a_syntax_error_changes_nothing(client, ws):
    template = await create(client, ws.headers, "Keep", html_content="<p>ok</p>")
    response = await client.patch(
        f"{BASE}/{template['id']}",
        json={"name": "Renamed", "html_content": "{% for %}"},
        headers=ws.headers,
    )
    assert response.status_code == 400
    assert response.json()["error"].startswith("Template syntax error in html_content, line 1:")
    stored = (await client.get(f"{BASE}/{template['id']}", headers=ws.headers)).json()["template"]
    assert stored == template


async def test_a_constant_expression_is_not_computed_at_save(client, ws):
    # Jinja folds constant expressions while compiling; saving must not build this gigabyte.
    response = await client.post(
        BASE,
        json={"name": "Folded", "html_content": "{{ 'a' | center(1000000000) }}"},
        headers=ws.headers,
    )
    assert response.status_code == 201, response.text


# ---------------------------------------------------------------- update


async def test_patch_changes_only_the_fields_sent_and_moves_updated_at(client, ws):
    template = await create(client, ws.headers, "Old", subject="S", html_content="<p>H</p>")
    response = await client.patch(
        f"{BASE}/{template['id']}",
        json={"name": "New", "text_content": "T {{ email }}"},
        headers=ws.headers,
    )
    assert response.status_code == 200
    updated = response.json()["template"]
    assert updated["name"] == "New"
    assert updated["text_content"] == "T {{ email }}"
    assert updated["subject"] == "S" and updated["html_content"] == "<p>H</p>"
    assert updated["updated_at"] > template["updated_at"]
    assert updated["created_at"] == template["created_at"]
    stored = (await client.get(f"{BASE}/{template['id']}", headers=ws.headers)).json()["template"]
    assert stored == updated


async def test_patch_null_clears_a_part(client, ws):
    template = await create(client, ws.headers, "Clear", preheader="P")
    response = await client.patch(
        f"{BASE}/{template['id']}", json={"preheader": None}, headers=ws.headers
    )
    assert response.status_code == 200
    assert response.json()["template"]["preheader"] == ""


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({}, "No updatable fields provided"),
        ({"html": "<p>"}, "Unknown field(s): html"),
        ({"name": "x", "id": "y", "created_at": "z"}, "Unknown field(s): id, created_at"),
        ({"name": None}, "name is required"),
        ({"name": "n" * 101}, "name must be 100 characters or fewer"),
        ({"subject": "s" * 201}, "subject must be 200 characters or fewer"),
        ({"preheader": 1}, "preheader must be a string"),
    ],
)
async def test_invalid_patch_is_400_and_changes_nothing(client, ws, payload, message):
    template = await create(client, ws.headers, "Stay", subject="S")
    response = await client.patch(f"{BASE}/{template['id']}", json=payload, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": message}
    stored = (await client.get(f"{BASE}/{template['id']}", headers=ws.headers)).json()["template"]
    assert stored == template


async def test_rename_to_another_templates_name_is_409_and_own_name_is_fine(client, ws):
    first = await create(client, ws.headers, "First")
    second = await create(client, ws.headers, "Second")
    clash = await client.patch(f"{BASE}/{second['id']}", json={"name": "FIRST"}, headers=ws.headers)
    assert clash.status_code == 409
    assert clash.json()["error"] == "A template with this name already exists"
    same = await client.patch(f"{BASE}/{first['id']}", json={"name": "first"}, headers=ws.headers)
    assert same.status_code == 200
    assert same.json()["template"]["name"] == "first"
    stored = (await client.get(f"{BASE}/{second['id']}", headers=ws.headers)).json()["template"]
    assert stored["name"] == "Second"


# ---------------------------------------------------------------- delete and unknown ids


async def test_delete_answers_success_and_id_then_the_template_is_gone(client, ws):
    template = await create(client, ws.headers, "Gone")
    response = await client.delete(f"{BASE}/{template['id']}", headers=ws.headers)
    assert response.status_code == 200
    assert response.json() == {"success": True, "id": template["id"]}
    assert (await client.get(f"{BASE}/{template['id']}", headers=ws.headers)).status_code == 404
    assert (await listed(client, ws.headers))["templates"] == []
    # The name is free again.
    await create(client, ws.headers, "Gone")


async def test_unknown_and_other_workspaces_templates_are_404(client, ws, factory):
    other = await factory.workspace()
    theirs = await create(client, other.headers, "Theirs", subject="secret")
    for template_id in ("no-such-template", theirs["id"], "f" * 300):
        for method, json in (("GET", None), ("DELETE", None), ("PATCH", {"name": "x"})):
            response = await client.request(
                method, f"{BASE}/{template_id}", json=json, headers=ws.headers
            )
            assert response.status_code == 404, (method, template_id)
            assert response.json() == {"error": "Template not found"}
        preview = await client.post(f"{BASE}/{template_id}/preview", headers=ws.headers)
        assert preview.status_code == 404
        assert preview.json() == {"error": "Template not found"}
    stored = (await client.get(f"{BASE}/{theirs['id']}", headers=other.headers)).json()
    assert stored["template"]["name"] == "Theirs"
    assert stored["template"]["subject"] == "secret"


# ---------------------------------------------------------------- listing


async def test_list_is_newest_first_and_paged(client, ws):
    made = [await create(client, ws.headers, f"T{i}") for i in range(5)]
    page = await listed(client, ws.headers, limit=2)
    assert [t["id"] for t in page["templates"]] == [made[4]["id"], made[3]["id"]]
    assert page["pagination"]["total"] == 5
    last = await listed(client, ws.headers, limit=2, page=3)
    assert [t["id"] for t in last["templates"]] == [made[0]["id"]]
    assert set(last["templates"][0]) == TEMPLATE_KEYS


async def test_list_filters_by_name_ignoring_case(client, ws, factory):
    await create(client, ws.headers, "Spring sale")
    await create(client, ws.headers, "Welcome")
    await create(client, ws.headers, "Autumn SALE")
    other = await factory.workspace()
    await create(client, other.headers, "Other sale")
    found = await listed(client, ws.headers, q="sale")
    assert sorted(t["name"] for t in found["templates"]) == ["Autumn SALE", "Spring sale"]
    assert found["pagination"]["total"] == 2
    assert (await listed(client, ws.headers, q="100%"))["templates"] == []


# ---------------------------------------------------------------- permissions and audit


async def test_permissions(client, ws, factory):
    template = await create(client, ws.headers, "Guarded")
    reader = await factory.key(ws, "templates:read")
    writer = await factory.key(ws, "templates:write")
    assert (await client.get(BASE, headers=reader)).status_code == 200
    preview = await client.post(f"{BASE}/{template['id']}/preview", headers=reader)
    assert preview.status_code == 200
    for method, path, json in (
        ("POST", BASE, {"name": "x"}),
        ("PATCH", f"{BASE}/{template['id']}", {"name": "y"}),
        ("DELETE", f"{BASE}/{template['id']}", None),
    ):
        response = await client.request(method, path, json=json, headers=reader)
        assert response.status_code == 403
        assert response.json() == {"error": "Forbidden: templates:write permission required"}
    for method, path in (("GET", BASE), ("GET", f"{BASE}/{template['id']}")):
        response = await client.request(method, path, headers=writer)
        assert response.status_code == 403
        assert response.json() == {"error": "Forbidden: templates:read permission required"}
    response = await client.post(f"{BASE}/{template['id']}/preview", headers=writer)
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: templates:read permission required"}
    assert (await client.get(f"{BASE}/{template['id']}", headers=ws.headers)).status_code == 200


async def test_writes_are_audited_with_their_target(client, ws):
    template = await create(client, ws.headers, "Audited")
    await client.patch(f"{BASE}/{template['id']}", json={"subject": "s"}, headers=ws.headers)
    await client.delete(f"{BASE}/{template['id']}", headers=ws.headers)
    log = await client.get("/api/v1/account/audit-log", headers=ws.headers)
    entries = log.json()["entries"]
    assert [(e["operation"], e["target_id"], e["status"]) for e in entries] == [
        ("delete_template", template["id"], 200),
        ("update_template", template["id"], 200),
        ("create_template", template["id"], 201),
    ]
