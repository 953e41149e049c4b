"""The webhooks part: endpoints by URL with filters by name, never a secret; the apply checks
URLs with the guard, answers each new endpoint's secret once and keeps the plan's cap."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def allow_loopback(settings: Any) -> Any:
    settings.webhook_allow_networks = ["127.0.0.0/8"]
    return settings


async def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


async def test_webhook_endpoints_round_trip(client: Any, factory: Any, allow_loopback: Any) -> None:
    source = await factory.workspace(listen=False)
    news = await ok(
        await client.post("/api/v1/lists", headers=source.headers, json={"name": "News"}), 201
    )
    hook = {
        "url": "http://127.0.0.1:9/hooks/crm",
        "event_types": ["contact.created", "contact.list_joined"],
        "filters": {"list_ids": [news["list"]["id"]]},
        "description": "CRM sync",
    }
    made = await ok(await client.post("/api/v1/webhooks", headers=source.headers, json=hook), 201)
    blueprint = await ok(
        await client.post(
            "/api/v1/blueprints",
            headers=source.headers,
            json={"name": "Hooks", "include": ["lists", "webhooks"]},
        ),
        201,
    )
    bp_id = blueprint["blueprint"]["id"]
    document = await ok(
        await client.get(f"/api/v1/blueprints/{bp_id}/document", headers=source.headers)
    )
    [endpoint] = document["parts"]["webhooks"]
    assert endpoint["filters"] == {"list_ids": ["News"]}
    assert "secret" not in endpoint and made["secret"] not in str(document)

    target = await factory.workspace(account_id=source.account_id, listen=False)
    applied = await ok(
        await client.post(
            f"/api/v1/blueprints/{bp_id}/apply", headers=target.headers, json={"dry_run": False}
        )
    )
    [secret] = applied["secrets"]
    assert secret["name"] == "http://127.0.0.1:9/hooks/crm" and secret["secret"]
    listed = await ok(await client.get("/api/v1/webhooks", headers=target.headers))
    [created] = listed["webhooks"]
    lists = await ok(await client.get("/api/v1/lists", headers=target.headers))
    assert created["filters"] == {"list_ids": [lists["lists"][0]["id"]]}
    again = await ok(
        await client.post(
            f"/api/v1/blueprints/{bp_id}/apply", headers=target.headers, json={"dry_run": False}
        )
    )
    assert {r["action"] for r in again["plan"]} == {"unchanged"} and "secrets" not in again


async def test_a_url_the_guard_refuses_is_400_naming_it(client: Any, factory: Any) -> None:
    ws = await factory.workspace(listen=False)
    doc = {
        "mailroom_blueprint": 1,
        "name": "Private hook",
        "parts": {
            "webhooks": [{"url": "https://10.1.2.3/hook", "event_types": ["contact.created"]}]
        },
    }
    made = await ok(
        await client.post("/api/v1/blueprints/import", headers=ws.headers, json=doc), 201
    )
    refused = await client.post(
        f"/api/v1/blueprints/{made['blueprint']['id']}/apply",
        headers=ws.headers,
        json={"dry_run": False},
    )
    assert refused.status_code == 400
    assert refused.json()["error"].startswith("webhooks[0].url is not allowed: ")
    assert (await ok(await client.get("/api/v1/webhooks", headers=ws.headers)))["webhooks"] == []


async def test_the_plans_endpoint_cap_refuses_and_changes_nothing(
    client: Any, factory: Any, allow_loopback: Any
) -> None:
    free = await factory.workspace("free", listen=False)
    doc = {
        "mailroom_blueprint": 1,
        "name": "Two hooks",
        "parts": {
            "tags": [{"name": "VIP"}],
            "webhooks": [
                {"url": f"http://127.0.0.1:9/hook/{i}", "event_types": ["contact.created"]}
                for i in range(2)
            ],
        },
    }
    made = await ok(
        await client.post("/api/v1/blueprints/import", headers=free.headers, json=doc), 201
    )
    refused = await client.post(
        f"/api/v1/blueprints/{made['blueprint']['id']}/apply",
        headers=free.headers,
        json={"dry_run": False},
    )
    assert (refused.status_code, refused.json()) == (
        403,
        {"error": "Webhook endpoint limit reached (1 on the Free plan). Upgrade to add more."},
    )
    assert (await ok(await client.get("/api/v1/webhooks", headers=free.headers)))["webhooks"] == []
    assert (await ok(await client.get("/api/v1/tags", headers=free.headers)))["tags"] == []


async def test_an_endpoint_scoped_to_deleted_objects_only_is_left_out(
    client: Any, factory: Any, allow_loopback: Any
) -> None:
    """Its filter matches nothing now: carried without it, it would receive every event."""
    ws = await factory.workspace(listen=False)
    h = ws.headers
    keep = await ok(await client.post("/api/v1/lists", headers=h, json={"name": "Keep"}), 201)
    gone = await ok(await client.post("/api/v1/lists", headers=h, json={"name": "Gone"}), 201)
    events = ["contact.list_joined"]
    for path, ids in (("kept", [keep, gone]), ("dead", [gone])):
        hook = {
            "url": f"http://127.0.0.1:9/{path}",
            "event_types": events,
            "filters": {"list_ids": [i["list"]["id"] for i in ids]},
        }
        await ok(await client.post("/api/v1/webhooks", headers=h, json=hook), 201)
    await ok(await client.delete(f"/api/v1/lists/{gone['list']['id']}", headers=h))
    made = await ok(
        await client.post(
            "/api/v1/blueprints", headers=h, json={"name": "B", "include": ["lists", "webhooks"]}
        ),
        201,
    )
    doc = await ok(
        await client.get(f"/api/v1/blueprints/{made['blueprint']['id']}/document", headers=h)
    )
    assert doc["parts"]["webhooks"] == [
        {
            "url": "http://127.0.0.1:9/kept",
            "description": "",
            "event_types": events,
            "filters": {"list_ids": ["Keep"]},
            "enabled": True,
            "channel": "server",
        }
    ]


async def test_two_endpoints_of_one_url_capture_the_oldest_and_the_document_imports(
    client: Any, factory: Any, allow_loopback: Any
) -> None:
    ws = await factory.workspace(listen=False)
    h = ws.headers
    for events in (["contact.created"], ["contact.deleted"]):
        hook = {"url": "http://127.0.0.1:9/same", "event_types": events}
        await ok(await client.post("/api/v1/webhooks", headers=h, json=hook), 201)
    made = await ok(
        await client.post(
            "/api/v1/blueprints", headers=h, json={"name": "B", "include": ["webhooks"]}
        ),
        201,
    )
    doc = await ok(
        await client.get(f"/api/v1/blueprints/{made['blueprint']['id']}/document", headers=h)
    )
    assert [(e["url"], e["event_types"]) for e in doc["parts"]["webhooks"]] == [
        ("http://127.0.0.1:9/same", ["contact.created"])
    ]
    # What a capture makes, an import takes back.
    await ok(await client.post("/api/v1/blueprints/import", headers=h, json=doc), 201)


async def test_an_update_is_not_refused_for_a_url_the_guard_now_refuses(
    client: Any, factory: Any, settings: Any
) -> None:
    """An update keeps the endpoint's URL (it never writes it): only creating is guarded."""
    settings.webhook_allow_networks = ["127.0.0.0/8"]
    ws = await factory.workspace(listen=False)
    h = ws.headers
    url = "http://127.0.0.1:9/crm"
    hook = {"url": url, "event_types": ["contact.created"]}
    await ok(await client.post("/api/v1/webhooks", headers=h, json=hook), 201)
    doc = {
        "mailroom_blueprint": 1,
        "name": "Hooks",
        "parts": {
            "webhooks": [{"url": url, "event_types": ["contact.created", "contact.deleted"]}]
        },
    }
    made = await ok(await client.post("/api/v1/blueprints/import", headers=h, json=doc), 201)
    settings.webhook_allow_networks = []  # 127.0.0.1 is refused from now on
    applied = await ok(
        await client.post(
            f"/api/v1/blueprints/{made['blueprint']['id']}/apply",
            headers=h,
            json={"dry_run": False, "on_conflict": "update"},
        )
    )
    assert [(r["name"], r["action"]) for r in applied["plan"]] == [(url, "update")]
    [endpoint] = (await ok(await client.get("/api/v1/webhooks", headers=h)))["webhooks"]
    assert endpoint["event_types"] == ["contact.created", "contact.deleted"]


async def test_the_plan_sees_a_targets_endpoint_scoped_to_deleted_objects(
    client: Any, factory: Any, allow_loopback: Any
) -> None:
    """Not a `create` beside it (two endpoints of one URL): other content, skipped or updated;
    with two of one URL, the oldest is the one compared and written, so a second apply is
    all unchanged."""
    ws = await factory.workspace(listen=False)
    h = ws.headers
    url = "http://127.0.0.1:9/crm"
    gone = await ok(await client.post("/api/v1/lists", headers=h, json={"name": "Gone"}), 201)
    dead = {
        "url": url,
        "event_types": ["contact.created"],
        "filters": {"list_ids": [gone["list"]["id"]]},
    }
    await ok(await client.post("/api/v1/webhooks", headers=h, json=dead), 201)
    await ok(await client.delete(f"/api/v1/lists/{gone['list']['id']}", headers=h))
    doc = {
        "mailroom_blueprint": 1,
        "name": "Hooks",
        "parts": {"webhooks": [{"url": url, "event_types": ["contact.created"], "filters": {}}]},
    }
    made = await ok(await client.post("/api/v1/blueprints/import", headers=h, json=doc), 201)
    apply_url = f"/api/v1/blueprints/{made['blueprint']['id']}/apply"
    skipped = await ok(await client.post(apply_url, headers=h, json={"dry_run": False}))
    assert [(r["name"], r["action"]) for r in skipped["plan"]] == [(url, "skip")]
    assert len((await ok(await client.get("/api/v1/webhooks", headers=h)))["webhooks"]) == 1

    # A newer endpoint of the same URL, live: the oldest is still the one compared.
    newer = {"url": url, "event_types": ["contact.deleted"]}
    await ok(await client.post("/api/v1/webhooks", headers=h, json=newer), 201)
    body = {"dry_run": False, "on_conflict": "update"}
    updated = await ok(await client.post(apply_url, headers=h, json=body))
    assert [(r["name"], r["action"]) for r in updated["plan"]] == [(url, "update")]
    again = await ok(await client.post(apply_url, headers=h, json=body))
    assert [(r["name"], r["action"]) for r in again["plan"]] == [(url, "unchanged")]
    hooks = (await ok(await client.get("/api/v1/webhooks", headers=h)))["webhooks"]
    assert sorted((w["event_types"], w["filters"]) for w in hooks) == [
        (["contact.created"], {}),
        (["contact.deleted"], {}),
    ]
