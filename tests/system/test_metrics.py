"""`GET /metrics` scraped as Prometheus does, read with `prometheus-client`'s own text parser:
the figures move with the work done (HTTP requests by route template, emails sent with their
DKIM signing, SMTP connections, webhook deliveries, queue depths, pooled connections); labels
carry no address, key or id; only loopback clients (not through a proxy) may scrape unless a
token is set, then only with it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.sending.conftest import verified_domain
from tests.sending.helpers import make_contacts, ok
from tests.webhooks.helpers import Driver as HookDriver
from tests.webhooks.helpers import Receiver

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(client: httpx.AsyncClient) -> tuple[Samples, str]:
    answer = await client.get("/metrics")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples: Samples = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples, answer.text


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """Summed over the labels not given."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= set(ls))


async def test_requests_are_counted_by_route_template_and_leak_nothing(client, ws):
    before, _ = await scrape(client)
    made = []
    for i in range(3):
        answer = await client.post(
            "/api/v1/contacts", json={"email": f"ann{i}@mail.example"}, headers=ws.headers
        )
        made.append((await ok(answer, 201))["contact"]["id"])
    for contact_id in made:
        await ok(await client.get(f"/api/v1/contacts/{contact_id}", headers=ws.headers))
    await client.get("/no/such/page")
    after, text = await scrape(client)

    created = {"route": "/api/v1/contacts", "method": "POST", "status": "201"}
    assert (
        value(after, "mailroom_http_requests_total", **created)
        - value(before, "mailroom_http_requests_total", **created)
        == 3
    )
    one = {"route": "/api/v1/contacts/{id}", "method": "GET", "status": "200"}
    assert (
        value(after, "mailroom_http_requests_total", **one)
        - value(before, "mailroom_http_requests_total", **one)
        == 3
    )
    timed = {"route": "/api/v1/contacts", "method": "POST"}
    assert (
        value(after, "mailroom_http_request_duration_seconds_count", **timed)
        - value(before, "mailroom_http_request_duration_seconds_count", **timed)
        == 3
    )
    assert value(after, "mailroom_http_request_duration_seconds_sum", **timed) > value(
        before, "mailroom_http_request_duration_seconds_sum", **timed
    )
    unmatched = {"route": "unmatched", "method": "GET", "status": "404"}
    assert value(after, "mailroom_http_requests_total", **unmatched) >= 1
    # No id, address or key is a label (nor anywhere in the exposition).
    for secret in (*made, "ann0@mail.example", ws.headers["x-api-key"], ws.workspace_id):
        assert secret not in text
    # The pooled connections were waited for and came back.
    assert total(after, "mailroom_db_connection_wait_seconds_count") > total(
        before, "mailroom_db_connection_wait_seconds_count"
    )
    assert all(v >= 0 for (n, _), v in after.items() if n == "mailroom_db_connections_in_use")


async def test_emails_dkim_smtp_and_the_send_queue_move_with_a_send(
    client,
    db,
    ws,
    sink,
    driver,
):
    await verified_domain(client, db, ws)
    await ok(
        await client.patch(
            "/api/v1/sending",
            json={"from_email": "hello@shop.example", "from_name": "Shop"},
            headers=ws.headers,
        )
    )
    addresses = [f"reader{i}@mail.example" for i in range(3)]
    await make_contacts(client, ws, addresses)
    before, _ = await scrape(client)
    for address in addresses:
        body = {"to": address, "subject": "Hello", "html_content": "<p>Hi</p>"}
        await ok(await client.post("/api/v1/send", json=body, headers=ws.headers), 202)
    queued, _ = await scrape(client)
    assert value(queued, "mailroom_queue_pending", queue="send") == 3
    assert value(queued, "mailroom_queue_due", queue="send") == 3
    assert value(queued, "mailroom_queue_oldest_due_seconds", queue="send") >= 0

    await driver.drain()
    assert len(sink.received) == 3
    after, _ = await scrape(client)
    sent = {"kind": "transactional", "outcome": "sent"}
    assert (
        value(after, "mailroom_emails_total", **sent)
        - value(before, "mailroom_emails_total", **sent)
        == 3
    )
    assert (
        value(after, "mailroom_dkim_signing_seconds_count")
        - value(before, "mailroom_dkim_signing_seconds_count")
        == 3
    )
    assert value(after, "mailroom_smtp_connections_total", result="opened") > value(
        before, "mailroom_smtp_connections_total", result="opened"
    )
    assert value(after, "mailroom_queue_pending", queue="send") == 0
    assert value(after, "mailroom_queue_oldest_due_seconds", queue="send") == 0


async def test_webhook_deliveries_by_outcome(client, db, factory, settings):
    settings.webhook_allow_networks = ["127.0.0.0/8"]
    settings.webhook_retry_delays = [0, 0, 0, 0]
    workspace = await factory.workspace(listen=False)
    async with Receiver() as receiver:
        for path in ("ok/a", "fail/b"):
            hook = {"url": receiver.url(path), "event_types": ["contact.created"]}
            await ok(
                await client.post("/api/v1/webhooks", json=hook, headers=workspace.headers), 201
            )
        before, _ = await scrape(client)
        await ok(
            await client.post(
                "/api/v1/contacts", json={"email": "x@mail.example"}, headers=workspace.headers
            ),
            201,
        )
        queued, _ = await scrape(client)
        assert value(queued, "mailroom_queue_pending", queue="webhooks") == 2
        hooks = HookDriver(db, settings)
        try:
            await hooks.drain(until=lambda: receiver.hits["/fail/b"] >= 1)
            await hooks.drain()
        finally:
            await hooks.close()
    after, _ = await scrape(client)
    moved = {
        outcome: value(after, "mailroom_webhook_deliveries_total", outcome=outcome)
        - value(before, "mailroom_webhook_deliveries_total", outcome=outcome)
        for outcome in ("delivered", "retry", "failed")
    }
    assert moved["delivered"] == 1
    assert moved["retry"] + moved["failed"] >= 1  # the failing endpoint's attempts


@pytest.mark.parametrize(
    ("peer", "headers", "status"),
    [
        (("127.0.0.1", 5000), {}, 200),
        (("127.8.9.10", 5000), {}, 200),
        (("::1", 5000, 0, 0), {}, 200),
        (("::ffff:127.0.0.1", 5000, 0, 0), {}, 200),  # a dual-stack bind's loopback client
        (("::ffff:203.0.113.9", 5000, 0, 0), {}, 403),
        (("127.0.0.1", 5000), {"X-Forwarded-Proto": "https"}, 403),
        (("203.0.113.9", 5000), {}, 403),
        (("127.0.0.1", 5000), {"X-Forwarded-For": "203.0.113.9"}, 403),
        (("127.0.0.1", 5000), {"Forwarded": "for=203.0.113.9"}, 403),
    ],
)
async def test_loopback_only_without_a_token(app, peer, headers, status):
    transport = httpx.ASGITransport(app=app, client=peer)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        answer = await client.get("/metrics", headers=headers)
    assert answer.status_code == status, answer.text
    if status == 403:
        assert answer.json() == {
            "error": "Metrics are served to loopback clients only; set MAILROOM_METRICS_TOKEN "
            "to scrape from elsewhere"
        }


@pytest.mark.parametrize(
    ("peer", "authorization", "status"),
    [
        (("203.0.113.9", 5000), "Bearer s3cret-token", 200),
        (("127.0.0.1", 5000), "Bearer s3cret-token", 200),
        (("127.0.0.1", 5000), None, 401),
        (("127.0.0.1", 5000), "Bearer wrong", 401),
        (("203.0.113.9", 5000), "Basic czNjcmV0LXRva2Vu", 401),
    ],
)
async def test_a_token_is_needed_from_everywhere_once_set(
    app: Any, settings: Any, peer: Any, authorization: str | None, status: int
):
    settings.metrics_token = "s3cret-token"
    transport = httpx.ASGITransport(app=app, client=peer)
    headers = {"Authorization": authorization} if authorization else {}
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        answer = await client.get("/metrics", headers=headers)
    assert answer.status_code == status, answer.text
    if status == 401:
        assert answer.json() == {
            "error": "Metrics need Authorization: Bearer <MAILROOM_METRICS_TOKEN>"
        }
        assert answer.headers["www-authenticate"] == "Bearer"
    else:
        assert "mailroom_queue_pending" in answer.text


async def test_a_scrape_while_the_database_is_down_still_answers(client, db, monkeypatch):
    async def down(_db):
        raise OSError("connection refused")

    monkeypatch.setattr("mailroom.system.metrics.read_figures", down)
    samples, text = await scrape(client)
    assert value(samples, "mailroom_database_up") == 0
    assert "mailroom_http_requests_total" in text  # the processes' own figures
    assert "mailroom_queue_pending" not in text
    monkeypatch.undo()
    samples, _ = await scrape(client)
    assert value(samples, "mailroom_database_up") == 1
