"""Subscriber pages in German, Spanish and Portuguese from the contact's `language`: the
preferences page `/p/{token}` and the double opt-in page `/confirm/{token}` (its `lang`, its
words, the confirmed page); the confirmation email comes from the workspace's sender identity
(`PATCH /api/v1/sending`); a bulk `add_to_list` to a double opt-in list sends no email."""

from __future__ import annotations

import re

import pytest

from tests.sending.conftest import verified_domain
from tests.sending.helpers import make_campaign, make_contacts, make_list, ok, send_campaign
from tests.tracking.helpers import HTML, hrefs, html_of, path_of

# language -> words of the pages in that language (src/mailroom/pages/i18n.py)
WORDS = {
    "de": {
        "prefs": ["Ihre E-Mail-Einstellungen", "Vorname", "Nachname", "Speichern"],
        "unsubscribe_all": "Von allem abmelden",
        "confirm": ["Anmeldung bestätigen", "Bestätigen"],
        "confirmed": "Anmeldung bestätigt",
        "subject": "Bitte bestätigen Sie Ihre Anmeldung zu Weekly",
    },
    "es": {
        "prefs": ["Tus preferencias de correo", "Nombre", "Apellidos", "Guardar"],
        "unsubscribe_all": "Darme de baja de todo",
        "confirm": ["Confirma tu suscripción", "Confirmar"],
        "confirmed": "Suscripción confirmada",
        "subject": "Confirma tu suscripción a Weekly",
    },
    "pt": {
        "prefs": ["Suas preferências de e-mail", "Nome", "Sobrenome", "Salvar"],
        "unsubscribe_all": "Cancelar tudo",
        "confirm": ["Confirme sua inscrição", "Confirmar"],
        "confirmed": "Inscrição confirmada",
        "subject": "Confirme a sua inscrição em Weekly",
    },
}
ENGLISH = ["Your email preferences", "Confirm your subscription", "Subscription confirmed"]
IDENTITY = {"from_email": "hello@shop.example", "from_name": "Shop Team"}


async def _identity(client, db, ws) -> None:
    await verified_domain(client, db, ws)
    await ok(await client.patch("/api/v1/sending", json=IDENTITY, headers=ws.headers))


async def _double_opt_in_list(client, ws) -> str:
    created = await client.post(
        "/api/v1/lists", json={"name": "Weekly", "double_opt_in": True}, headers=ws.headers
    )
    return str((await ok(created, 201))["list"]["id"])


def _page_lang(html: str) -> str:
    return re.search(r'<html lang="([^"]+)"', html).group(1)


def _confirm_link(sink) -> str:
    body = sink.received[-1].parsed().get_body(("plain",)).get_content()
    return "/confirm/" + re.search(r"/confirm/([A-Za-z0-9_-]+)", body).group(1)


async def _members(client, ws, list_id) -> dict[str, str]:
    page = await ok(await client.get(f"/api/v1/lists/{list_id}/contacts", headers=ws.headers))
    return {m["email"]: m["membership"]["status"] for m in page["contacts"]}


@pytest.mark.parametrize("language", sorted(WORDS))
async def test_the_preferences_page_in_the_contacts_language(
    client, db, ws, sink, driver, language
):
    words = WORDS[language]
    email = f"{language}@mail.example"
    await verified_domain(client, db, ws)
    news = await make_list(client, ws)
    await make_contacts(client, ws, [email], news, language=language)
    campaign = await make_campaign(client, ws, news, html_content=HTML)
    await send_campaign(client, ws, campaign["id"])
    await driver.drain()
    [received] = sink.received
    [link] = [path_of(h) for h in hrefs(html_of(received.data)) if "/p/" in h]

    page = await client.get(link)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert _page_lang(page.text) == language
    for word in words["prefs"]:
        assert word in page.text, word
    assert f'value="unsubscribe_all" class="secondary">{words["unsubscribe_all"]}<' in page.text
    assert f'<option value="{language}" selected>' in page.text
    assert not any(english in page.text for english in ENGLISH)

    # Saved, the page answers in the same language (and the language stays).
    saved = await client.post(
        link, data={"list": [news], "first_name": "Ana", "language": language, "action": "save"}
    )
    assert saved.status_code == 200 and _page_lang(saved.text) == language
    contact = (await ok(await client.get(f"/api/v1/contacts?q={email}", headers=ws.headers)))[
        "contacts"
    ][0]
    assert (contact["first_name"], contact["language"]) == ("Ana", language)


@pytest.mark.parametrize("language", sorted(WORDS))
async def test_the_confirmation_page_and_email_in_the_contacts_language(
    client, db, ws, sink, driver, language
):
    words = WORDS[language]
    email = f"{language}@mail.example"
    await _identity(client, db, ws)
    list_id = await _double_opt_in_list(client, ws)
    [contact_id] = await make_contacts(
        client, ws, [email], list_id, status="unconfirmed", language=language
    )
    asked = await client.post(
        f"/api/v1/lists/{list_id}/contacts/{contact_id}/confirmation", headers=ws.headers
    )
    assert (asked.status_code, asked.json()) == (202, {"sent": True})
    await driver.drain()
    [received] = sink.received
    message = received.parsed()
    assert message["Subject"] == words["subject"]
    assert message["To"] == email
    assert message["From"] == f"{IDENTITY['from_name']} <{IDENTITY['from_email']}>"
    assert f'<html lang="{language}">' in message.get_body(("html",)).get_content()
    link = _confirm_link(sink)

    page = await client.get(link)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert _page_lang(page.text) == language
    for word in words["confirm"]:
        assert word in page.text, word
    assert f'<button type="submit">{words["confirm"][1]}</button>' in page.text
    assert not any(english in page.text for english in ENGLISH)
    assert await _members(client, ws, list_id) == {email: "unconfirmed"}

    done = await client.post(link)
    assert done.status_code == 200 and _page_lang(done.text) == language
    assert words["confirmed"] in done.text
    assert await _members(client, ws, list_id) == {email: "confirmed"}


async def test_the_confirmation_email_comes_from_the_sender_identity(client, db, ws, sink, driver):
    await _identity(client, db, ws)
    list_id = await _double_opt_in_list(client, ws)
    [contact_id] = await make_contacts(client, ws, ["jane@mail.example"], list_id)
    url = f"/api/v1/lists/{list_id}/contacts/{contact_id}/confirmation"
    await ok(await client.post(url, headers=ws.headers), 202)
    await driver.drain()
    assert sink.received[-1].parsed()["From"] == "Shop Team <hello@shop.example>"

    # A changed identity is the one the next confirmation email comes from.
    changed = {"from_email": "news@shop.example", "from_name": "Shop News"}
    await ok(await client.patch("/api/v1/sending", json=changed, headers=ws.headers))
    await ok(await client.post(url, headers=ws.headers), 202)
    await driver.drain()
    assert len(sink.received) == 2
    message = sink.received[-1].parsed()
    assert message["From"] == "Shop News <news@shop.example>"
    assert sink.received[-1].sender.endswith("@shop.example")  # its return path, not another


async def test_a_bulk_add_to_a_double_opt_in_list_sends_no_email(client, db, ws, sink, driver):
    await _identity(client, db, ws)
    list_id = await _double_opt_in_list(client, ws)
    emails = ["a@mail.example", "b@mail.example", "c@mail.example"]
    ids = await make_contacts(client, ws, emails)
    added = await client.post(
        "/api/v1/contacts/bulk",
        json={"action": "add_to_list", "contact_ids": ids, "list_id": list_id},
        headers=ws.headers,
    )
    body = await ok(added)
    assert body["success"] is True and body["added"] == 3
    assert await _members(client, ws, list_id) == dict.fromkeys(emails, "unconfirmed")
    await driver.drain()
    assert sink.received == []

    # The sink and engine do deliver: asking for one confirmation sends exactly one email.
    url = f"/api/v1/lists/{list_id}/contacts/{ids[0]}/confirmation"
    await ok(await client.post(url, headers=ws.headers), 202)
    await driver.drain()
    assert [r.recipients for r in sink.received] == [[emails[0]]]
