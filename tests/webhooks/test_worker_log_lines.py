"""The delivery worker's lines carry the request that caused the event: an operator who has a
client's request id finds what became of its webhooks. A delivered attempt is routine (DEBUG);
a retry is INFO, a final failure WARNING."""

from __future__ import annotations

import logging

from tests.log_capture import json_logs, lines
from tests.webhooks.helpers import create_hook, deliveries


async def test_a_retried_delivery_is_logged_with_the_request_that_caused_its_event(
    client, pro, receiver, driver
):
    hook = await create_hook(client, pro, receiver.url("flaky/a"), ["contact.created"])
    with json_logs() as captured:
        made = await client.post(
            "/api/v1/contacts",
            json={"email": "ann@mailtest.io"},
            headers={**pro.headers, "X-Request-ID": "req-hook-9"},
        )
        assert made.status_code == 201, made.text
        await driver.drain()
    [delivery] = (await deliveries(client, pro, hook["id"]))["deliveries"]
    assert (delivery["status"], delivery["attempts"]) == ("delivered", 2)
    worker_lines = [line for line in lines(captured) if line["logger"] == "mailroom.webhooks"]
    assert [(line["level"], line["message"], line.get("request_id")) for line in worker_lines] == [
        (
            "info",
            f"webhook delivery {delivery['id']} (contact.created) to endpoint {hook['id']}, "
            "attempt 1: retry (500)",
            "req-hook-9",
        )
    ]


async def test_a_failed_delivery_is_a_warning_and_a_delivered_one_debug(
    client, pro, receiver, driver
):
    failing = await create_hook(client, pro, receiver.url("fail/b"), ["contact.created"])
    fine = await create_hook(client, pro, receiver.url("ok/c"), ["contact.created"])
    with json_logs(logging.DEBUG) as captured:
        made = await client.post(
            "/api/v1/contacts",
            json={"email": "bo@mailtest.io"},
            headers={**pro.headers, "X-Request-ID": "req-hook-10"},
        )
        assert made.status_code == 201, made.text
        await driver.drain()
    worker_lines = [line for line in lines(captured) if line["logger"] == "mailroom.webhooks"]
    assert {line["request_id"] for line in worker_lines} == {"req-hook-10"}
    levels = [(line["level"], line["message"].rsplit(": ", 1)[1]) for line in worker_lines]
    [done] = (await deliveries(client, pro, fine["id"]))["deliveries"]
    [failed] = (await deliveries(client, pro, failing["id"]))["deliveries"]
    assert failed["status"] == "failed"
    assert ("debug", "delivered") in levels
    assert levels.count(("warning", "failed (500)")) == 1
    assert levels.count(("info", "retry (500)")) == failed["attempts"] - 1
    assert any(done["id"] in line["message"] for line in worker_lines)
