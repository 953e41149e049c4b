"""Every key-authenticated write is recorded; the log is cursor-paged, newest first."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from mailroom.audit import service as audit_service
from mailroom.core.clock import utcnow
from mailroom.models import AuditEntry
from tests.foundation.probe import router as probe_router


@pytest.fixture
def probe(app):
    app.include_router(probe_router)
    return app


async def test_successful_write_is_recorded_with_target(client, probe, ws):
    created = await client.post("/api/v1/probe/jobs", json={"name": "a"}, headers=ws.headers)
    assert created.status_code == 201
    job_id = created.json()["id"]
    deleted = await client.delete("/api/v1/probe/jobs/some-id", headers=ws.headers)
    assert deleted.status_code == 200

    log = await client.get("/api/v1/account/audit-log", headers=ws.headers)
    assert log.status_code == 200
    entries = log.json()["entries"]
    assert [e["operation"] for e in entries] == ["delete_probe", "create_probe"]
    assert entries[0]["target_id"] == "some-id"
    assert entries[0]["status"] == 200
    assert entries[0]["method"] == "DELETE"
    assert entries[1]["target_id"] == job_id
    assert entries[1]["status"] == 201
    assert all(e["key_id"] == ws.key_id for e in entries)
    assert log.json()["next_cursor"] is None


async def test_refused_writes_are_recorded_with_their_status(client, probe, ws, factory):
    await client.post("/api/v1/probe/jobs", json={"name": "boom"}, headers=ws.headers)
    await client.post("/api/v1/probe/jobs", json={"bad": 1}, headers=ws.headers)
    limited = await factory.key(ws, "contacts:read")
    await client.post("/api/v1/probe/jobs", json={"name": "a"}, headers=limited)
    entries = (await client.get("/api/v1/account/audit-log", headers=ws.headers)).json()["entries"]
    assert [e["status"] for e in entries] == [403, 400, 409]
    assert {e["operation"] for e in entries} == {"create_probe"}


async def test_reads_are_not_recorded(client, ws):
    await client.get("/api/v1/account", headers=ws.headers)
    entries = (await client.get("/api/v1/account/audit-log", headers=ws.headers)).json()["entries"]
    assert entries == []


async def test_cursor_paging_newest_first(client, probe, ws):
    for i in range(7):
        await client.delete(f"/api/v1/probe/jobs/t{i}", headers=ws.headers)
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        body = (
            await client.get("/api/v1/account/audit-log", params=params, headers=ws.headers)
        ).json()
        seen += [e["target_id"] for e in body["entries"]]
        pages += 1
        cursor = body["next_cursor"]
        if not cursor:
            break
    assert pages == 3
    assert seen == [f"t{i}" for i in reversed(range(7))]


async def test_bad_cursor_is_400(client, ws):
    response = await client.get(
        "/api/v1/account/audit-log", params={"cursor": "%%%"}, headers=ws.headers
    )
    assert response.status_code == 400
    assert response.json() == {"error": "Invalid cursor"}


async def test_needs_audit_read(client, factory):
    workspace = await factory.workspace(permissions="contacts:read,contacts:write")
    response = await client.get("/api/v1/account/audit-log", headers=workspace.headers)
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: audit:read permission required"}


async def test_other_workspace_never_sees_entries(client, probe, factory):
    first = await factory.workspace()
    second = await factory.workspace(account_id=first.account_id)
    await client.delete("/api/v1/probe/jobs/mine", headers=first.headers)
    theirs = await client.get("/api/v1/account/audit-log", headers=second.headers)
    assert theirs.json()["entries"] == []


async def test_entries_older_than_12_months_are_pruned(db, ws):
    async with db.transaction() as session:
        for age in (400, 366, 300, 1):
            session.add(
                AuditEntry(
                    workspace_id=ws.workspace_id,
                    operation="x",
                    method="POST",
                    path="/",
                    status=200,
                    created_at=utcnow() - timedelta(days=age),
                )
            )
    async with db.transaction() as session:
        assert await audit_service.prune(session) == 2
    async with db.session() as session:
        assert await session.scalar(select(func.count()).select_from(AuditEntry)) == 2
