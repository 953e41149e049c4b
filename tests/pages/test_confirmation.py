"""Double opt-in: `POST /api/v1/lists/{id}/contacts/{contact_id}/confirmation` mails a link;
`GET /confirm/{token}` asks, `POST` confirms once (`contact.list_joined` with the list); an
expired link offers a new email; altered links are 404 pages."""

from __future__ import annotations

import re
import time

from mailroom.core import tokens
from mailroom.lists.confirmation import CONFIRM
from tests.sending.conftest import verified_domain
from tests.sending.helpers import events_of, make_contacts, ok

JANE = "jane@mail.example"


async def _setup(client, db, ws):
    await verified_domain(client, db, ws)
    await ok(
        await client.patch(
            "/api/v1/sending",
            json={"from_email": "news@shop.example", "from_name": "Shop"},
            headers=ws.headers,
        )
    )
    created = await client.post(
        "/api/v1/lists", json={"name": "Weekly", "double_opt_in": True}, headers=ws.headers
    )
    list_id = (await ok(created, 201))["list"]["id"]
    [contact_id] = await make_contacts(client, ws, [JANE], list_id)
    return list_id, contact_id


def _link(sink) -> str:
    body = sink.received[-1].parsed().get_body(("plain",)).get_content()
    return "/confirm/" + re.search(r"/confirm/([A-Za-z0-9_-]+)", body).group(1)


async def _status(client, ws, list_id):
    page = await ok(await client.get(f"/api/v1/lists/{list_id}/contacts", headers=ws.headers))
    return [m["membership"]["status"] for m in page["contacts"]]


async def test_the_link_confirms_once(client, db, ws, sink, driver):
    list_id, contact_id = await _setup(client, db, ws)
    url = f"/api/v1/lists/{list_id}/contacts/{contact_id}/confirmation"
    sent = await client.post(url, headers=ws.headers)
    assert (sent.status_code, sent.json()) == (202, {"sent": True})
    await driver.drain()
    message = sink.received[-1].parsed()
    assert message["To"] == JANE and "Weekly" in message["Subject"]
    link = _link(sink)

    page = await client.get(link)
    assert page.status_code == 200
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert "<script" not in page.text
    assert f'<form method="post" action="{link}">' in page.text
    assert await _status(client, ws, list_id) == ["unconfirmed"]

    done = await client.post(link)
    assert done.status_code == 200 and "Subscription confirmed" in done.text
    assert await _status(client, ws, list_id) == ["confirmed"]
    assert (await client.post(link)).status_code == 200  # again: still confirmed, no event
    joined = await events_of(db, ws.workspace_id, "contact.list_joined")
    assert len(joined) == 1 and joined[0].list_id == list_id

    again = await client.post(url, headers=ws.headers)
    assert (again.status_code, again.json()) == (
        409,
        {"error": "This contact has already confirmed this list"},
    )


async def test_refusals(client, db, ws, sink, driver, factory):
    list_id, contact_id = await _setup(client, db, ws)
    [stranger] = await make_contacts(client, ws, ["tom@mail.example"])
    off_list = await client.post(
        f"/api/v1/lists/{list_id}/contacts/{stranger}/confirmation", headers=ws.headers
    )
    assert (off_list.status_code, off_list.json()) == (
        404,
        {"error": "This contact is not on the list"},
    )
    other = await factory.workspace()
    foreign = await client.post(
        f"/api/v1/lists/{list_id}/contacts/{contact_id}/confirmation", headers=other.headers
    )
    assert foreign.status_code == 404
    assert sink.received == []


async def test_an_expired_link_offers_a_new_email(client, db, ws, sink, driver, settings):
    list_id, contact_id = await _setup(client, db, ws)
    eight_days_ago = str(int(time.time()) - 8 * 24 * 3600)
    token = tokens.sign(
        settings.resolved_secret_key, CONFIRM, ws.workspace_id, list_id, contact_id, eight_days_ago
    )
    page = await client.get(f"/confirm/{token}")
    assert page.status_code == 200 and "expired" in page.text
    resent = await client.post(f"/confirm/{token}")
    assert resent.status_code == 200 and "new confirmation email" in resent.text
    assert await _status(client, ws, list_id) == ["unconfirmed"]
    await driver.drain()
    assert len(sink.received) == 1
    assert (await client.post(_link(sink))).status_code == 200
    assert await _status(client, ws, list_id) == ["confirmed"]


async def test_altered_links_are_404_pages(client, db, ws, sink, driver, settings):
    list_id, contact_id = await _setup(client, db, ws)
    token = tokens.sign(
        settings.resolved_secret_key,
        CONFIRM,
        ws.workspace_id,
        list_id,
        contact_id,
        str(int(time.time())),
    )
    altered = token[:-1] + ("A" if token[-1] != "A" else "B")
    for answer in (
        await client.get(f"/confirm/{altered}"),
        await client.post(f"/confirm/{altered}"),
    ):
        assert answer.status_code == 404
    assert await _status(client, ws, list_id) == ["unconfirmed"]


async def test_the_email_is_in_the_contacts_language_and_names_the_sender(
    client, db, ws, sink, driver
):
    list_id, contact_id = await _setup(client, db, ws)
    await ok(
        await client.patch(
            f"/api/v1/contacts/{contact_id}", json={"language": "fr"}, headers=ws.headers
        )
    )
    url = f"/api/v1/lists/{list_id}/contacts/{contact_id}/confirmation"
    assert (await client.post(url, headers=ws.headers)).status_code == 202
    await driver.drain()
    message = sink.received[-1].parsed()
    assert message["Subject"] == "Confirmez votre inscription à Weekly"
    html = message.get_body(("html",)).get_content()
    assert '<html lang="fr">' in html and "Oui, je m&#39;inscris" in html
    text = message.get_body(("plain",)).get_content()
    assert "Confirmez que jane@mail.example souhaite recevoir Weekly de Shop." in text
    assert (await client.post(_link(sink))).status_code == 200
    assert await _status(client, ws, list_id) == ["confirmed"]
