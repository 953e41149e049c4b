"""Logs as an operator reads them: one JSON object a line with the request's id, workspace,
route, status and duration; `X-Request-ID` taken when well-formed, made otherwise, answered on
every response; and nothing secret in any line: a run's log is searched for the tokens of
subscriber and sign-in links, keys, webhook secrets, bearer tokens, passwords and addresses."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from mailroom.core import logs
from tests.platform_imports.helpers import mailchimp_zip, work
from tests.sending.helpers import ok

TOKEN = "Zq7tokenValue_0123456789abcdef"


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """The root logger's lines, as `MAILROOM_LOG_FORMAT=json` writes them."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logs.JsonFormatter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield buffer
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines() if line.strip()]


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
