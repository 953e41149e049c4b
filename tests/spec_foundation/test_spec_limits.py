"""Spec, Limits: plan numbers and the hourly write throughput, through real routes."""

from __future__ import annotations

import re

import pytest

from tests.spec_foundation.helpers import ZERO_ID, error_of

PLAN_TABLE = {
    # plan: (writes/hour, contacts, emails/month, live automations, webhook endpoints)
    "free": (120, 500, 2_000, 1, 1),
    "starter": (600, 2_500, 15_000, 5, 5),
    "pro": (None, 10_000, 60_000, None, None),
    "business": (None, 50_000, 250_000, None, None),
}


@pytest.mark.parametrize("plan", list(PLAN_TABLE))
async def test_every_number_of_the_limits_table(client, factory, plan):
    workspace = await factory.workspace(plan, listen=False)
    body = (await client.get("/api/v1/account", headers=workspace.headers)).json()["plan"]
    writes, contacts, emails, automations, webhooks = PLAN_TABLE[plan]
    assert body["name"] == plan
    assert body["writes_per_hour"] == writes
    assert body["contacts"] == contacts
    assert body["emails_per_month"] == emails
    assert body["live_automations"] == automations
    assert body["webhook_endpoints"] == webhooks


async def _mixed_write(client, headers, i: int):
    """Writes of every verb, successful or not: all count (spec: all writes with a key)."""
    kind = i % 4
    if kind == 0:
        return await client.post("/api/v1/tags", json={"name": f"t{i}"}, headers=headers)
    if kind == 1:
        return await client.delete(f"/api/v1/contacts/{ZERO_ID}", headers=headers)
    if kind == 2:
        return await client.patch(
            f"/api/v1/contacts/{ZERO_ID}", json={"first_name": "x"}, headers=headers
        )
    return await client.post(
        "/api/v1/suppressions", json={"entries": [f"s{i}@shop.io"]}, headers=headers
    )


def _assert_throttled(response) -> int:
    assert response.status_code == 429, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert set(response.json()) == {"error"}
    error_of(response)
    value = response.headers.get("retry-after", "")
    assert re.fullmatch(r"\d+", value), value  # whole seconds
    seconds = int(value)
    assert 1 <= seconds <= 3600
    return seconds


async def test_free_plan_allows_120_writes_then_429_while_reads_go_on(client, factory):
    free = await factory.workspace("free", listen=False)
    # Reads first: never counted.
    for _ in range(130):
        assert (await client.get("/api/v1/contacts", headers=free.headers)).status_code == 200
    codes = [(await _mixed_write(client, free.headers, i)).status_code for i in range(120)]
    assert 429 not in codes, codes
    assert set(codes) <= {200, 201, 404}, codes

    refused = await client.post(
        "/api/v1/contacts", json={"email": "late@shop.io"}, headers=free.headers
    )
    _assert_throttled(refused)
    for method, path, body in (
        ("PATCH", f"/api/v1/contacts/{ZERO_ID}", {"first_name": "y"}),
        ("DELETE", f"/api/v1/contacts/{ZERO_ID}", None),
        ("POST", "/api/v1/suppressions", {"entries": ["late2@shop.io"]}),
        ("POST", "/api/v1/suppressions/lift", {"email": "s3@shop.io"}),
    ):
        kwargs = {"json": body} if body is not None else {}
        _assert_throttled(await client.request(method, path, headers=free.headers, **kwargs))

    # The refused writes did nothing; reads still answer.
    listing = await client.get("/api/v1/contacts", headers=free.headers)
    assert listing.status_code == 200
    assert listing.json()["pagination"]["total"] == 0
    check = await client.get(
        "/api/v1/suppressions", params={"email": "late2@shop.io"}, headers=free.headers
    )
    assert check.status_code == 200
    assert check.json()["suppressed"] is False
    summary = await client.get("/api/v1/suppressions", headers=free.headers)
    assert summary.json()["count"] == 30
    for path in ("/api/v1/tags", "/api/v1/suppressions/list", "/api/v1/account/audit-log"):
        assert (await client.get(path, headers=free.headers)).status_code == 200


async def test_the_write_limit_is_per_workspace_not_per_key_or_account(client, factory, ws):
    free = await factory.workspace("free", listen=False)
    sibling = await factory.workspace(account_id=free.account_id, listen=False)
    second_key = await factory.key(free, "all")
    for i in range(120):
        response = await client.delete(f"/api/v1/contacts/{ZERO_ID}", headers=free.headers)
        assert response.status_code == 404, (i, response.text)
    _assert_throttled(await client.delete(f"/api/v1/contacts/{ZERO_ID}", headers=second_key))
    # Another workspace of the same account has its own allowance.
    created = await client.post(
        "/api/v1/contacts", json={"email": "ok@shop.io"}, headers=sibling.headers
    )
    assert created.status_code == 201, created.text
    assert (await client.get("/api/v1/contacts", headers=second_key)).status_code == 200


async def test_starter_plan_allows_600_writes(client, factory):
    starter = await factory.workspace("starter", listen=False)
    for i in range(600):
        response = await client.delete(f"/api/v1/contacts/{ZERO_ID}", headers=starter.headers)
        assert response.status_code == 404, (i, response.text)
    _assert_throttled(await client.delete(f"/api/v1/contacts/{ZERO_ID}", headers=starter.headers))
    assert (await client.get("/api/v1/contacts", headers=starter.headers)).status_code == 200


@pytest.mark.parametrize("plan", ["pro", "business"])
async def test_pro_and_business_writes_are_unlimited(client, factory, plan):
    workspace = await factory.workspace(plan, listen=False)
    for i in range(250):
        response = await client.delete(f"/api/v1/contacts/{ZERO_ID}", headers=workspace.headers)
        assert response.status_code == 404, (i, response.text)


async def test_throttled_message_names_the_limit(client, factory):
    free = await factory.workspace("free", listen=False)
    for _ in range(120):
        await client.delete(f"/api/v1/contacts/{ZERO_ID}", headers=free.headers)
    response = await client.delete(f"/api/v1/contacts/{ZERO_ID}", headers=free.headers)
    seconds = _assert_throttled(response)
    assert "120" in error_of(response)
    # A second refusal does not push the wait further out.
    again = await client.delete(f"/api/v1/contacts/{ZERO_ID}", headers=free.headers)
    assert _assert_throttled(again) <= seconds
