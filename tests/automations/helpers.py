"""Helpers of the automation tests: the runner ticked in the test's event loop, and the
shapes the tests make through the API."""

from __future__ import annotations

from typing import Any

from sqlalchemy import update

from mailroom.automations import runner
from mailroom.core.clock import utcnow
from mailroom.models import AutomationRun
from mailroom.worker import WorkerContext
from tests.sending.helpers import ok


async def run_due(db: Any, settings: Any, rounds: int = 20) -> int:
    """Tick the automations loop until nothing is due; how many runs it worked."""
    worked = 0
    worker = WorkerContext(db, settings, "test-worker")
    for _ in range(rounds):
        done = await runner.tick(worker)
        if not done:
            break
        worked += done
    return worked


async def skip_waits(db: Any) -> None:
    """Every waiting run is due now (as if its wait had passed)."""
    async with db.transaction() as session:
        await session.execute(
            update(AutomationRun).where(AutomationRun.status == "pending").values(run_at=utcnow())
        )


async def make_tag(client: Any, ws: Any, name: str) -> str:
    response = await client.post("/api/v1/tags", json={"name": name}, headers=ws.headers)
    return str((await ok(response, 201))["tag"]["id"])


async def make_automation(client: Any, ws: Any, **body: Any) -> dict[str, Any]:
    body.setdefault("name", "Welcome")
    response = await client.post("/api/v1/automations", json=body, headers=ws.headers)
    return dict((await ok(response, 201))["automation"])


async def activate(client: Any, ws: Any, automation_id: str) -> dict[str, Any]:
    response = await client.post(
        f"/api/v1/automations/{automation_id}/activate", headers=ws.headers
    )
    return dict((await ok(response))["automation"])


async def create_contact(client: Any, ws: Any, email: str, **fields: Any) -> str:
    response = await client.post(
        "/api/v1/contacts", json={"email": email, **fields}, headers=ws.headers
    )
    return str((await ok(response, 201))["contact"]["id"])


async def runs_of(client: Any, ws: Any, automation_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/api/v1/automations/{automation_id}/runs", headers=ws.headers)
    return list((await ok(response))["runs"])


async def get_automation(client: Any, ws: Any, automation_id: str) -> dict[str, Any]:
    response = await client.get(f"/api/v1/automations/{automation_id}", headers=ws.headers)
    return dict((await ok(response))["automation"])


async def tags_of(client: Any, ws: Any, contact_id: str) -> list[str]:
    response = await client.get(f"/api/v1/contacts/{contact_id}/tags", headers=ws.headers)
    return sorted(t["name"] for t in (await ok(response))["tags"])
