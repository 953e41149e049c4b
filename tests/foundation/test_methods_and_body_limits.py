"""OPTIONS, 405 and `Allow` list exactly the methods a resource supports; JSON bodies are
refused with 413 before more than their limit is read."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

LIMIT = 2 * 1024 * 1024
TOO_LARGE = "Request body too large: JSON bodies are limited to 2 MB"


@pytest.mark.parametrize(
    ("path", "allow"),
    [
        ("/api/v1/contacts/bulk", "POST"),
        ("/api/v1/contacts/export", "GET"),
        ("/api/v1/contacts/import", "POST"),
        ("/api/v1/custom-fields/scan", "POST"),
        ("/api/v1/contacts", "GET, POST"),
        ("/api/v1/contacts/0195", "DELETE, GET, PATCH"),
        ("/api/v1/suppressions/lift", "POST"),
    ],
)
async def test_options_lists_the_resources_own_methods(client, ws, path, allow):
    response = await client.options(path, headers=ws.headers)
    assert response.status_code == 204
    assert response.headers["allow"] == allow
    assert response.content == b""


async def test_every_documented_path_advertises_exactly_its_methods(client, ws):
    document = (await client.get("/openapi.json")).json()
    for path, operations in document["paths"].items():
        if not path.startswith("/api/v1"):
            continue
        concrete = re.sub(r"\{[^}]+\}", "0195abc", path)
        response = await client.options(concrete, headers=ws.headers)
        assert response.status_code == 204, path
        assert response.headers["allow"] == ", ".join(sorted(m.upper() for m in operations)), path


async def test_a_method_a_fixed_path_does_not_serve_is_405_not_another_route(client, ws):
    response = await client.get("/api/v1/contacts/bulk", headers=ws.headers)
    assert response.status_code == 405
    assert response.json() == {"error": "Method Not Allowed"}
    assert response.headers["allow"] == "POST"
    response = await client.delete("/api/v1/contacts/export", headers=ws.headers)
    assert response.status_code == 405
    assert response.headers["allow"] == "GET"
    # The write was refused before it counted or touched anything: the audit log says 405.
    entries = (await client.get("/api/v1/account/audit-log", headers=ws.headers)).json()
    assert [e["status"] for e in entries["entries"]][:1] == [405]


async def test_a_method_a_parameter_path_does_not_serve_is_405(client, ws):
    response = await client.put("/api/v1/contacts/0195abc", headers=ws.headers)
    assert response.status_code == 405
    assert response.headers["allow"] == "DELETE, GET, PATCH"


async def test_options_needs_a_key_like_every_api_call(client):
    response = await client.options("/api/v1/contacts")
    assert response.status_code == 401
    assert response.json() == {"error": "Unauthorized"}


async def _count(client, ws) -> int:
    listing = await client.get("/api/v1/contacts", headers=ws.headers)
    return int(listing.json()["pagination"]["total"])


async def test_declared_length_over_the_limit_is_413_before_reading(client, ws):
    body = b'{"email": "big@example.com", "first_name": "' + b"x" * LIMIT + b'"}'
    response = await client.post(
        "/api/v1/contacts",
        content=body,
        headers={**ws.headers, "content-type": "application/json"},
    )
    assert response.status_code == 413
    assert response.json() == {"error": TOO_LARGE}
    assert await _count(client, ws) == 0


async def test_chunked_body_is_cut_off_at_the_limit(client, ws):
    sent = 0

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal sent
        yield b'{"email": "chunk@example.com", "first_name": "'
        for _ in range(64):  # 64 x 64 KB = 4 MB offered
            sent += 65536
            yield b"y" * 65536
        yield b'"}'

    response = await client.post(
        "/api/v1/contacts",
        content=chunks(),
        headers={**ws.headers, "content-type": "application/json"},
    )
    assert response.status_code == 413
    assert response.json() == {"error": TOO_LARGE}
    assert sent <= LIMIT + 2 * 65536  # reading stopped at the limit, not at the end
    assert await _count(client, ws) == 0


async def test_a_body_under_the_limit_is_served(client, ws):
    response = await client.post(
        "/api/v1/contacts",
        json={"email": "small@example.com", "custom_fields": {"note": "n" * 200}},
        headers=ws.headers,
    )
    assert response.status_code == 201


async def test_the_limit_holds_for_bodies_read_by_the_handler(client, ws):
    # The suppression import reads its JSON body itself (it also takes multipart).
    entries = [f"user{i}@example.com" + " " * 500 for i in range(5000)]
    response = await client.post(
        "/api/v1/suppressions", json={"entries": entries}, headers=ws.headers
    )
    assert response.status_code == 413
    assert response.json() == {"error": TOO_LARGE}
    summary = (await client.get("/api/v1/suppressions", headers=ws.headers)).json()
    assert summary["count"] == 0
