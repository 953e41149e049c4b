"""A one-off send's outcome is logged by the worker with the request that queued it, so an
operator who has a request id finds what became of the message; addresses are masked."""

from __future__ import annotations

from tests.log_capture import json_logs, lines
from tests.sending.conftest import verified_domain
from tests.sending.helpers import make_campaign, make_contacts, make_list, ok, send_campaign


async def test_a_transactional_sends_outcome_line_carries_its_request(client, db, ws, sink, driver):
    await verified_domain(client, db, ws)
    await ok(
        await client.patch(
            "/api/v1/sending", json={"from_email": "news@shop.example"}, headers=ws.headers
        )
    )
    await make_contacts(client, ws, ["jane@mailtest.io"])
    with json_logs() as captured:
        answer = await client.post(
            "/api/v1/send",
            json={"to": "jane@mailtest.io", "subject": "Hi", "text_content": "Hello"},
            headers={**ws.headers, "X-Request-ID": "req-send-42"},
        )
        message_id = (await ok(answer, 202))["message"]["id"]
        await driver.drain()
    assert len(sink.received) == 1
    [line] = [line for line in lines(captured) if line["logger"] == "mailroom.sending"]
    assert line["level"] == "info"
    assert line["request_id"] == "req-send-42"
    assert line["workspace_id"] == ws.workspace_id
    assert line["message"].startswith(f"transactional message {message_id} to j")
    assert ": sent (250" in line["message"]
    assert "jane@mailtest.io" not in line["message"]  # masked


async def test_campaign_sends_are_not_logged_one_line_each_at_info(client, db, ws, sink, driver):
    await verified_domain(client, db, ws)
    list_id = await make_list(client, ws)
    await make_contacts(client, ws, ["a@mailtest.io", "b@mailtest.io"], list_id=list_id)
    campaign = await make_campaign(client, ws, list_id)
    with json_logs() as captured:
        await send_campaign(client, ws, campaign["id"])
        await driver.drain()
    assert len(sink.received) == 2
    assert [line for line in lines(captured) if line["logger"] == "mailroom.sending"] == []
