"""People and signed-in clients for the dashboard tests."""

from __future__ import annotations

import re
from typing import Any

import httpx

from mailroom.people import service as people

PASSWORD = "correct horse battery"


async def make_person(db: Any, settings: Any, ws: Any, email: str, role: str = "admin") -> str:
    """A person with `role` in `ws`; returns their one-time sign-in link's path."""
    async with db.transaction() as session:
        person = await people.create_person(
            session, ws.account_id, email, workspace_id=ws.workspace_id, role=role
        )
        link = people.sign_in_link(settings, person)
    return "/" + link.split("/", 3)[3]


async def signed_in(app: Any, db: Any, settings: Any, ws: Any, email: str, role: str = "admin"):
    """A new browser-like client, signed in as a new person of `ws` through their link."""
    link = await make_person(db, settings, ws, email, role)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
    done = await client.post(link, data={"password": PASSWORD})
    assert done.status_code == 303, done.text
    return client


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)
