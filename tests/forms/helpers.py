"""Shapes the form tests make through the API, and reading what a submission left."""

from __future__ import annotations

import re
from typing import Any

from tests.sending.conftest import verified_domain
from tests.sending.helpers import ok


async def make_list(client: Any, ws: Any, name: str = "Weekly", **body: Any) -> str:
    created = await client.post("/api/v1/lists", json={"name": name, **body}, headers=ws.headers)
    return str((await ok(created, 201))["list"]["id"])


async def make_form(client: Any, ws: Any, **body: Any) -> dict[str, Any]:
    body.setdefault("name", "Signup")
    created = await client.post("/api/v1/forms", json=body, headers=ws.headers)
    return dict((await ok(created, 201))["form"])


async def sender(client: Any, db: Any, ws: Any) -> None:
    """A sender identity on a verified domain: confirmation emails can go."""
    await verified_domain(client, db, ws)
    await ok(
        await client.patch(
            "/api/v1/sending",
            json={"from_email": "news@shop.example", "from_name": "Shop"},
            headers=ws.headers,
        )
    )


async def contact_by_email(client: Any, ws: Any, email: str) -> dict[str, Any] | None:
    found = await ok(await client.get("/api/v1/contacts", params={"q": email}, headers=ws.headers))
    matches = [c for c in found["contacts"] if c["email"] == email]
    return matches[0] if matches else None


async def memberships(client: Any, ws: Any, list_id: str) -> dict[str, str]:
    """email -> membership status on the list."""
    page = await ok(await client.get(f"/api/v1/lists/{list_id}/contacts", headers=ws.headers))
    return {m["email"]: m["membership"]["status"] for m in page["contacts"]}


def confirm_link(sink: Any) -> str:
    body = sink.received[-1].parsed().get_body(("plain",)).get_content()
    return "/f/confirm/" + re.search(r"/f/confirm/([A-Za-z0-9_-]+)", body).group(1)


async def submit(client: Any, form_id: str, **fields: Any) -> Any:
    return await client.post(f"/f/{form_id}", json=fields)
