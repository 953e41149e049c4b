"""The subscriber pages in a real browser (Chromium through Playwright), as a subscriber meets
them: the campaign email as a mail client shows it, then its preferences, web-view and
unsubscribe links, the double opt-in email and page, and a broken link. Each is photographed
at desktop and phone width (build/screenshots/) and must not scroll sideways on a phone;
forms are used with labels and the keyboard; the browser reports no error (a CSP violation
would be one)."""

from __future__ import annotations

from tests.browser import look
from tests.pages.test_confirmation import _link, _setup, _status
from tests.sending.conftest import verified_domain
from tests.sending.helpers import make_campaign, make_contacts, make_list, ok, send_campaign
from tests.tracking.helpers import html_of

JANE = "jane@mail.example"
NEWSLETTER = """<html><body style="margin:0;background:#f4f4f5;font-family:Arial,sans-serif">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0"><tr>
<td align="center" style="padding:24px 12px">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0"
 style="max-width:600px;background:#ffffff;border-radius:8px">
<tr><td style="padding:20px 32px;border-bottom:1px solid #e4e4e7;font-size:20px">
<strong>Shop</strong></td></tr>
<tr><td style="padding:32px">
<h1 style="margin:0 0 16px;font-size:24px">Hi {{ first_name | default('there') }},
the autumn sale is on</h1>
<p style="line-height:1.5;margin:0 0 24px">Everything in the shop is 20% off until Sunday.</p>
<a href="https://shop.example/sale" style="display:inline-block;background:#1d4ed8;
color:#ffffff;padding:12px 20px;border-radius:6px;text-decoration:none">Shop the sale</a>
</td></tr>
<tr><td style="padding:16px 32px;font-size:13px;color:#52525b;border-top:1px solid #e4e4e7">
<a href="{{ unsubscribe_url }}">Unsubscribe</a> &middot;
<a href="{{ preferences_url }}">Preferences</a> &middot;
<a href="{{ webview_url }}">View online</a></td></tr>
</table></td></tr></table></body></html>"""


async def _contact(client, ws):
    found = await ok(await client.get(f"/api/v1/contacts?q={JANE}", headers=ws.headers))
    return found["contacts"][0]


async def _links(page) -> dict[str, str]:
    pairs = await page.eval_on_selector_all(
        "a", "links => links.map(a => [a.textContent.trim(), a.href])"
    )
    return dict(pairs)


async def test_a_subscriber_uses_the_links_of_a_campaign(
    live_server, page, client, db, ws, sink, driver
):
    await verified_domain(client, db, ws)
    identity = {"from_email": "news@shop.example", "from_name": "Shop"}
    await ok(await client.patch("/api/v1/sending", json=identity, headers=ws.headers))
    weekly = await make_list(client, ws, name="Weekly news")
    offers = await ok(
        await client.post("/api/v1/lists", json={"name": "Offers"}, headers=ws.headers), 201
    )
    await make_contacts(client, ws, [JANE], weekly)
    campaign = await make_campaign(client, ws, weekly, html_content=NEWSLETTER, name="Autumn")
    await send_campaign(client, ws, campaign["id"])
    await driver.drain()

    # The email as a mail client shows it.
    await page.set_content(html_of(sink.received[-1].data))
    await look(page, "email", "campaign")
    links = await _links(page)
    assert links["Shop the sale"].startswith(f"{live_server}/l/")  # tracked

    # Preferences: labelled fields, used as a person would.
    answer = await page.goto(links["Preferences"])
    assert answer.status == 200
    assert "default-src 'none'" in answer.headers["content-security-policy"]
    assert await page.title() == "Your email preferences"
    assert "Choose what Shop sends to jane@mail.example." in await page.inner_text("main")
    await look(page, "pages", "preferences")
    order = []
    for _ in range(7):  # the keyboard reaches every control, in reading order
        await page.keyboard.press("Tab")
        order.append(await page.evaluate("document.activeElement.name"))
    assert order == ["list", "list", "first_name", "last_name", "language", "action", "action"]
    await page.get_by_label("First name").fill("Jane")
    await page.get_by_label("Offers").check()
    await page.get_by_label("Language").select_option("fr")
    async with page.expect_navigation():
        await page.get_by_role("button", name="Save").click()
    assert await page.get_by_role("status").inner_text() == "Vos préférences sont enregistrées."
    assert await page.get_attribute("html", "lang") == "fr"
    await look(page, "pages", "preferences-saved-fr")
    contact = await _contact(client, ws)
    assert (contact["first_name"], contact["language"]) == ("Jane", "fr")
    joined = await ok(
        await client.get(f"/api/v1/lists/{offers['list']['id']}/contacts", headers=ws.headers)
    )
    assert [c["email"] for c in joined["contacts"]] == [JANE]

    # The web view: the message as sent.
    answer = await page.goto(links["View online"])
    assert answer.status == 200
    assert "the autumn sale is on" in await page.inner_text("body")
    await look(page, "pages", "webview")

    # Unsubscribe, in the language the subscriber just chose.
    answer = await page.goto(links["Unsubscribe"])
    assert answer.status == 200
    await look(page, "pages", "unsubscribe-fr")
    async with page.expect_navigation():
        await page.get_by_role("button", name="Me désabonner").click()
    assert await page.inner_text("h1") == "Vous êtes désabonné"
    await look(page, "pages", "unsubscribed-fr")
    assert (await _contact(client, ws))["status"] == "unsubscribed"

    # A link that does not work.
    answer = await page.goto(f"{live_server}/p/not-a-real-token")
    assert answer.status == 404
    assert await page.inner_text("h1") == "Link not valid"
    await look(page, "pages", "not-found")
    assert page.errors == []


async def test_double_opt_in_from_the_email_to_the_confirmed_page(
    live_server, page, client, db, ws, sink, driver
):
    list_id, contact_id = await _setup(client, db, ws)
    url = f"/api/v1/lists/{list_id}/contacts/{contact_id}/confirmation"
    assert (await client.post(url, headers=ws.headers)).status_code == 202
    await driver.drain()
    message = sink.received[-1].parsed()
    html = message.get_body(("html",))
    if html is not None:
        await page.set_content(html.get_content())
        await look(page, "email", "confirmation")

    answer = await page.goto(live_server + _link(sink))
    assert answer.status == 200
    assert await page.inner_text("h1") == "Confirm your subscription"
    assert "wants to receive Weekly from Shop." in await page.inner_text("main")
    await look(page, "pages", "confirm")
    await page.get_by_role("button", name="Confirm").focus()
    async with page.expect_navigation():
        await page.keyboard.press("Enter")
    assert await page.inner_text("h1") == "Subscription confirmed"
    await look(page, "pages", "confirmed")
    assert await _status(client, ws, list_id) == ["confirmed"]
    assert page.errors == []
