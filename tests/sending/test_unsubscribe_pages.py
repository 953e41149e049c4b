"""The unsubscribe link every message carries (`List-Unsubscribe` and `{{ unsubscribe_url }}`):
`GET /u/{token}` asks in the contact's language, `POST /u/{token}` unsubscribes (a form post or
RFC 8058 one-click), idempotently; the contact becomes `unsubscribed` with
`contact.unsubscribed`, and the campaign counts it. No key, no cookie; a bad token is a 404
page."""

from __future__ import annotations

from email import policy
from email.parser import BytesParser

import pytest

from tests.sending.helpers import (
    events_of,
    get_campaign,
    make_campaign,
    make_contacts,
    make_list,
    ok,
    send_campaign,
)

ONE_CLICK = {"content-type": "application/x-www-form-urlencoded"}


async def _links(client, ws, driver, settings, **contact) -> dict[str, str]:
    """Send a campaign to one contact through the outbox; its unsubscribe links by kind."""
    news = await make_list(client, ws)
    [contact_id] = await make_contacts(client, ws, ["jane@mailtest.io"], news, **contact)
    campaign = await make_campaign(client, ws, news)
    await send_campaign(client, ws, campaign["id"])
    await driver.drain()
    [eml] = list((settings.data_dir / "outbox").glob("*.eml"))
    message = BytesParser(policy=policy.default).parsebytes(eml.read_bytes())
    header = str(message["List-Unsubscribe"])
    https = header.split(",")[0].strip().strip("<>")
    assert https.startswith("http://testserver/u/")
    return {
        "path": https.removeprefix("http://testserver"),
        "contact": contact_id,
        "campaign": campaign["id"],
    }


async def test_the_page_asks_then_one_click_unsubscribes(client, db, ws, driver, settings):
    links = await _links(client, ws, driver, settings)
    page = await client.get(links["path"])
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["cache-control"] == "no-store"
    assert "Stop receiving emails from" in page.text and "jane@mailtest.io" in page.text
    assert f'action="{links["path"]}"' in page.text
    contact = f"/api/v1/contacts/{links['contact']}"
    assert (await ok(await client.get(contact, headers=ws.headers)))["contact"]["status"] == (
        "subscribed"
    )  # looking changes nothing

    done = await client.post(
        links["path"], content=b"List-Unsubscribe=One-Click", headers=ONE_CLICK
    )
    assert done.status_code == 200  # no redirect, no cookie needed
    assert "will no longer receive emails" in done.text
    assert "set-cookie" not in done.headers
    body = (await ok(await client.get(contact, headers=ws.headers)))["contact"]
    assert body["status"] == "unsubscribed"
    assert (await get_campaign(client, ws, links["campaign"]))["stats"]["unsubscribed"] == 1

    again = await client.post(links["path"])
    assert again.status_code == 200 and "was already unsubscribed" in again.text
    assert len(await events_of(db, ws.workspace_id, "contact.unsubscribed")) == 1
    assert (await get_campaign(client, ws, links["campaign"]))["stats"]["unsubscribed"] == 1
    revisit = await client.get(links["path"])
    assert "was already unsubscribed" in revisit.text and "<form" not in revisit.text


@pytest.mark.parametrize(
    ("language", "phrase"),
    [
        ("fr", "Ne plus recevoir les e-mails"),
        ("de", "Keine E-Mails mehr"),
        ("es", '<html lang="es">'),
        ("pt", '<html lang="pt">'),
        ("ja", "Stop receiving emails"),  # no Japanese words yet: English
    ],
)
async def test_the_page_speaks_the_contacts_language(
    client, ws, driver, settings, language, phrase
):
    links = await _links(client, ws, driver, settings, language=language)
    page = await client.get(links["path"])
    assert page.status_code == 200
    assert phrase in page.text


@pytest.mark.parametrize("change", ["flip", "truncate", "garbage"])
async def test_an_altered_token_is_a_404_page_and_changes_nothing(
    client, db, ws, driver, settings, change
):
    links = await _links(client, ws, driver, settings)
    path = links["path"]
    token = path.removeprefix("/u/")
    altered = {
        "flip": token[:-3] + ("A" if token[-3] != "A" else "B") + token[-2:],
        "truncate": token[:-5],
        "garbage": "not-a-token",
    }[change]
    for method in ("GET", "POST"):
        response = await client.request(method, f"/u/{altered}")
        assert response.status_code == 404
        assert "Link not valid" in response.text
    contact = await ok(await client.get(f"/api/v1/contacts/{links['contact']}", headers=ws.headers))
    assert contact["contact"]["status"] == "subscribed"


async def test_a_deleted_contacts_link_is_a_404_page(client, ws, driver, settings):
    links = await _links(client, ws, driver, settings)
    await ok(await client.delete(f"/api/v1/contacts/{links['contact']}", headers=ws.headers))
    assert (await client.get(links["path"])).status_code == 404
    assert (await client.post(links["path"])).status_code == 404


async def test_names_are_escaped(client, db, factory, driver, settings):
    ws = await factory.workspace("pro", name="<script>alert(1)</script>")
    links = await _links(client, ws, driver, settings)
    page = await client.get(links["path"])
    assert "<script>alert(1)</script>" not in page.text
    assert "&lt;script&gt;" in page.text
