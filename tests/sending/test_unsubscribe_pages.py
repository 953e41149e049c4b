"""The unsubscribe link every message carries (`List-Unsubscribe` and `{{ unsubscribe_url }}`):
`GET /u/{token}` asks in the contact's language, `POST /u/{token}` unsubscribes (a form post or
RFC 8058 one-click), idempotently; the contact becomes `unsubscribed` with
`contact.unsubscribed`, the address is suppressed as `unsubscribed`, and the campaign counts
it. No key, no cookie. An altered or foreign token, or a deleted contact's, is a 404 page."""

from __future__ import annotations

import asyncio
import string
from email import policy
from email.parser import BytesParser

import pytest
from sqlalchemy import select

from mailroom.core import tokens
from mailroom.models import SendLog
from mailroom.sending import addresses
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
B64 = string.ascii_letters + string.digits + "-_"


async def _links(client, ws, driver, settings, email="jane@mailtest.io", **contact):
    """Send a campaign to one contact through the outbox; its unsubscribe link and ids."""
    news = await make_list(client, ws)
    [contact_id] = await make_contacts(client, ws, [email], news, **contact)
    campaign = await make_campaign(client, ws, news)
    await send_campaign(client, ws, campaign["id"])
    await driver.drain()
    [eml] = list((settings.data_dir / "outbox").glob("*.eml"))
    message = BytesParser(policy=policy.default).parsebytes(eml.read_bytes())
    header = str(message["List-Unsubscribe"])
    https = header.split(",")[0].strip().strip("<>")
    assert https.startswith("http://testserver/u/")
    path = https.removeprefix("http://testserver")
    parts = tokens.read(settings.resolved_secret_key, addresses.UNSUBSCRIBE, path[3:])
    assert parts is not None and parts[:2] == [ws.workspace_id, contact_id]
    return {"path": path, "contact": contact_id, "campaign": campaign["id"], "row": parts[2]}


async def _contact(client, ws, contact_id):
    return (await ok(await client.get(f"/api/v1/contacts/{contact_id}", headers=ws.headers)))[
        "contact"
    ]


async def _suppression(client, ws, email="jane@mailtest.io"):
    return await ok(
        await client.get("/api/v1/suppressions", params={"email": email}, headers=ws.headers)
    )


async def _row_unsubscribed_at(db, row_id):
    async with db.session() as session:
        return await session.scalar(select(SendLog.unsubscribed_at).where(SendLog.id == row_id))


async def test_the_page_asks_then_one_click_unsubscribes(client, db, ws, driver, settings):
    links = await _links(client, ws, driver, settings)
    page = await client.get(links["path"])
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["cache-control"] == "no-store"
    assert "Stop receiving emails from" in page.text and "jane@mailtest.io" in page.text
    assert page.text.count("<button") == 1
    assert f'<form method="post" action="{links["path"]}">' in page.text

    done = await client.post(
        links["path"], content=b"List-Unsubscribe=One-Click", headers=ONE_CLICK
    )
    assert done.status_code == 200  # no redirect, no cookie or CSRF token needed
    assert "location" not in done.headers and "set-cookie" not in done.headers
    assert done.headers["content-type"].startswith("text/html")
    assert "will no longer receive emails" in done.text
    contact = await _contact(client, ws, links["contact"])
    assert contact["status"] == "unsubscribed" and contact["unsubscribed_at"] is not None
    assert (await _suppression(client, ws))["reason"] == "unsubscribed"
    assert (await _suppression(client, ws))["source"] == "unsubscribe_link"
    assert (await get_campaign(client, ws, links["campaign"]))["stats"]["unsubscribed"] == 1
    assert await _row_unsubscribed_at(db, links["row"]) is not None

    again = await client.post(links["path"])  # the page's button: an empty form post
    assert again.status_code == 200 and "was already unsubscribed" in again.text
    one_click_again = await client.post(
        links["path"], content=b"List-Unsubscribe=One-Click", headers=ONE_CLICK
    )
    assert one_click_again.status_code == 200
    assert len(await events_of(db, ws.workspace_id, "contact.unsubscribed")) == 1
    assert (await get_campaign(client, ws, links["campaign"]))["stats"]["unsubscribed"] == 1
    revisit = await client.get(links["path"])
    assert "was already unsubscribed" in revisit.text and "<form" not in revisit.text


async def test_looking_changes_nothing(client, db, ws, driver, settings):
    links = await _links(client, ws, driver, settings)
    for _ in range(3):
        assert (await client.get(links["path"])).status_code == 200
        assert (await client.head(links["path"])).status_code in (200, 405)
    assert (await _contact(client, ws, links["contact"]))["status"] == "subscribed"
    assert (await _suppression(client, ws))["suppressed"] is False
    assert await events_of(db, ws.workspace_id, "contact.unsubscribed", "contact.updated") == []
    assert await _row_unsubscribed_at(db, links["row"]) is None
    assert (await get_campaign(client, ws, links["campaign"]))["stats"]["unsubscribed"] == 0


async def test_a_contact_unsubscribed_already_is_not_counted_again(
    client, db, ws, driver, settings
):
    """Opted out through the API first: the link confirms, suppresses the address (the person
    asked twice), and the campaign does not count an unsubscribe it did not cause."""
    links = await _links(client, ws, driver, settings)
    await ok(
        await client.patch(
            f"/api/v1/contacts/{links['contact']}",
            json={"status": "unsubscribed"},
            headers=ws.headers,
        )
    )
    assert (await _suppression(client, ws))["suppressed"] is False
    done = await client.post(links["path"])
    assert done.status_code == 200 and "was already unsubscribed" in done.text
    assert (await _suppression(client, ws))["reason"] == "unsubscribed"
    assert (await get_campaign(client, ws, links["campaign"]))["stats"]["unsubscribed"] == 0
    assert len(await events_of(db, ws.workspace_id, "contact.unsubscribed")) == 1  # the PATCH


async def test_an_archived_contact_comes_back_unsubscribed(client, db, ws, driver, settings):
    links = await _links(client, ws, driver, settings)
    contact = f"/api/v1/contacts/{links['contact']}"
    await ok(await client.patch(contact, json={"status": "archived"}, headers=ws.headers))
    done = await client.post(links["path"])
    assert done.status_code == 200 and "will no longer receive emails" in done.text
    assert (await _suppression(client, ws))["reason"] == "unsubscribed"
    assert (await get_campaign(client, ws, links["campaign"]))["stats"]["unsubscribed"] == 1
    restored = await client.post(
        "/api/v1/contacts/bulk",
        json={"action": "restore", "contact_ids": [links["contact"]]},
        headers=ws.headers,
    )
    assert (await ok(restored))["restored"] == 1
    assert (await _contact(client, ws, links["contact"]))["status"] == "unsubscribed"


@pytest.mark.parametrize(
    ("language", "phrases"),
    [
        ("en", ["Stop receiving emails from", ">Unsubscribe</button>", '<html lang="en">']),
        ("fr", ["Ne plus recevoir les e-mails", ">Me désabonner</button>", '<html lang="fr">']),
        ("de", ["Keine E-Mails mehr", ">Abmelden</button>", '<html lang="de">']),
        ("es", ["Dejar de recibir correos", ">Darme de baja</button>", '<html lang="es">']),
        ("pt", ["Deixar de receber e-mails", ">Cancelar inscrição</button>", '<html lang="pt">']),
        ("pt-BR", ["Deixar de receber e-mails", '<html lang="pt">']),  # stored as pt
        ("ja", ["Stop receiving emails", '<html lang="en">']),  # no Japanese words yet
        (None, ["Stop receiving emails", '<html lang="en">']),
    ],
)
async def test_the_page_speaks_the_contacts_language(
    client, ws, driver, settings, language, phrases
):
    extra = {} if language is None else {"language": language}
    links = await _links(client, ws, driver, settings, **extra)
    page = await client.get(links["path"])
    assert page.status_code == 200
    for phrase in phrases:
        assert phrase in page.text
    done = await client.post(links["path"])
    if language == "fr":
        assert "Vous êtes désabonné" in done.text
    if language == "de":
        assert "Sie sind abgemeldet" in done.text


def _one_character_changes(token: str) -> list[str]:
    """Every position changed to another base64url character (two choices each)."""
    changed = []
    for i, char in enumerate(token):
        for other in [c for c in ("A", "B", "Q", "g", "w", "-") if c != char][:2]:
            changed.append(token[:i] + other + token[i + 1 :])
    return changed


async def test_every_one_character_change_of_the_token_is_a_404(client, ws, driver, settings):
    links = await _links(client, ws, driver, settings)
    token = links["path"].removeprefix("/u/")
    variants = _one_character_changes(token)
    # other spellings of the same bytes: spare bits of the last character, padding, junk
    variants += [token[:-1] + c for c in B64 if c != token[-1]]
    variants += [token + "=", token + "==", token[:10] + "." + token[10:], token[:-1]]
    for altered in variants:
        response = await client.get(f"/u/{altered}")
        assert response.status_code == 404, altered
        assert "Link not valid" in response.text
    for altered in variants[:: max(1, len(variants) // 40)]:
        refused = await client.post(
            f"/u/{altered}", content=b"List-Unsubscribe=One-Click", headers=ONE_CLICK
        )
        assert refused.status_code == 404
    assert (await _contact(client, ws, links["contact"]))["status"] == "subscribed"


@pytest.mark.parametrize("change", ["truncate", "garbage", "empty-ish", "long"])
async def test_garbage_tokens_are_a_404_page(client, ws, driver, settings, change):
    links = await _links(client, ws, driver, settings)
    token = links["path"].removeprefix("/u/")
    altered = {
        "truncate": token[:-5],
        "garbage": "not-a-token",
        "empty-ish": "A",
        "long": "A" * 2000,
    }[change]
    for method in ("GET", "POST"):
        response = await client.request(method, f"/u/{altered}")
        assert response.status_code == 404
        assert response.headers["content-type"].startswith("text/html")
        assert "Link not valid" in response.text
    assert (await _contact(client, ws, links["contact"]))["status"] == "subscribed"


async def test_tokens_made_elsewhere_are_a_404(client, factory, ws, driver, settings):
    """Signed with another installation's secret, for another purpose, or naming this contact
    under another workspace: none of them names anything here."""
    links = await _links(client, ws, driver, settings)
    other = await factory.workspace("pro")
    parts = (ws.workspace_id, links["contact"], links["row"])
    forged = {
        "other secret": tokens.sign("another-installation", addresses.UNSUBSCRIBE, *parts),
        "other purpose": tokens.sign(settings.resolved_secret_key, addresses.PREFERENCES, *parts),
        "other workspace": addresses.unsubscribe_url(
            settings, other.workspace_id, links["contact"], links["row"]
        ).rsplit("/", 1)[1],
    }
    for name, token in forged.items():
        assert (await client.get(f"/u/{token}")).status_code == 404, name
        assert (await client.post(f"/u/{token}")).status_code == 404, name
    assert (await _contact(client, ws, links["contact"]))["status"] == "subscribed"


async def test_the_404_page_speaks_the_browsers_language(client):
    page = await client.get("/u/nothing", headers={"accept-language": "de-DE,de;q=0.9"})
    assert page.status_code == 404 and "Ungültiger Link" in page.text


@pytest.mark.parametrize("mode", ["delete", "erase"])
async def test_a_deleted_contacts_link_is_a_404_page(client, db, ws, driver, settings, mode):
    """Chosen: 404, like an altered link. The contact is gone (nothing to show, and nothing of
    an erased person may be shown); its address is already suppressed as `deleted`, so no more
    mail goes to it."""
    links = await _links(client, ws, driver, settings)
    await ok(
        await client.delete(
            f"/api/v1/contacts/{links['contact']}", params={"mode": mode}, headers=ws.headers
        )
    )
    for method in ("GET", "POST"):
        page = await client.request(method, links["path"])
        assert page.status_code == 404
        assert "Link not valid" in page.text and "jane" not in page.text
    assert (await get_campaign(client, ws, links["campaign"]))["stats"]["unsubscribed"] == 0


async def test_names_are_escaped(client, db, factory, driver, settings):
    ws = await factory.workspace("pro", name="<script>alert(1)</script> & Co")
    links = await _links(
        client,
        ws,
        driver,
        settings,
        email="o'brien+x@mailtest.io",
        first_name="<script>alert(2)</script>",
        last_name='"><img src=x onerror=alert(3)>',
    )
    for page in (await client.get(links["path"]), await client.post(links["path"])):
        assert page.status_code == 200
        assert "<script>" not in page.text and "<img" not in page.text
        assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; Co" in page.text
        assert "o&#39;brien+x@mailtest.io" in page.text


async def test_two_posts_at_once_unsubscribe_once(client, db, ws, driver, settings):
    """The mailbox's one-click POST and the person's own click arriving together."""
    links = await _links(client, ws, driver, settings)
    answers = await asyncio.gather(
        client.post(links["path"], content=b"List-Unsubscribe=One-Click", headers=ONE_CLICK),
        client.post(links["path"]),
        client.post(links["path"], content=b"List-Unsubscribe=One-Click", headers=ONE_CLICK),
    )
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert sum("will no longer receive emails" in a.text for a in answers) == 1
    assert len(await events_of(db, ws.workspace_id, "contact.unsubscribed")) == 1
    assert (await get_campaign(client, ws, links["campaign"]))["stats"]["unsubscribed"] == 1
