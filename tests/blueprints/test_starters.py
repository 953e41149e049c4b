"""The starter blueprints Mailroom ships: listed with the account's own, applied like any."""

from __future__ import annotations

from typing import Any

import pytest


async def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


async def test_starters_are_listed_first_and_paged(client: Any, ws: Any) -> None:
    made = await ok(
        await client.post(
            "/api/v1/blueprints", headers=ws.headers, json={"name": "Mine", "include": ["tags"]}
        ),
        201,
    )
    first = await ok(await client.get("/api/v1/blueprints?limit=2", headers=ws.headers))
    assert [(b["id"], b["starter"]) for b in first["blueprints"]] == [
        ("starter-newsletter", True),
        ("starter-shop", True),
    ]
    assert first["pagination"]["total"] == 3
    second = await ok(await client.get("/api/v1/blueprints?limit=2&page=2", headers=ws.headers))
    assert [(b["id"], b["starter"]) for b in second["blueprints"]] == [
        (made["blueprint"]["id"], False)
    ]


@pytest.mark.parametrize("starter", ["starter-newsletter", "starter-shop"])
async def test_a_starter_applies_to_an_empty_workspace(
    client: Any, factory: Any, starter: str
) -> None:
    ws = await factory.workspace(listen=False)
    shown = await ok(await client.get(f"/api/v1/blueprints/{starter}", headers=ws.headers))
    assert shown["blueprint"]["starter"] is True
    assert {"custom_fields", "lists", "templates", "automations", "forms"} <= set(
        shown["blueprint"]["parts"]
    )
    applied = await ok(
        await client.post(
            f"/api/v1/blueprints/{starter}/apply", headers=ws.headers, json={"dry_run": False}
        )
    )
    assert {r["action"] for r in applied["plan"]} == {"create"}
    lists = await ok(await client.get("/api/v1/lists", headers=ws.headers))
    assert [(li["name"], li["double_opt_in"]) for li in lists["lists"]] == [("Newsletter", True)]
    forms = await ok(await client.get("/api/v1/forms", headers=ws.headers))
    assert forms["forms"][0]["list_ids"] == [lists["lists"][0]["id"]]
    automations = await ok(await client.get("/api/v1/automations", headers=ws.headers))
    [welcome] = automations["automations"]
    assert welcome["status"] == "paused"
    assert welcome["trigger"] == {"type": "list_joined", "list_id": lists["lists"][0]["id"]}
    segments = await ok(await client.get("/api/v1/segments", headers=ws.headers))
    expected = 4 if starter == "starter-shop" else 0
    assert len(segments["segments"]) == expected
    again = await ok(
        await client.post(
            f"/api/v1/blueprints/{starter}/apply", headers=ws.headers, json={"dry_run": False}
        )
    )
    assert {r["action"] for r in again["plan"]} == {"unchanged"}


async def test_starters_cannot_be_changed(client: Any, ws: Any) -> None:
    message = {"error": "Starter blueprints cannot be changed: capture or import your own"}
    renamed = await client.patch(
        "/api/v1/blueprints/starter-shop", headers=ws.headers, json={"name": "x"}
    )
    assert (renamed.status_code, renamed.json()) == (400, message)
    removed = await client.delete("/api/v1/blueprints/starter-shop", headers=ws.headers)
    assert (removed.status_code, removed.json()) == (400, message)
    document = await ok(
        await client.get("/api/v1/blueprints/starter-newsletter/document", headers=ws.headers)
    )
    assert document["mailroom_blueprint"] == 1 and document["name"] == "Newsletter"
