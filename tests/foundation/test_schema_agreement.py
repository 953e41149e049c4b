"""The published schema and the service agree on what a request may hold.

Each case is a request schemathesis once found where they disagreed. The test asks the
document itself (JSON Schema 2020-12, formats checked) whether the value is valid, then sends
it: a value the schema refuses is refused (4xx `{"error": ...}`, nothing changed), a value
it admits is accepted.
"""

from __future__ import annotations

from typing import Any

import httpx
from jsonschema import Draft202012Validator, FormatChecker

from tests.contacts.helpers import create

STATUSES = "draft, awaiting_approval, scheduled, sending, sent, cancelled"


async def _document(client: httpx.AsyncClient) -> dict[str, Any]:
    return (await client.get("/openapi.json")).json()


def _admits(document: dict[str, Any], schema: dict[str, Any], value: Any) -> bool:
    # `#/components/...` references resolve against the schema's root: give it the document's.
    root = {**schema, "components": document["components"]}
    return Draft202012Validator(root, format_checker=FormatChecker()).is_valid(value)


def _parameter(document: dict[str, Any], method: str, path: str, name: str) -> dict[str, Any]:
    operation = document["paths"][path][method]
    return next(p["schema"] for p in operation["parameters"] if p["name"] == name)


def _body(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    return document["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]


async def test_unknown_campaign_status_is_refused_as_the_schema_says(client, ws):
    document = await _document(client)
    schema = _parameter(document, "get", "/api/v1/campaigns", "status")
    for value in ("AAA", "", "Draft"):
        assert not _admits(document, schema, value)
        response = await client.get(
            "/api/v1/campaigns", params={"status": value}, headers=ws.headers
        )
        assert response.status_code == 400, value
        assert response.json() == {"error": f"status must be one of {STATUSES}"}
    assert _admits(document, schema, "draft")
    made = await client.post("/api/v1/campaigns", json={"name": "Spring"}, headers=ws.headers)
    assert made.status_code == 201
    drafts = await client.get("/api/v1/campaigns", params={"status": "draft"}, headers=ws.headers)
    assert [c["id"] for c in drafts.json()["campaigns"]] == [made.json()["campaign"]["id"]]
    sent = await client.get("/api/v1/campaigns", params={"status": "sent"}, headers=ws.headers)
    assert sent.json()["campaigns"] == []


async def test_contact_date_filters_admit_what_the_service_ignores(client, ws):
    """The spec: an impossible date is ignored. So an empty or malformed `from` / `to` is no
    filter, and the published schema is any string (no `format: date` that calls it wrong)."""
    document = await _document(client)
    contact = await create(client, ws.headers, "day@example.com")
    for path in ("/api/v1/contacts", "/api/v1/contacts/export"):
        for name in ("from", "to"):
            schema = _parameter(document, "get", path, name)
            for value in ("", "2026-02-30", "garbage", "2026-03-15"):
                assert _admits(document, schema, value), (path, name, value)
    for value in ("", "2026-02-30", "garbage"):
        listed = await client.get("/api/v1/contacts", params={"to": value}, headers=ws.headers)
        assert listed.status_code == 200
        assert [c["id"] for c in listed.json()["contacts"]] == [contact["id"]]
        exported = await client.get(
            "/api/v1/contacts/export", params={"to": value, "from": value}, headers=ws.headers
        )
        assert exported.status_code == 200
        assert "day@example.com" in exported.text
    # A real day still filters.
    before = await client.get("/api/v1/contacts", params={"to": "2000-01-01"}, headers=ws.headers)
    assert before.json()["contacts"] == []


async def test_contact_status_filter_is_one_of_the_statuses_or_absent(client, ws):
    document = await _document(client)
    await create(client, ws.headers, "one@example.com")
    message = {
        "error": "status must be one of subscribed, unsubscribed, bounced, complained, archived"
    }
    for path in ("/api/v1/contacts", "/api/v1/contacts/export"):
        schema = _parameter(document, "get", path, "status")
        for value in ("", "AAA", " subscribed"):
            assert not _admits(document, schema, value)
            response = await client.get(path, params={"status": value}, headers=ws.headers)
            assert response.status_code == 400, (path, value)
            assert response.json() == message
        assert _admits(document, schema, "subscribed")
        ok = await client.get(path, params={"status": "subscribed"}, headers=ws.headers)
        assert ok.status_code == 200
        assert "one@example.com" in ok.text


async def test_an_empty_choice_is_refused_where_an_enum_is_published(client, ws):
    """An empty sort, direction, member status or suppression reason is not one of the
    published values: refused, never read as "the default"."""
    document = await _document(client)
    made = await client.post("/api/v1/lists", json={"name": "News"}, headers=ws.headers)
    list_path = f"/api/v1/lists/{made.json()['list']['id']}/contacts"
    cases = [
        (
            "/api/v1/contacts",
            "/api/v1/contacts",
            "sort",
            "sort must be one of created, name, email, status",
        ),
        ("/api/v1/contacts", "/api/v1/contacts", "dir", "dir must be one of asc, desc"),
        (
            "/api/v1/lists/{id}/contacts",
            list_path,
            "status",
            "status must be one of confirmed, unconfirmed",
        ),
        (
            "/api/v1/suppressions/list",
            "/api/v1/suppressions/list",
            "reason",
            "reason must be one of unsubscribed, bounced, complained, deleted",
        ),
        (
            "/api/v1/suppressions/export",
            "/api/v1/suppressions/export",
            "reason",
            "reason must be one of unsubscribed, bounced, complained, deleted",
        ),
    ]
    for documented, path, name, message in cases:
        schema = _parameter(document, "get", documented, name)
        assert not _admits(document, schema, "")
        response = await client.get(path, params={name: ""}, headers=ws.headers)
        assert (response.status_code, response.json()) == (400, {"error": message}), (path, name)
        chosen = schema["enum"][0]
        assert _admits(document, schema, chosen)
        accepted = await client.get(path, params={name: chosen}, headers=ws.headers)
        assert accepted.status_code == 200, (path, name)


async def test_bulk_filter_keys_as_the_list_query_and_null_as_absent(client, ws):
    document = await _document(client)
    schema = _body(document, "post", "/api/v1/contacts/bulk")
    await create(client, ws.headers, "bulk@example.com")
    admitted = {
        "action": "export",
        "filter": {"to": "", "from": "2026-02-30", "q": None, "status": None, "segment": None},
    }
    assert _admits(document, schema, admitted)
    response = await client.post("/api/v1/contacts/bulk", json=admitted, headers=ws.headers)
    assert response.status_code == 200
    assert "bulk@example.com" in response.text
    for bad, message in (
        ({"to": 5}, "to must be a string"),
        ({"from": ["2026-01-01"]}, "from must be a string"),
        (
            {"status": ""},
            "status must be one of subscribed, unsubscribed, bounced, complained, archived",
        ),
    ):
        body = {"action": "export", "filter": bad}
        assert not _admits(document, schema, body)
        refused = await client.post("/api/v1/contacts/bulk", json=body, headers=ws.headers)
        assert refused.status_code == 400, bad
        assert refused.json() == {"error": message}


async def test_template_preview_of_an_empty_contact_id_uses_sample_values(client, ws):
    document = await _document(client)
    schema = _body(document, "post", "/api/v1/templates/{id}/preview")
    made = await client.post(
        "/api/v1/templates", json={"name": "P", "subject": "Hi {{ email }}"}, headers=ws.headers
    )
    template_id = made.json()["template"]["id"]
    samples = await client.post(
        f"/api/v1/templates/{template_id}/preview", json={}, headers=ws.headers
    )
    for value in ("", None):
        assert _admits(document, schema, {"contact_id": value})
        response = await client.post(
            f"/api/v1/templates/{template_id}/preview",
            json={"contact_id": value},
            headers=ws.headers,
        )
        assert response.status_code == 200
        assert response.json()["subject"] == samples.json()["subject"]
    assert not _admits(document, schema, {"contact_id": 5})
    refused = await client.post(
        f"/api/v1/templates/{template_id}/preview", json={"contact_id": 5}, headers=ws.headers
    )
    assert refused.status_code == 400
    assert refused.json() == {"error": "contact_id must be a string"}


async def test_segment_activity_takes_null_as_any_campaign_and_any_time(client, ws):
    document = await _document(client)
    schema = _body(document, "post", "/api/v1/segments/preview")
    await create(client, ws.headers, "reader@example.com")
    value = {"campaign_id": None, "within_days": None}
    body = {"rules": {"conditions": [{"field": "activity", "op": "not_opened", "value": value}]}}
    assert _admits(document, schema, body)
    response = await client.post("/api/v1/segments/preview", json=body, headers=ws.headers)
    assert response.status_code == 200
    # The same as no value at all.
    plain = {"rules": {"conditions": [{"field": "activity", "op": "not_opened"}]}}
    same = await client.post("/api/v1/segments/preview", json=plain, headers=ws.headers)
    assert response.json() == same.json()
    empty = {
        "rules": {
            "conditions": [{"field": "activity", "op": "opened", "value": {"campaign_id": ""}}]
        }
    }
    assert not _admits(document, schema, empty)
    refused = await client.post("/api/v1/segments/preview", json=empty, headers=ws.headers)
    assert refused.status_code == 400


async def test_empty_audit_log_cursor_is_refused_as_the_schema_says(client, ws):
    document = await _document(client)
    schema = _parameter(document, "get", "/api/v1/account/audit-log", "cursor")
    assert not _admits(document, schema, "")
    response = await client.get(
        "/api/v1/account/audit-log", params={"cursor": ""}, headers=ws.headers
    )
    assert response.status_code == 400
    assert response.json() == {"error": "Invalid cursor"}
    whole = await client.get("/api/v1/account/audit-log", headers=ws.headers)
    assert whole.status_code == 200


async def test_suppression_entries_that_are_not_addresses_are_admitted_and_counted(client, ws):
    """The spec counts an entry that is not a usable address as invalid (a number among
    them), never refusing the request; the published items admit any value likewise."""
    document = await _document(client)
    schema = _body(document, "post", "/api/v1/suppressions")
    body = {"entries": [1, 2.5, None, True, ["a@example.com"], {"email": 5}, "ok@example.com"]}
    assert _admits(document, schema, body)
    response = await client.post("/api/v1/suppressions", json=body, headers=ws.headers)
    assert response.status_code == 200
    assert response.json()["received"] == 7
    assert response.json()["invalid"] == 6
    assert response.json()["added"] == 1
    summary = await client.get("/api/v1/suppressions", headers=ws.headers)
    assert summary.json()["count"] == 1
    # What the schema refuses, the service refuses.
    for refused in ({"entries": []}, {"entries": "a@example.com"}, {}):
        assert not _admits(document, schema, refused)
        answer = await client.post("/api/v1/suppressions", json=refused, headers=ws.headers)
        assert answer.status_code == 400, refused


async def test_over_long_template_parts_are_refused_on_update_too(client, ws):
    """Over its maxLength, `text_content` is refused on PATCH as on POST: 413, the spec's
    status for content over its size limit, and the template keeps its text."""
    document = await _document(client)
    schema = _body(document, "patch", "/api/v1/templates/{id}")
    made = await client.post(
        "/api/v1/templates", json={"name": "T", "text_content": "short"}, headers=ws.headers
    )
    template_id = made.json()["template"]["id"]
    for name, limit in (("text_content", 200_000), ("html_content", 500_000)):
        body = {name: "a" * (limit + 1)}
        assert not _admits(document, schema, body)
        response = await client.patch(
            f"/api/v1/templates/{template_id}", json=body, headers=ws.headers
        )
        assert response.status_code == 413
        assert response.json() == {"error": f"{name} must be {limit:,} characters or fewer"}
        assert _admits(document, schema, {name: "a" * limit})
    shown = await client.get(f"/api/v1/templates/{template_id}", headers=ws.headers)
    assert shown.json()["template"]["text_content"] == "short"
