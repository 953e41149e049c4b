"""Webhook management routes: registration rules, secrets, health, plan limits, 404s."""

from __future__ import annotations

import uuid

import pytest

from tests.webhooks.helpers import (
    create_hook,
    create_list,
    create_tag,
    hook_by_id,
    hook_list,
)

pytestmark = pytest.mark.usefixtures("resolver")

CREATE_KEYS = {"id", "url", "description", "event_types", "enabled", "secret", "created_at"}
PUBLIC_URL = "https://hooks.example.com/mailroom"


async def test_create_returns_201_with_secret(client, pro):
    response = await client.post(
        "/api/v1/webhooks",
        json={
            "url": PUBLIC_URL,
            "description": "CRM sync",
            "event_types": ["contact.created", "contact.deleted"],
        },
        headers=pro.headers,
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert set(body) >= CREATE_KEYS
    assert body["url"] == PUBLIC_URL
    assert body["description"] == "CRM sync"
    assert body["event_types"] == ["contact.created", "contact.deleted"]
    assert body["enabled"] is True
    assert isinstance(body["secret"], str) and len(body["secret"]) >= 16
    uuid.UUID(body["id"])


async def test_list_has_health_and_never_secrets(client, pro):
    created = await create_hook(client, pro, PUBLIC_URL, ["contact.created"])
    listed = await hook_list(client, pro)
    assert [h["id"] for h in listed] == [created["id"]]
    hook = listed[0]
    assert "secret" not in hook
    assert created["secret"] not in str(hook)
    assert hook["url"] == PUBLIC_URL and hook["enabled"] is True
    assert hook["event_types"] == ["contact.created"]
    health = hook["health"]
    assert health["consecutive_failures"] == 0
    assert health["last_success_at"] is None
    assert health["last_failure_at"] is None
    assert health["disabled_reason"] is None


async def test_patch_changes_fields_and_never_returns_secret(client, pro):
    created = await create_hook(client, pro, PUBLIC_URL, ["contact.created"])
    response = await client.patch(
        f"/api/v1/webhooks/{created['id']}",
        json={
            "url": "https://other.example.com/in",
            "description": "new",
            "event_types": ["contact.updated", "contact.deleted"],
        },
        headers=pro.headers,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert "secret" not in body and created["secret"] not in response.text
    assert body["url"] == "https://other.example.com/in"
    assert body["description"] == "new"
    assert body["event_types"] == ["contact.updated", "contact.deleted"]
    listed = await hook_by_id(client, pro, created["id"])
    assert listed["url"] == "https://other.example.com/in"


async def test_patch_url_is_checked_like_registration(client, pro, hook_settings):
    hook_settings.webhook_allow_networks = []
    created = await create_hook(client, pro, PUBLIC_URL, ["contact.created"])
    for url in (
        "http://hooks.example.com/x",
        "https://10.0.0.1/x",
        "https://u:p@x.example.com/",
        "http://127.0.0.1:1/x",
        "https://metadata.internal/x",
    ):
        response = await client.patch(
            f"/api/v1/webhooks/{created['id']}", json={"url": url}, headers=pro.headers
        )
        assert response.status_code == 400, (url, response.text)
    assert (await hook_by_id(client, pro, created["id"]))["url"] == PUBLIC_URL


async def test_patch_validates_events_and_filters(client, pro):
    created = await create_hook(client, pro, PUBLIC_URL, ["contact.created"])
    path = f"/api/v1/webhooks/{created['id']}"
    for body in (
        {"event_types": []},
        {"event_types": ["contact.exploded"]},
        {"filters": {"list_ids": [str(uuid.uuid4())]}},
        {"enabled": "yes"},
    ):
        response = await client.patch(path, json=body, headers=pro.headers)
        assert response.status_code == 400, (body, response.text)
        assert isinstance(response.json()["error"], str)


async def test_rotate_secret_returns_a_new_secret(client, pro):
    created = await create_hook(client, pro, PUBLIC_URL, ["contact.created"])
    response = await client.post(
        f"/api/v1/webhooks/{created['id']}/rotate-secret", headers=pro.headers
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["id"] == created["id"]
    assert isinstance(body["secret"], str) and body["secret"] != created["secret"]
    listed = await hook_by_id(client, pro, created["id"])
    assert "secret" not in listed


async def test_delete_removes_endpoint(client, pro):
    created = await create_hook(client, pro, PUBLIC_URL, ["contact.created"])
    response = await client.delete(f"/api/v1/webhooks/{created['id']}", headers=pro.headers)
    assert response.status_code == 200, response.text
    assert await hook_list(client, pro) == []
    again = await client.delete(f"/api/v1/webhooks/{created['id']}", headers=pro.headers)
    assert again.status_code == 404


# --- registration refusals -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://hooks.example.com/x", "plain http to a public host"),
        ("https://user:pass@hooks.example.com/x", "credentials"),
        ("https://user@hooks.example.com/x", "user name"),
        ("https://:secret@hooks.example.com/x", "password only"),
        ("ftp://hooks.example.com/x", "not http(s)"),
        ("not a url", "garbage"),
        ("", "empty"),
    ],
)
async def test_create_refuses_bad_urls(client, pro, hook_settings, url, why):
    hook_settings.webhook_allow_networks = []
    response = await client.post(
        "/api/v1/webhooks",
        json={"url": url, "event_types": ["contact.created"]},
        headers=pro.headers,
    )
    assert response.status_code == 400, (why, response.text)
    assert isinstance(response.json()["error"], str)
    assert await hook_list(client, pro) == []


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/x",
        "https://10.1.2.3/x",
        "https://192.168.0.10/x",
        "https://172.16.5.4/x",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/x",
        "https://[fe80::1]/x",
        "https://[fd00::1]/x",
        "https://[::ffff:127.0.0.1]/x",
        "https://0.0.0.0/x",
        "https://localhost/x",
        "https://db.internal/x",
        "https://printer.local/x",
        "https://2130706433/x",
        "https://0177.0.0.1/x",
        "https://0x7f.0.0.1/x",
        "https://127.1/x",
        "https://[2002:7f00:1::]/x",
        "https://[64:ff9b::7f00:1]/x",
    ],
)
async def test_create_refuses_non_public_targets(client, pro, hook_settings, url):
    hook_settings.webhook_allow_networks = []
    response = await client.post(
        "/api/v1/webhooks",
        json={"url": url, "event_types": ["contact.created"]},
        headers=pro.headers,
    )
    assert response.status_code == 400, (url, response.text)
    assert await hook_list(client, pro) == []


@pytest.mark.parametrize(
    "answer", [["10.0.0.7"], ["127.0.0.1"], ["93.184.216.34", "192.168.1.1"], ["::1"]]
)
async def test_create_refuses_names_resolving_to_private(
    client, pro, hook_settings, resolver, answer
):
    hook_settings.webhook_allow_networks = []
    resolver.set("sneaky.example.com", *answer)
    response = await client.post(
        "/api/v1/webhooks",
        json={"url": "https://sneaky.example.com/x", "event_types": ["contact.created"]},
        headers=pro.headers,
    )
    assert response.status_code == 400, response.text


@pytest.mark.parametrize(
    ("event_types", "why"),
    [
        (["contact.exploded"], "unknown"),
        (["contact.created", "nope"], "one unknown"),
        ([], "empty"),
        (None, "missing"),
        ("contact.created", "not an array"),
        ([1], "not strings"),
    ],
)
async def test_create_refuses_bad_event_types(client, pro, event_types, why):
    body = {"url": PUBLIC_URL}
    if event_types is not None:
        body["event_types"] = event_types
    response = await client.post("/api/v1/webhooks", json=body, headers=pro.headers)
    assert response.status_code == 400, (why, response.text)
    assert await hook_list(client, pro) == []


async def test_every_catalog_event_can_be_subscribed(client, pro):
    from tests.webhooks.test_delivery import ALL_EVENTS

    hook = await create_hook(client, pro, PUBLIC_URL, list(ALL_EVENTS))
    assert sorted(hook["event_types"]) == sorted(ALL_EVENTS)


async def test_filters_with_own_ids_are_accepted(client, pro):
    newsletter = await create_list(client, pro, "Newsletter")
    vip = await create_tag(client, pro, "vip")
    hook = await create_hook(
        client,
        pro,
        PUBLIC_URL,
        ["contact.list_joined", "contact.tag_added"],
        filters={"list_ids": [newsletter["id"]], "tag_ids": [vip["id"]]},
    )
    assert hook["filters"] == {"list_ids": [newsletter["id"]], "tag_ids": [vip["id"]]}


async def test_filters_with_foreign_ids_are_400(client, pro, factory):
    other = await factory.workspace("pro", listen=False)
    foreign_list = await create_list(client, other, "Theirs")
    foreign_tag = await create_tag(client, other, "theirs")
    own = await create_list(client, pro, "Ours")
    for filters in (
        {"list_ids": [foreign_list["id"]]},
        {"list_ids": [own["id"], foreign_list["id"]]},
        {"tag_ids": [foreign_tag["id"]]},
    ):
        response = await client.post(
            "/api/v1/webhooks",
            json={"url": PUBLIC_URL, "event_types": ["contact.list_joined"], "filters": filters},
            headers=pro.headers,
        )
        assert response.status_code == 400, (filters, response.text)
    assert await hook_list(client, pro) == []


@pytest.mark.parametrize("key", ["list_ids", "form_ids", "tag_ids", "campaign_ids", "domain_ids"])
async def test_filters_with_unknown_ids_are_400(client, pro, key):
    response = await client.post(
        "/api/v1/webhooks",
        json={
            "url": PUBLIC_URL,
            "event_types": ["contact.created"],
            "filters": {key: [str(uuid.uuid4())]},
        },
        headers=pro.headers,
    )
    assert response.status_code == 400, response.text


@pytest.mark.parametrize(
    "filters", [{"segment_ids": []}, {"list_ids": "abc"}, ["list_ids"], {"list_ids": [1]}]
)
async def test_malformed_filters_are_400(client, pro, filters):
    response = await client.post(
        "/api/v1/webhooks",
        json={"url": PUBLIC_URL, "event_types": ["contact.created"], "filters": filters},
        headers=pro.headers,
    )
    assert response.status_code == 400, response.text


async def test_empty_filters_mean_unscoped(client, pro):
    hook = await create_hook(client, pro, PUBLIC_URL, ["contact.created"], filters={})
    assert hook["filters"] in ({}, None)


async def test_filters_allow_100_ids_per_dimension_not_101(client, pro):
    ids = [(await create_list(client, pro, f"L{i:03d}"))["id"] for i in range(101)]
    too_many = await client.post(
        "/api/v1/webhooks",
        json={
            "url": PUBLIC_URL,
            "event_types": ["contact.list_joined"],
            "filters": {"list_ids": ids},
        },
        headers=pro.headers,
    )
    assert too_many.status_code == 400, too_many.text
    hook = await create_hook(
        client, pro, PUBLIC_URL, ["contact.list_joined"], filters={"list_ids": ids[:100]}
    )
    assert len(hook["filters"]["list_ids"]) == 100


# --- plan limits ---------------------------------------------------------------------------


@pytest.mark.parametrize(("plan", "allowed"), [("free", 1), ("starter", 5)])
async def test_plan_limits_endpoint_count(client, factory, plan, allowed):
    workspace = await factory.workspace(plan, listen=False)
    for i in range(allowed):
        await create_hook(client, workspace, f"https://h{i}.example.com/x", ["contact.created"])
    response = await client.post(
        "/api/v1/webhooks",
        json={"url": "https://over.example.com/x", "event_types": ["contact.created"]},
        headers=workspace.headers,
    )
    assert response.status_code == 403, response.text
    assert isinstance(response.json()["error"], str)
    assert len(await hook_list(client, workspace)) == allowed


async def test_deleting_frees_a_plan_slot(client, factory):
    workspace = await factory.workspace("free", listen=False)
    first = await create_hook(client, workspace, PUBLIC_URL, ["contact.created"])
    await client.delete(f"/api/v1/webhooks/{first['id']}", headers=workspace.headers)
    await create_hook(client, workspace, PUBLIC_URL, ["contact.created"])


async def test_pro_has_no_endpoint_limit(client, pro):
    for i in range(7):
        await create_hook(client, pro, f"https://h{i}.example.com/x", ["contact.created"])
    assert len(await hook_list(client, pro)) == 7


# --- ownership and permissions -------------------------------------------------------------


async def test_other_workspaces_endpoints_are_404(client, pro, factory):
    other = await factory.workspace("pro", listen=False)
    theirs = await create_hook(client, other, PUBLIC_URL, ["contact.created"])
    hook_id = theirs["id"]
    calls = [
        ("PATCH", f"/api/v1/webhooks/{hook_id}", {"description": "x"}),
        ("DELETE", f"/api/v1/webhooks/{hook_id}", None),
        ("POST", f"/api/v1/webhooks/{hook_id}/rotate-secret", None),
        ("GET", f"/api/v1/webhooks/{hook_id}/deliveries", None),
        ("POST", f"/api/v1/webhooks/{hook_id}/test", {"event": "contact.created"}),
    ]
    for method, path, body in calls:
        response = await client.request(method, path, json=body, headers=pro.headers)
        assert response.status_code == 404, (method, path, response.text)
    assert await hook_list(client, pro) == []
    assert len(await hook_list(client, other)) == 1


async def test_unknown_id_is_404(client, pro):
    missing = str(uuid.uuid4())
    response = await client.patch(
        f"/api/v1/webhooks/{missing}", json={"description": "x"}, headers=pro.headers
    )
    assert response.status_code == 404
    response = await client.get(f"/api/v1/webhooks/{missing}/deliveries", headers=pro.headers)
    assert response.status_code == 404


async def test_permissions(client, pro, factory):
    read_only = await factory.key(pro, ["webhooks:read"])
    nothing = await factory.key(pro, ["contacts:read"])
    assert (await client.get("/api/v1/webhooks", headers=read_only)).status_code == 200
    response = await client.post(
        "/api/v1/webhooks",
        json={"url": PUBLIC_URL, "event_types": ["contact.created"]},
        headers=read_only,
    )
    assert response.status_code == 403
    assert response.json()["error"] == "Forbidden: webhooks:write permission required"
    response = await client.get("/api/v1/webhooks", headers=nothing)
    assert response.status_code == 403
    assert response.json()["error"] == "Forbidden: webhooks:read permission required"
    assert (await client.get("/api/v1/webhooks")).status_code == 401


async def test_webhook_writes_count_toward_the_hourly_write_throughput(client, factory):
    free = await factory.workspace("free", listen=False)
    hook = await create_hook(client, free, PUBLIC_URL, ["contact.created"])  # write 1
    for i in range(119):
        response = await client.patch(
            f"/api/v1/webhooks/{hook['id']}", json={"description": f"d{i}"}, headers=free.headers
        )
        assert response.status_code == 200, (i, response.text)
    assert (await client.get("/api/v1/webhooks", headers=free.headers)).status_code == 200
    response = await client.delete(f"/api/v1/webhooks/{hook['id']}", headers=free.headers)
    assert response.status_code == 429, response.text
    assert response.headers.get("Retry-After")
    assert len(await hook_list(client, free)) == 1
