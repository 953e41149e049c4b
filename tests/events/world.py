"""A small workspace every event test starts from, built through the API, and a reader for the
events (and deliveries) a request wrote.

    a@acme.io  subscribed, tagged `vip`, confirmed member of `News`
    b@acme.io  subscribed
    c@acme.io  unsubscribed
    d@acme.io  subscribed, unconfirmed member of `Double` (a double opt-in list)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy import select

from mailroom.models import Event, WebhookDelivery

# (event type, contact email or None, dimension name or None)
Expected = tuple[str, str | None, str | None]


@dataclass
class World:
    client: httpx.AsyncClient
    db: Any
    workspace_id: str
    headers: dict[str, str]
    contacts: dict[str, str] = field(default_factory=dict)  # email -> id
    tags: dict[str, str] = field(default_factory=dict)  # name -> id
    lists: dict[str, str] = field(default_factory=dict)  # name -> id
    seen: set[str] = field(default_factory=set)  # event ids before the request under test
    extra: dict[str, Any] = field(default_factory=dict)

    async def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return await self.client.request(method, path, headers=self.headers, **kwargs)

    async def ok(self, method: str, path: str, status: int = 200, **kwargs: Any) -> Any:
        response = await self.call(method, path, **kwargs)
        assert response.status_code == status, response.text
        return response.json()

    def id(self, email: str) -> str:
        return self.contacts[email]

    async def contact(self, email: str) -> dict[str, Any]:
        body = await self.ok("GET", f"/api/v1/contacts/{self.id(email)}")
        return dict(body["contact"])

    async def mark(self) -> None:
        """Events from here on are the request's."""
        self.seen = {e.id for e in await self.events(all_of_them=True)}

    async def events(self, all_of_them: bool = False) -> list[Event]:
        async with self.db.session() as session:
            rows = await session.scalars(
                select(Event).where(Event.workspace_id == self.workspace_id)
            )
            found = list(rows.all())
        return found if all_of_them else [e for e in found if e.id not in self.seen]

    async def deliveries(self, event_ids: list[str]) -> Counter[str]:
        """Pending deliveries queued per event id."""
        async with self.db.session() as session:
            rows = await session.scalars(
                select(WebhookDelivery.event_id).where(
                    WebhookDelivery.workspace_id == self.workspace_id,
                    WebhookDelivery.event_id.in_(event_ids),
                    WebhookDelivery.status == "pending",
                )
            )
            return Counter(rows.all())

    async def names_of_dimensions(self) -> dict[str, str]:
        """Every list and tag id -> name, including those made by the request."""
        tags = await self.ok("GET", "/api/v1/tags", params={"limit": 100})
        lists = await self.ok("GET", "/api/v1/lists", params={"limit": 100})
        names = {t["id"]: t["name"] for t in tags["tags"]}
        names.update({m["id"]: m["name"] for m in lists["lists"]})
        # Deleted groups are named by what the world knew of them.
        names.update({v: k for k, v in {**self.tags, **self.lists}.items()})
        return names

    async def written(self) -> Counter[Expected]:
        """The request's events as (type, contact email, list or tag name)."""
        names = await self.names_of_dimensions()
        emails = {v: k for k, v in self.contacts.items()}
        found: Counter[Expected] = Counter()
        for event in await self.events():
            contact = (event.data or {}).get("contact") or {}
            email = contact.get("email") or emails.get(contact.get("id"))
            if email is None and contact.get("id") in self.extra.get("new_ids", {}):
                email = self.extra["new_ids"][contact["id"]]
            dimension = event.list_id or event.tag_id
            found[(event.type, email, names.get(dimension) if dimension else None)] += 1
        return found


async def build(client: httpx.AsyncClient, db: Any, ws: Any) -> World:
    w = World(client, db, ws.workspace_id, ws.headers)
    for name in ("vip", "other"):
        tag = await w.ok("POST", "/api/v1/tags", 201, json={"name": name})
        w.tags[name] = tag["tag"]["id"]
    for name, double in (("News", False), ("Double", True)):
        made = await w.ok(
            "POST", "/api/v1/lists", 201, json={"name": name, "double_opt_in": double}
        )
        w.lists[name] = made["list"]["id"]
    for email in ("a@acme.io", "b@acme.io", "c@acme.io", "d@acme.io"):
        made = await w.ok("POST", "/api/v1/contacts", 201, json={"email": email, "first_name": "X"})
        w.contacts[email] = made["contact"]["id"]
    await w.ok("PATCH", f"/api/v1/contacts/{w.id('c@acme.io')}", json={"status": "unsubscribed"})
    await w.ok(
        "POST", f"/api/v1/contacts/{w.id('a@acme.io')}/tags", 201, json={"tag_id": w.tags["vip"]}
    )
    for email, name in (("a@acme.io", "News"), ("d@acme.io", "Double")):
        await w.ok(
            "POST", f"/api/v1/lists/{w.lists[name]}/contacts", json={"contact_ids": [w.id(email)]}
        )
    await w.mark()
    return w
