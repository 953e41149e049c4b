"""Spec, Errors: one body shape for every refusal, FastAPI's own answers included."""

from __future__ import annotations

import pytest

from tests.foundation.probe import router as probe_router


@pytest.fixture
def probe(app):
    app.include_router(probe_router)
    return app


async def test_unknown_route_is_json_404(client, ws):
    response = await client.get("/api/v1/no-such-thing", headers=ws.headers)
    assert response.status_code == 404
    assert response.json() == {"error": "Not Found"}
    public = await client.get("/no-such-page")
    assert public.status_code == 404
    assert public.json() == {"error": "Not Found"}


async def test_wrong_method_is_json_405_with_full_allow(client, ws, probe):
    response = await client.put("/api/v1/probe/jobs/abc", headers=ws.headers)
    assert response.status_code == 405
    assert response.json() == {"error": "Method Not Allowed"}
    assert response.headers["allow"] == "DELETE"
    response = await client.delete("/api/v1/account/audit-log", headers=ws.headers)
    assert response.headers["allow"] == "GET"  # no implicit HEAD is served, none is listed


async def test_malformed_json_is_400(client, ws, probe):
    response = await client.post(
        "/api/v1/probe/jobs",
        content=b'{"name": ',
        headers={**ws.headers, "content-type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json() == {"error": "Invalid JSON in request body"}


@pytest.mark.parametrize("payload", [b"[1, 2]", b'"text"', b"42", b"null"])
async def test_json_that_is_not_an_object_is_400(client, ws, probe, payload):
    response = await client.post(
        "/api/v1/probe/jobs",
        content=payload,
        headers={**ws.headers, "content-type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json()["error"] in {
        "Request body must be a JSON object",
        "Request body is required",
    }


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({}, "name is required"),
        ({"name": 5}, "name must be a string"),
        ({"name": "x" * 11}, "name must be 10 characters or fewer"),
        ({"name": "x", "flag": "yes"}, "flag must be true or false"),
        ({"name": "x", "count": "many"}, "count must be an integer"),
        ({"name": "x", "bogus": 1, "other": 2}, "Unknown field(s): bogus, other"),
    ],
)
async def test_validation_failures_are_400_with_readable_message(
    client, ws, probe, payload, message
):
    response = await client.post("/api/v1/probe/jobs", json=payload, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": message}


async def test_query_validation_is_400(client, ws):
    response = await client.get("/api/v1/account/audit-log?limit=0", headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": "limit must be at least 1"}
    response = await client.get("/api/v1/account/audit-log?limit=abc", headers=ws.headers)
    assert response.json() == {"error": "limit must be an integer"}


async def test_api_error_rolls_back_the_change(client, ws, probe, db):
    from sqlalchemy import func, select

    from mailroom.models import Job

    response = await client.post("/api/v1/probe/jobs", json={"name": "boom"}, headers=ws.headers)
    assert response.status_code == 409
    assert response.json() == {"error": "Probe conflict"}
    async with db.session() as session:
        assert await session.scalar(select(func.count()).select_from(Job)) == 0
    created = await client.post("/api/v1/probe/jobs", json={"name": "fine"}, headers=ws.headers)
    assert created.status_code == 201
    async with db.session() as session:
        assert await session.scalar(select(func.count()).select_from(Job)) == 1


async def test_health_reports_database(client):
    response = await client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["database"] == "ok"
