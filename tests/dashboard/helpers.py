"""People and signed-in clients for the dashboard tests."""

from __future__ import annotations

import re
from html import unescape as html_unescape
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


async def use_link(client: httpx.AsyncClient, link: str, password: str = PASSWORD):
    """Open a sign-in link's page and post its form as a browser would (with the page's CSRF
    token and cookie): the answer to the post."""
    page = await client.get(link)
    assert page.status_code == 200, page.text
    return await client.post(link, data={"csrf": csrf_of(page.text), "password": password})


async def signed_in(app: Any, db: Any, settings: Any, ws: Any, email: str, role: str = "admin"):
    """A new browser-like client, signed in as a new person of `ws` through their link."""
    link = await make_person(db, settings, ws, email, role)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
    done = await use_link(client, link)
    assert done.status_code == 303, done.text
    return client


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def form_values(html: str, form_id: str) -> dict[str, str]:
    """What a browser would post from the form as the page shows it (no button pressed):
    text, number and hidden inputs, ticked boxes, each select's chosen option."""
    found = re.search(rf'<form [^>]*id="{form_id}".*?</form>', html, re.S)
    assert found, f"no form {form_id}"
    form = found.group(0)
    values: dict[str, str] = {}
    for tag in re.findall(r"<input [^>]*>", form):
        kind = re.search(r'type="(\w+)"', tag)
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if not name:
            continue
        if kind and kind.group(1) == "checkbox":
            if " checked" in tag:
                values[name.group(1)] = value.group(1) if value else "on"
        else:
            values[name.group(1)] = html_unescape(value.group(1)) if value else ""
    for name, options in re.findall(r'<select [^>]*name="([^"]+)"[^>]*>(.*?)</select>', form, re.S):
        chosen = re.search(r'<option value="([^"]*)" selected', options) or re.search(
            r'<option value="([^"]*)"', options
        )
        values[name] = html_unescape(chosen.group(1)) if chosen else ""
    return values
