"""The job writes each change's catalog event, as the CSV import does: new contacts
contact.created, a subscribed contact the platform says left its contact.<status>, a field
change contact.updated, each new tag contact.tag_added, each confirmed join contact.list_joined."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import select

from mailroom.models import Event
from tests.platform_imports.helpers import run_import

LISTMONK = (
    "uuid,email,name,attributes,status,created_at,updated_at\n"
    'u1,new@acme.io,New Person,"{""city"": ""Oslo""}",enabled,,\n'
    "u2,left@acme.io,Left,{},blocklisted,,\n"
    'u3,here@acme.io,Here,"{""city"": ""Rome""}",enabled,,\n'
)


async def test_the_job_writes_the_catalog_events(
    client: Any, db: Any, settings: Any, ws: Any
) -> None:
    for email in ("left@acme.io", "here@acme.io"):
        made = await client.post("/api/v1/contacts", headers=ws.headers, json={"email": email})
        assert made.status_code == 201
    made = await client.post("/api/v1/lists", headers=ws.headers, json={"name": "News"})
    list_id = made.json()["list"]["id"]
    async with db.session(write=False) as session:
        before = set((await session.scalars(select(Event.id))).all())
    job = await run_import(
        client, db, settings, ws, "listmonk", "subscribers.csv", LISTMONK.encode(), list_id=list_id
    )
    assert job["status"] == "done"
    assert (job["result"]["created"], job["result"]["updated"]) == (1, 2)
    async with db.session(write=False) as session:
        rows = (
            await session.scalars(select(Event).where(Event.workspace_id == ws.workspace_id))
        ).all()
    written = Counter(
        (e.type, (e.data or {}).get("contact", {}).get("email")) for e in rows if e.id not in before
    )
    assert written == {
        ("contact.created", "new@acme.io"): 1,
        ("contact.unsubscribed", "left@acme.io"): 1,
        ("contact.updated", "left@acme.io"): 1,  # its empty first name filled
        ("contact.updated", "here@acme.io"): 1,  # its city
        ("contact.list_joined", "new@acme.io"): 1,
        ("contact.list_joined", "here@acme.io"): 1,
    }
