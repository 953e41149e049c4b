"""The workspace's assistants over the API: what is shown of each, who may list, read and
revoke them, workspaces kept apart, paging, and their calls in the audit log and the hourly
write limit."""

from __future__ import annotations

from datetime import datetime

from mailroom.core.auth import PERMISSIONS
from mailroom.people import service as people
from tests.assistants.oauth_steps import (
    bearer,
    browser_fixture,  # noqa: F401 (the `browser` fixture)
    connected,
)

ASSISTANTS = "/api/v1/assistants"
GRANTS = "/api/v1/assistants/grants"
EXCHANGE = "/api/v1/assistants/grants/exchange"
MANAGE_NEEDS_ALL = "Forbidden: managing assistants needs a key with every permission"


async def _exchanged(client, headers, name="Nightly agent", **body) -> dict:
    body.setdefault("permissions", ["contacts:read", "contacts:write"])
    created = await client.post(GRANTS, headers=headers, json={"name": name, **body})
    assert created.status_code == 201, created.text
    answer = await client.post(EXCHANGE, json={"grant": created.json()["grant"]["code"]})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


async def _audit(client, ws) -> list[dict]:
    answer = await client.get("/api/v1/account/audit-log", headers=ws.headers)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["entries"])


async def test_a_grant_assistant_as_shown(client, ws):
    tokens = await _exchanged(client, ws.headers, daily_recipient_budget=25)
    shown = await client.get(f"{ASSISTANTS}/{tokens['assistant_id']}", headers=ws.headers)
    assert shown.status_code == 200, shown.text
    body = shown.json()
    created_at = body.pop("created_at")
    assert datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    assert body == {
        "id": tokens["assistant_id"],
        "name": "Nightly agent",
        "kind": "grant",
        "permissions": ["contacts:read", "contacts:write"],
        "requires_approval": False,
        "daily_recipient_budget": 25,
        "client_name": None,
        "connected_by": {"type": "key", "id": ws.key_id, "email": None},
        "last_used_at": None,
    }
    assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 200
    # Recorded once the answer has gone: read it back as a client polling would.
    for _ in range(100):
        again = await client.get(f"{ASSISTANTS}/{tokens['assistant_id']}", headers=ws.headers)
        if again.json()["last_used_at"] is not None:
            break
    assert again.json()["last_used_at"] is not None


async def test_an_oauth_assistant_as_shown(client, ws, browser):
    tokens = await connected(client, browser, permissions=["contacts:read", "campaigns:send"])
    (shown,) = (await client.get(ASSISTANTS, headers=ws.headers)).json()["assistants"]
    assert shown["kind"] == "oauth"
    assert shown["name"] == "Desk Agent" and shown["client_name"] == "Desk Agent"
    assert shown["permissions"] == ["contacts:read", "campaigns:send"]
    assert tokens["scope"] == "contacts:read campaigns:send"
    assert shown["connected_by"]["type"] == "person"
    assert shown["connected_by"]["email"] == "ada@example.com"
    assert shown["connected_by"]["id"]


async def test_managing_assistants_needs_a_key_with_every_permission(client, ws, factory):
    tokens = await _exchanged(client, ws.headers)
    ident = tokens["assistant_id"]
    for missing in ("contacts:read", "audit:read"):
        almost = await factory.key(ws, [p for p in PERMISSIONS if p != missing])
        for method, path in (
            ("GET", ASSISTANTS),
            ("GET", f"{ASSISTANTS}/{ident}"),
            ("DELETE", f"{ASSISTANTS}/{ident}"),
        ):
            refused = await client.request(method, path, headers=almost)
            assert refused.status_code == 403, (method, path)
            assert refused.json() == {"error": MANAGE_NEEDS_ALL}
    assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 200
    assert (await client.get(f"{ASSISTANTS}/{ident}", headers=ws.headers)).status_code == 200


async def test_another_workspaces_assistant_is_not_found(client, ws, factory):
    other = await factory.workspace("pro")
    theirs = await _exchanged(client, other.headers)
    for method in ("GET", "DELETE"):
        answer = await client.request(
            method, f"{ASSISTANTS}/{theirs['assistant_id']}", headers=ws.headers
        )
        assert answer.status_code == 404
        assert answer.json() == {"error": "Assistant not found"}
    assert (await client.get(ASSISTANTS, headers=ws.headers)).json()["assistants"] == []
    assert (await client.get("/api/v1/contacts", headers=bearer(theirs))).status_code == 200


async def test_a_bearer_reaches_only_its_own_workspace(client, ws, factory):
    other = await factory.workspace("pro")
    made = await client.post(
        "/api/v1/contacts", headers=other.headers, json={"email": "theirs@example.com"}
    )
    assert made.status_code == 201, made.text
    theirs = made.json()["contact"]["id"]
    tokens = await _exchanged(client, ws.headers)
    assert (await client.get(f"/api/v1/contacts/{theirs}", headers=bearer(tokens))).status_code == (
        404
    )
    changed = await client.patch(
        f"/api/v1/contacts/{theirs}", headers=bearer(tokens), json={"first_name": "Mallory"}
    )
    assert changed.status_code == 404
    listed = await client.get("/api/v1/contacts", headers=bearer(tokens))
    assert listed.json()["contacts"] == []
    unchanged = await client.get(f"/api/v1/contacts/{theirs}", headers=other.headers)
    assert unchanged.json()["contact"]["first_name"] == ""


async def test_assistants_are_paged_newest_first(client, ws):
    made = [
        (await _exchanged(client, ws.headers, name=f"agent {i}"))["assistant_id"] for i in range(5)
    ]
    seen: list[dict] = []
    for number in (1, 2, 3):
        page = await client.get(f"{ASSISTANTS}?page={number}&limit=2", headers=ws.headers)
        assert page.status_code == 200, page.text
        body = page.json()
        assert body["pagination"] == {"page": number, "limit": 2, "total": 5, "total_pages": 3}
        assert len(body["assistants"]) == (2 if number < 3 else 1)
        seen += body["assistants"]
    assert sorted(a["id"] for a in seen) == sorted(made)
    stamps = [a["created_at"] for a in seen]
    assert stamps == sorted(stamps, reverse=True)
    past = await client.get(f"{ASSISTANTS}?page=4&limit=2", headers=ws.headers)
    assert past.json()["assistants"] == [] and past.json()["pagination"]["total"] == 5
    refused = await client.get(f"{ASSISTANTS}?limit=101", headers=ws.headers)
    assert refused.status_code == 400


async def test_a_revoked_assistant_is_gone(client, ws):
    kept = await _exchanged(client, ws.headers, name="kept")
    gone = await _exchanged(client, ws.headers, name="gone")
    revoked = await client.delete(f"{ASSISTANTS}/{gone['assistant_id']}", headers=ws.headers)
    assert revoked.status_code == 200
    assert revoked.json() == {"success": True, "id": gone["assistant_id"]}
    assert (await client.get("/api/v1/contacts", headers=bearer(gone))).status_code == 401
    assert (await client.get("/api/v1/contacts", headers=bearer(kept))).status_code == 200
    for method in ("GET", "DELETE"):
        answer = await client.request(
            method, f"{ASSISTANTS}/{gone['assistant_id']}", headers=ws.headers
        )
        assert answer.status_code == 404
    listed = (await client.get(ASSISTANTS, headers=ws.headers)).json()
    assert [a["id"] for a in listed["assistants"]] == [kept["assistant_id"]]
    assert listed["pagination"]["total"] == 1
    # Its refresh token is dead too.
    late = await client.post(
        "/oauth/token", data={"grant_type": "refresh_token", "refresh_token": gone["refresh_token"]}
    )
    assert late.status_code == 400 and late.json()["error"] == "invalid_grant"
    entries = await _audit(client, ws)
    revocations = [e for e in entries if e["operation"] == "revoke_assistant"]
    assert [(e["status"], e["key_id"], e["target_id"]) for e in revocations] == [
        (404, ws.key_id, gone["assistant_id"]),
        (200, ws.key_id, gone["assistant_id"]),
    ]


async def test_an_assistants_writes_are_audited_as_it_for_whoever_connected_it(
    client, ws, browser, db
):
    by_key = await _exchanged(client, ws.headers)
    by_person = await connected(client, browser, permissions=["contacts:read", "contacts:write"])
    async with db.session(write=False) as session:
        ada = await people.by_email(session, "ada@example.com")
    assert ada is not None
    first = await client.post(
        "/api/v1/contacts", headers=bearer(by_key), json={"email": "one@example.com"}
    )
    second = await client.post(
        "/api/v1/contacts", headers=bearer(by_person), json={"email": "two@example.com"}
    )
    assert first.status_code == 201 and second.status_code == 201
    refused = await client.post("/api/v1/tags", headers=bearer(by_key), json={"name": "vip"})
    assert refused.status_code == 403

    entries = await _audit(client, ws)
    made = {e["target_id"]: e for e in entries if e["operation"] == "create_contact"}
    one, two = made[first.json()["contact"]["id"]], made[second.json()["contact"]["id"]]
    assert (one["assistant_id"], one["person_id"], one["key_id"], one["status"]) == (
        by_key["assistant_id"],
        None,
        None,
        201,
    )
    (oauth,) = [
        a
        for a in (await client.get(ASSISTANTS, headers=ws.headers)).json()["assistants"]
        if a["kind"] == "oauth"
    ]
    assert oauth["connected_by"]["id"] == ada.id
    assert (two["assistant_id"], two["person_id"], two["key_id"], two["status"]) == (
        oauth["id"],
        ada.id,
        None,
        201,
    )
    (tag,) = [e for e in entries if e["operation"] == "create_tag"]
    assert tag["assistant_id"] == by_key["assistant_id"] and tag["status"] == 403


async def test_an_assistants_writes_count_toward_the_hourly_limit(client, factory):
    free = await factory.workspace("free")  # 120 writes an hour
    tokens = await _exchanged(client, free.headers, permissions=["tags:write"])
    assistant = bearer(tokens)
    for number in range(119):
        who = assistant if number % 2 else free.headers
        made = await client.post("/api/v1/tags", json={"name": f"t{number}"}, headers=who)
        assert made.status_code == 201, made.text
    # The grant's creation was the 120th write.
    for who in (assistant, free.headers):
        refused = await client.post("/api/v1/tags", json={"name": "one more"}, headers=who)
        assert refused.status_code == 429
        assert refused.json()["error"].startswith("Hourly write limit reached (120 on the Free")
    reading = await client.get("/api/v1/tags?limit=1", headers=assistant)
    assert reading.status_code == 403  # it may only write tags; reads are not limited anyway
