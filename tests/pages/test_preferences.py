"""The preferences page `/p/{token}` from a sent message: lists to join or leave, name and
language, unsubscribe from everything; strict CSP, no script; altered tokens are 404 pages."""

from __future__ import annotations

import re

from tests.sending.helpers import events_of, ok
from tests.tracking.helpers import hrefs, html_of, path_of, sent_campaign

JANE = "jane@mail.example"


async def _page_link(client, db, ws, driver, sink) -> str:
    _campaign, got = await sent_campaign(client, db, ws, driver, sink, [JANE])
    [link] = [h for h in hrefs(html_of(got[JANE])) if "/p/" in h]
    return path_of(link)


async def _contact(client, ws):
    return (await ok(await client.get(f"/api/v1/contacts?q={JANE}", headers=ws.headers)))[
        "contacts"
    ][0]


async def test_lists_name_and_language_are_saved(client, db, ws, sink, driver):
    link = await _page_link(client, db, ws, driver, sink)
    other = (
        await ok(
            await client.post("/api/v1/lists", json={"name": "Offers"}, headers=ws.headers), 201
        )
    )["list"]["id"]
    page = await client.get(link)
    assert page.status_code == 200
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert "<script" not in page.text
    boxes = dict(re.findall(r'name="list" value="([^"]+)"( checked)?', page.text))
    assert len(boxes) == 2 and boxes[other] == ""
    [newsletter] = [k for k, v in boxes.items() if v]

    saved = await client.post(
        link,
        data={
            "list": [other],
            "first_name": "Jane",
            "last_name": "Doe",
            "language": "fr",
            "action": "save",
        },
    )
    assert saved.status_code == 200 and 'lang="fr"' in saved.text
    contact = await _contact(client, ws)
    assert (contact["first_name"], contact["last_name"], contact["language"]) == (
        "Jane",
        "Doe",
        "fr",
    )
    left = await events_of(db, ws.workspace_id, "contact.list_left")
    assert [e.list_id for e in left] == [newsletter]
    joined = [e.list_id for e in await events_of(db, ws.workspace_id, "contact.list_joined")]
    assert other in joined
    members = await ok(await client.get(f"/api/v1/lists/{other}/contacts", headers=ws.headers))
    assert [m["membership"]["status"] for m in members["contacts"]] == ["confirmed"]


async def test_unsubscribe_from_everything(client, db, ws, sink, driver):
    link = await _page_link(client, db, ws, driver, sink)
    done = await client.post(link, data={"action": "unsubscribe_all"})
    assert done.status_code == 200
    assert (await _contact(client, ws))["status"] == "unsubscribed"


async def test_bad_values_and_altered_tokens(client, db, ws, sink, driver):
    link = await _page_link(client, db, ws, driver, sink)
    refused = await client.post(link, data={"first_name": "x" * 300, "action": "save"})
    assert refused.status_code == 400 and 'role="alert"' in refused.text
    assert (await _contact(client, ws))["first_name"] in (None, "")
    altered = link[:-1] + ("A" if link[-1] != "A" else "B")
    assert (await client.get(altered)).status_code == 404
    assert (await client.post(altered, data={"action": "unsubscribe_all"})).status_code == 404
    assert (await _contact(client, ws))["status"] == "subscribed"
