"""Shortcuts of the sending tests: an audience through the API, a campaign, and a driver that
runs the sending engine (the worker's loop) until nothing is due."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from sqlalchemy import func, or_, select

from mailroom.campaigns import actions as campaign_actions
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.db import Database
from mailroom.models import Event, SendLog
from mailroom.sending.engine import SendEngine
from mailroom.settings import Settings
from mailroom.worker import WorkerContext

HTML = (
    "<html><head><style>p { color: #333 }</style></head><body>"
    "<p>Hello {{ first_name | default('there') }},</p>"
    '<p>Our <a href="https://shop.example/sale">spring sale</a> starts now.</p>'
    '<p><a href="{{ unsubscribe_url }}">Unsubscribe</a></p></body></html>'
)


async def ok(response: Any, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    return body


async def make_list(client: Any, ws: Any, name: str = "Newsletter") -> str:
    created = await ok(
        await client.post("/api/v1/lists", json={"name": name}, headers=ws.headers), 201
    )
    return str(created["list"]["id"])


async def make_contacts(
    client: Any,
    ws: Any,
    emails: list[str],
    list_id: str | None = None,
    *,
    status: str = "confirmed",
    **fields: Any,
) -> list[str]:
    """Contacts (subscribed) added to `list_id` when given; returns their ids in order."""
    ids = []
    for email in emails:
        body = {"email": email, **fields}
        created = await ok(
            await client.post("/api/v1/contacts", json=body, headers=ws.headers), 201
        )
        ids.append(str(created["contact"]["id"]))
    if list_id:
        for start in range(0, len(ids), 1000):
            await ok(
                await client.post(
                    f"/api/v1/lists/{list_id}/contacts",
                    json={"contact_ids": ids[start : start + 1000], "status": status},
                    headers=ws.headers,
                ),
                200,
            )
    return ids


async def import_audience(client: Any, ws: Any, emails: list[str]) -> str:
    """A new list of `emails` (imported as subscribed contacts); its id."""
    news = await make_list(client, ws)
    imported = await client.post(
        "/api/v1/contacts/import",
        files={"file": ("people.csv", "\n".join(["email", *emails]).encode(), "text/csv")},
        data={"list_id": news, "check_domains": "false"},
        headers=ws.headers,
    )
    assert (await ok(imported))["imported"] == len(emails)
    return news


def campaign_body(list_id: str, **overrides: Any) -> dict[str, Any]:
    body = {
        "name": "Spring sale",
        "subject": "Spring sale, {{ first_name | default('friend') }}",
        "from_email": "news@shop.example",
        "from_name": "Shop",
        "html_content": HTML,
        "audience": {"list_ids": [list_id]},
    }
    body.update(overrides)
    return body


async def make_campaign(client: Any, ws: Any, list_id: str, **overrides: Any) -> dict[str, Any]:
    response = await client.post(
        "/api/v1/campaigns", json=campaign_body(list_id, **overrides), headers=ws.headers
    )
    return (await ok(response, 201))["campaign"]


async def get_campaign(client: Any, ws: Any, campaign_id: str) -> dict[str, Any]:
    return (await ok(await client.get(f"/api/v1/campaigns/{campaign_id}", headers=ws.headers)))[
        "campaign"
    ]


async def send_campaign(client: Any, ws: Any, campaign_id: str) -> dict[str, Any]:
    response = await client.post(f"/api/v1/campaigns/{campaign_id}/send", headers=ws.headers)
    return (await ok(response, 202))["campaign"]


async def recipients(client: Any, ws: Any, campaign_id: str) -> list[dict[str, Any]]:
    response = await client.get(
        f"/api/v1/campaigns/{campaign_id}/recipients",
        params={"limit": 100},
        headers=ws.headers,
    )
    return list((await ok(response))["recipients"])


async def events_of(db: Database, workspace_id: str, *types: str) -> list[Event]:
    async with db.session() as session:
        query = select(Event).where(Event.workspace_id == workspace_id)
        if types:
            query = query.where(Event.type.in_(types))
        return list((await session.scalars(query.order_by(Event.created_at, Event.id))).all())


class SendDriver:
    """The worker's sending loop, ticked in the test's event loop until nothing is due."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.engine = SendEngine(settings)
        self.ctx = WorkerContext(db, settings, "test-sender")

    async def due(self) -> int:
        now = utcnow()
        async with self.db.session() as session:
            return int(
                await session.scalar(
                    select(func.count())
                    .select_from(SendLog)
                    .where(
                        SendLog.status == "pending",
                        SendLog.run_at <= now,
                        or_(SendLog.locked_until.is_(None), SendLog.locked_until <= now),
                    )
                )
                or 0
            )

    async def drain(self, max_seconds: float = 60) -> None:
        deadline = time.monotonic() + max_seconds
        while time.monotonic() < deadline:
            await self.engine.tick(self.ctx)
            if self.engine.busy:
                await asyncio.sleep(0.01)
                continue
            if await self.due() == 0:
                return
        raise AssertionError("the sending engine did not settle")

    async def start_scheduled(self) -> int:
        from mailroom.accounts import service as accounts

        async def context_for(session: Any, workspace_id: str) -> Context:
            principal = await accounts.principal_for_workspace(session, workspace_id)
            return Context(session, principal, self.settings)

        return await campaign_actions.start_due(context_for, self.db, self.settings)

    async def close(self) -> None:
        await self.engine.close(self.ctx)
