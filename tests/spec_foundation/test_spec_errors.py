"""Spec, Errors: every error body is `{error: string}` (plus named extras), on real routes."""

from __future__ import annotations

import pytest

from tests.spec_foundation.helpers import ZERO_ID, error_of

# Extras the spec names (Errors): nothing else may appear next to `error`.
NAMED_EXTRAS = {
    "violations",
    "reason",
    "invalid",
    "skipped_unconfirmed",
    "details",
    "used_bytes",
    "quota_bytes",
    "configured",
}


def assert_error_shape(response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert isinstance(body, dict)
    assert isinstance(body.get("error"), str) and body["error"]
    assert set(body) - {"error"} <= NAMED_EXTRAS, body
    return str(body["error"])


async def _contact(client, ws, email="e@shop.io") -> str:
    response = await client.post("/api/v1/contacts", json={"email": email}, headers=ws.headers)
    assert response.status_code == 201, response.text
    return str(response.json()["contact"]["id"])


# ---------------------------------------------------------------- FastAPI's own 404 / 405


@pytest.mark.parametrize(
    "path",
    ["/api/v1/nothing", "/api/v1/contacts/a/b/c", "/api/v1", "/api/v2/contacts", "/nowhere"],
)
async def test_unknown_paths_are_json_404(client, ws, path):
    response = await client.get(path, headers=ws.headers)
    assert assert_error_shape(response, 404) == "Not Found"
    assert set(response.json()) == {"error"}


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/api/v1/contacts", {"GET", "POST"}),
        ("DELETE", "/api/v1/contacts", {"GET", "POST"}),
        ("PUT", f"/api/v1/contacts/{ZERO_ID}", {"GET", "PATCH", "DELETE"}),
        ("DELETE", "/api/v1/suppressions", {"GET", "POST"}),
        ("GET", "/api/v1/suppressions/lift", {"POST"}),
        ("POST", "/api/v1/suppressions/list", {"GET"}),
        ("POST", "/api/v1/suppressions/export", {"GET"}),
        ("POST", "/api/v1/account/audit-log", {"GET"}),
        ("PATCH", "/api/v1/tags", {"GET", "POST"}),
    ],
)
async def test_wrong_method_on_real_routes_is_json_405(client, ws, method, path, allowed):
    response = await client.request(method, path, headers=ws.headers)
    assert assert_error_shape(response, 405) == "Method Not Allowed"
    listed = {m.strip() for m in response.headers["allow"].split(",")}
    assert allowed <= listed, listed
    assert listed - {"HEAD"} == allowed, listed


# ---------------------------------------------------------------- malformed JSON / not an object

WRITE_ROUTES = [
    ("POST", "/api/v1/contacts"),
    ("PATCH", "/api/v1/contacts/{contact}"),
    ("POST", "/api/v1/contacts/bulk"),
    ("POST", "/api/v1/contacts/{contact}/tags"),
    ("POST", "/api/v1/tags"),
    ("POST", "/api/v1/lists"),
    ("POST", "/api/v1/custom-fields"),
    ("POST", "/api/v1/suppressions"),
    ("POST", "/api/v1/suppressions/lift"),
    ("POST", "/api/v1/webhooks"),
]


@pytest.mark.parametrize(("method", "path"), WRITE_ROUTES)
@pytest.mark.parametrize("payload", [b'{"email": ', b"{'email': 'x@shop.io'}", b"{,}", b"\xff\xfe"])
async def test_malformed_json_is_400_on_every_write_route(client, ws, method, path, payload):
    contact = await _contact(client, ws)
    response = await client.request(
        method,
        path.format(contact=contact),
        content=payload,
        headers={**ws.headers, "content-type": "application/json"},
    )
    assert_error_shape(response, 400)
    assert set(response.json()) == {"error"}


@pytest.mark.parametrize(("method", "path"), WRITE_ROUTES)
@pytest.mark.parametrize("payload", [b"[]", b'["a@shop.io"]', b'"a@shop.io"', b"42", b"true"])
async def test_json_that_is_not_an_object_is_400_on_every_write_route(
    client, ws, method, path, payload
):
    contact = await _contact(client, ws)
    response = await client.request(
        method,
        path.format(contact=contact),
        content=payload,
        headers={**ws.headers, "content-type": "application/json"},
    )
    assert_error_shape(response, 400)
    assert set(response.json()) == {"error"}


async def test_bad_bodies_create_nothing(client, ws):
    for payload in (b'{"email": ', b'["x@shop.io"]', b'"x@shop.io"'):
        await client.post(
            "/api/v1/contacts",
            content=payload,
            headers={**ws.headers, "content-type": "application/json"},
        )
        await client.post(
            "/api/v1/suppressions",
            content=payload,
            headers={**ws.headers, "content-type": "application/json"},
        )
    listing = await client.get("/api/v1/contacts", headers=ws.headers)
    assert listing.json()["pagination"]["total"] == 0
    summary = await client.get("/api/v1/suppressions", headers=ws.headers)
    assert summary.json()["count"] == 0


# ---------------------------------------------------------------- request validation -> 400


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({}, "email is required"),
        ({"email": 5}, "email must be a string"),
        ({"email": "a@shop.io", "first_name": 7}, "first_name must be a string"),
        ({"email": "a@shop.io", "resubscribe": "yes"}, "resubscribe must be true or false"),
        ({"email": "a@shop.io", "custom_fields": [1]}, "custom_fields must be an object"),
    ],
)
async def test_field_validation_is_400_with_the_spec_sentence(client, ws, payload, message):
    response = await client.post("/api/v1/contacts", json=payload, headers=ws.headers)
    assert assert_error_shape(response, 400) == message


@pytest.mark.parametrize(
    "query",
    [
        "limit=0",
        "limit=101",
        "limit=abc",
        "page=0",
        "page=-1",
        "page=x",
    ],
)
@pytest.mark.parametrize("path", ["/api/v1/contacts", "/api/v1/suppressions/list"])
async def test_bad_paging_query_is_400(client, ws, path, query):
    response = await client.get(f"{path}?{query}", headers=ws.headers)
    assert_error_shape(response, 400)
    assert set(response.json()) == {"error"}


async def test_paging_bounds_are_accepted(client, ws):
    for path in ("/api/v1/contacts", "/api/v1/suppressions/list"):
        for query in ("limit=1", "limit=100", "page=1"):
            response = await client.get(f"{path}?{query}", headers=ws.headers)
            assert response.status_code == 200, (path, query, response.text)


# ---------------------------------------------------------------- known 404 messages


async def test_known_404_messages(client, ws):
    contact = await _contact(client, ws)
    tag = await client.post("/api/v1/tags", json={"name": "vip"}, headers=ws.headers)
    assert tag.status_code == 201, tag.text
    tag_id = tag.json()["tag"]["id"]
    cases = [
        ("GET", f"/api/v1/contacts/{ZERO_ID}", None, "Contact not found"),
        ("GET", f"/api/v1/tags/{ZERO_ID}", None, "Tag not found"),
        ("GET", f"/api/v1/lists/{ZERO_ID}", None, "List not found"),
        ("POST", f"/api/v1/contacts/{ZERO_ID}/tags", {"tag_id": tag_id}, "Contact not found"),
        ("POST", f"/api/v1/contacts/{contact}/tags", {"tag_id": ZERO_ID}, "Tag not found"),
        (
            "DELETE",
            f"/api/v1/contacts/{contact}/tags/{tag_id}",
            None,
            "This tag is not associated with the contact",
        ),
    ]
    for method, path, body, message in cases:
        kwargs = {"json": body} if body is not None else {}
        response = await client.request(method, path, headers=ws.headers, **kwargs)
        assert assert_error_shape(response, 404) == message, (method, path)


async def test_not_found_ids_of_any_shape_are_404_not_500(client, ws):
    for raw in ("abc", "1", "x" * 200, "%20", "00000000-0000-0000-0000-00000000000Z"):
        response = await client.get(f"/api/v1/contacts/{raw}", headers=ws.headers)
        assert response.status_code in (400, 404), (raw, response.text)
        error_of(response)


# ---------------------------------------------------------------- 409 / 413 / 422 carry the shape


async def test_conflict_body_shape(client, ws):
    await _contact(client, ws, "dup@shop.io")
    response = await client.post(
        "/api/v1/contacts", json={"email": "dup@shop.io"}, headers=ws.headers
    )
    assert assert_error_shape(response, 409) == "A contact with this email already exists"


async def test_csv_refusals_keep_the_shape(client, ws):
    empty = await client.post(
        "/api/v1/suppressions",
        files={"file": ("s.csv", b"email\n", "text/csv")},
        headers=ws.headers,
    )
    assert_error_shape(empty, 422)
    assert isinstance(empty.json()["invalid"], int)
    big = b"email\n" + b"a@shop.io\n" * (5 * 1024 * 1024 // 10 + 10)
    too_big = await client.post(
        "/api/v1/suppressions",
        files={"file": ("s.csv", big, "text/csv")},
        headers=ws.headers,
    )
    assert "5 MB" in assert_error_shape(too_big, 413)
