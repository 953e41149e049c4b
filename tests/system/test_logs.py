"""Logs as an operator reads them: one JSON object a line with the request's id, workspace,
route, status and duration; `X-Request-ID` taken when well-formed, made otherwise, answered on
every response; and nothing secret in any line: a run's log is searched for the tokens of
subscriber and sign-in links, keys, webhook secrets, bearer tokens, passwords and addresses."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import AsyncIterator, Iterator

import pytest
from fastapi.responses import StreamingResponse

from mailroom.core import logs
from tests.log_capture import json_logs, lines
from tests.platform_imports.helpers import mailchimp_zip, work
from tests.sending.helpers import ok
from tests.system.test_metrics import scrape, value

TOKEN = "Zq7tokenValue_0123456789abcdef"


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """The root logger's lines, as `MAILROOM_LOG_FORMAT=json` writes them."""
    with json_logs() as buffer:
        yield buffer


async def test_each_request_has_an_id_and_one_json_access_line(client, ws, captured):
    given = await client.get("/api/v1/contacts", headers={**ws.headers, "X-Request-ID": "abc-123"})
    assert given.headers["x-request-id"] == "abc-123"
    made = await client.get("/api/v1/contacts", headers={**ws.headers, "X-Request-ID": "bad id\n"})
    fresh = made.headers["x-request-id"]
    assert fresh != "bad id\n" and len(fresh) == 32
    assert (await client.get("/healthz")).headers["x-request-id"]

    access = [line for line in lines(captured) if line["logger"] == "mailroom.access"]
    first, second, health = access
    assert first["request_id"] == "abc-123" and second["request_id"] == fresh
    assert first["workspace_id"] == ws.workspace_id
    assert (first["method"], first["route"], first["path"], first["status"]) == (
        "GET",
        "/api/v1/contacts",
        "/api/v1/contacts",
        200,
    )
    assert first["message"].startswith("GET /api/v1/contacts 200 ")
    assert first["duration_ms"] >= 0 and first["level"] == "info"
    assert first["time"].endswith("+00:00")
    assert "workspace_id" not in health  # no key, no workspace


async def test_a_runs_log_holds_no_token_key_secret_password_or_address(
    client, ws, captured, settings
):
    settings.webhook_allow_networks = ["127.0.0.0/8"]
    for path in (
        f"/u/{TOKEN}",
        f"/p/{TOKEN}",
        f"/v/{TOKEN}",
        f"/o/{TOKEN}",
        f"/l/{TOKEN}",
        f"/confirm/{TOKEN}",
        f"/f/confirm/{TOKEN}",
        f"/app/link/{TOKEN}",
        f"/u/{TOKEN}?next=x",
    ):
        await client.get(path)
    await ok(
        await client.post(
            "/api/v1/contacts", json={"email": "jane.doe@mail.example"}, headers=ws.headers
        ),
        201,
    )
    hook = await ok(
        await client.post(
            "/api/v1/webhooks",
            json={"url": "http://127.0.0.1:9/x", "event_types": ["contact.created"]},
            headers=ws.headers,
        ),
        201,
    )
    key = ws.headers["x-api-key"]
    # What code might log by mistake, in a message, its arguments or an exception.
    noisy = logging.getLogger("mailroom.test")
    noisy.warning("sending to %s with key %s", "jane.doe@mail.example", key)
    noisy.warning("secret %s, header Authorization: Bearer mr_at_%s", hook["secret"], TOKEN)
    noisy.warning("relay smtp://mailer:hunter2secret@smtp.example:587 said no")
    noisy.warning('body {"email": "x@y.example", "password": "hunter2secret"}')
    noisy.warning("{'password': 'hunter2secret'} Authorization: Basic aHVudGVyMnNlY3JldA==")
    noisy.warning("GET http://mailroom.mcp/api/v1/contacts?q=jane.doe%%40mail.example&a=b")
    noisy.warning("store secret mrs_%s, mailchimp 0123456789abcdef0123456789abcdef-us21", TOKEN)
    try:
        raise RuntimeError(f"failed for jane.doe@mail.example on /u/{TOKEN}")
    except RuntimeError:
        noisy.exception("a traceback")

    text = captured.getvalue()
    for secret in (
        TOKEN,
        key,
        hook["secret"],
        "hunter2secret",
        "aHVudGVyMnNlY3JldA",
        "jane.doe@mail.example",
        "jane.doe%40mail.example",
        "0123456789abcdef0123456789abcdef",
    ):
        assert secret not in text, secret
    found = lines(captured)
    assert "j***@mail.example" in json.dumps(found)
    assert "mr_live_***" in text and "whsec_***" in text and "Bearer ***" in text
    assert "smtp://mailer:***" in text  # the password cut (the address after it masked)
    paths = {line["path"] for line in found if line["logger"] == "mailroom.access"}
    assert f"/u/{logs.REDACTED}" in paths and f"/app/link/{logs.REDACTED}" in paths
    assert all("?" not in p for p in paths)  # no query string


async def test_the_workers_lines_about_an_import_carry_the_request_that_started_it(
    client, db, settings, ws, captured
):
    answer = await client.post(
        "/api/v1/imports",
        headers={**ws.headers, "X-Request-ID": "req-import-7"},
        data={"platform": "mailchimp"},
        files={"file": ("export.zip", mailchimp_zip(), "application/octet-stream")},
    )
    assert answer.status_code == 202, answer.text
    assert answer.headers["x-request-id"] == "req-import-7"
    job_id = answer.json()["import"]["id"]
    captured.truncate(0)
    captured.seek(0)
    assert await work(db, settings) == 1  # the worker's loop, outside any request
    worker_lines = [
        line for line in lines(captured) if line["logger"] == "mailroom.platform_imports"
    ]
    assert [line["message"] for line in worker_lines] == [
        f"platform import {job_id} (mailchimp) running",
        f"platform import {job_id} done: 9 contacts",
    ]
    assert {line["request_id"] for line in worker_lines} == {"req-import-7"}
    assert logs.REQUEST_ID.get() is None  # nothing carried past the job


CRASH_ROUTE = "/api/v1/crash/{id}"


@pytest.fixture
def crashing(app):
    """Routes of this test only whose handler fails as a bug would: before answering, and
    after its answer has started."""

    async def crash(id: str) -> None:
        raise RuntimeError(f"disk on fire under {id} for jane.doe@mail.example")

    async def crash_midway() -> StreamingResponse:
        async def chunks() -> AsyncIterator[bytes]:
            yield b"first part"
            raise RuntimeError("lost the rest")

        return StreamingResponse(chunks(), media_type="text/plain")

    app.add_api_route(CRASH_ROUTE, crash, methods=["GET"])
    app.add_api_route("/crash-midway", crash_midway, methods=["GET"])
    return app


async def test_an_unhandled_error_is_a_json_500_with_its_request_id_logged_once(
    client, ws, crashing, captured
):
    before, _ = await scrape(client)
    answer = await client.get(
        "/api/v1/crash/x7", headers={**ws.headers, "X-Request-ID": "req-crash-1"}
    )
    assert answer.status_code == 500
    assert answer.json() == {"error": "Internal server error"}
    assert answer.headers["x-request-id"] == "req-crash-1"
    assert "disk on fire" not in answer.text and "Traceback" not in answer.text

    found = lines(captured)
    failures = [line for line in found if line["level"] == "error"]
    assert len(failures) == 1, failures  # logged once: not again by Starlette's 500
    failure = failures[0]
    assert failure["logger"] == "mailroom.errors"
    assert failure["message"] == "unhandled error on GET /api/v1/crash/x7"
    assert failure["request_id"] == "req-crash-1"
    assert failure["workspace_id"] == ws.workspace_id
    assert failure["route"] == CRASH_ROUTE
    assert failure["exception"].startswith("Traceback (most recent call last):")
    assert failure["exception"].endswith(
        "RuntimeError: disk on fire under x7 for j***@mail.example"
    )
    access = [line for line in found if line["logger"] == "mailroom.access"]
    crash = [line for line in access if line.get("route") == CRASH_ROUTE]
    assert len(crash) == 1
    assert (crash[0]["request_id"], crash[0]["status"], crash[0]["path"]) == (
        "req-crash-1",
        500,
        "/api/v1/crash/x7",
    )
    assert crash[0]["workspace_id"] == ws.workspace_id
    assert crash[0]["message"].startswith("GET /api/v1/crash/x7 500 ")

    after, _ = await scrape(client)
    counted = {"route": CRASH_ROUTE, "method": "GET", "status": "500"}
    assert (
        value(after, "mailroom_http_requests_total", **counted)
        - value(before, "mailroom_http_requests_total", **counted)
        == 1
    )


async def test_an_unhandled_error_without_an_id_answers_the_made_one(
    client, ws, crashing, captured
):
    answer = await client.get("/api/v1/crash/x8", headers={**ws.headers, "X-Request-ID": "a b"})
    assert answer.status_code == 500
    assert answer.json() == {"error": "Internal server error"}
    made = answer.headers["x-request-id"]
    assert len(made) == 32
    failures = [line for line in lines(captured) if line["level"] == "error"]
    assert [line["request_id"] for line in failures] == [made]
    access = [line for line in lines(captured) if line["logger"] == "mailroom.access"]
    assert [(line["request_id"], line["status"]) for line in access] == [(made, 500)]


async def test_a_failure_after_the_answer_started_is_logged_once_and_raised_on(
    client, crashing, captured
):
    # Nothing can replace an answer already on its way: the server gets the exception (and
    # drops the connection); the line written here carries the request.
    with pytest.raises(RuntimeError, match="lost the rest"):
        await client.get("/crash-midway", headers={"X-Request-ID": "req-crash-2"})
    failures = [line for line in lines(captured) if line["level"] == "error"]
    assert len(failures) == 1, failures
    assert failures[0]["request_id"] == "req-crash-2"
    assert failures[0]["route"] == "/crash-midway"
    assert "RuntimeError: lost the rest" in failures[0]["exception"]
    assert "workspace_id" not in failures[0]  # no key, no workspace
    access = [line for line in lines(captured) if line["logger"] == "mailroom.access"]
    assert [(line["request_id"], line["status"]) for line in access] == [("req-crash-2", 200)]
