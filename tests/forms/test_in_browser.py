"""The signup forms in a real browser (Chromium through Playwright), as a visitor meets them:
the hosted page used with labels and the keyboard, its error messages (in English and in
French), the thank-you page, double opt-in from the form to the confirmed page, and the embed
snippet pasted into a page of another site. Each page is photographed at desktop and phone
width (build/screenshots/forms/) and must not scroll sideways on a phone; the browser reports
no error (a CSP violation would be one)."""

from __future__ import annotations

from tests.browser import DESKTOP, console_errors, look
from tests.forms.helpers import (
    confirm_link,
    contact_by_email,
    make_form,
    make_list,
    memberships,
    sender,
)
from tests.sending.helpers import ok

JANE = "jane@mail.example"
AGREE = "I agree to receive the weekly email"
CONSENT = "One email a week about new products. Unsubscribe at any time."
# Who has focus: a control's name, else its tag (the button has no name).
FOCUSED = "(e => e.name || e.tagName.toLowerCase())(document.activeElement)"
# The browser would stop an empty submission itself: the server's own checks are the test's.
NO_BROWSER_CHECKS = "document.querySelectorAll('[required]').forEach(e => e.required = false)"


async def _signup_form(client, ws) -> tuple[dict, str]:
    """Email, first name, a required dropdown and a required consent checkbox, in English and
    French, on one list; (the form, the list id)."""
    for body in (
        {"key": "plan", "label": "Plan", "type": "dropdown", "options": ["Basic", "Pro"]},
        {"key": "agree", "label": AGREE, "type": "boolean"},
    ):
        await ok(await client.post("/api/v1/custom-fields", json=body, headers=ws.headers), 201)
    list_id = await make_list(client, ws, "Weekly")
    form = await make_form(
        client,
        ws,
        name="Join the weekly email",
        fields=[
            {"key": "email"},
            {"key": "first_name"},
            {"key": "plan", "required": True},
            {"key": "agree", "required": True},
        ],
        list_ids=[list_id],
        consent_text=CONSENT,
        languages=["en", "fr"],
    )
    return form, list_id


async def _submit(page, button: str):
    """Clicks the submit button and waits for the page it leads to; its response."""
    async with page.expect_navigation() as navigation:
        await page.get_by_role("button", name=button).click()
    return await navigation.value


async def _summary(page) -> list[str]:
    return [t.strip() for t in await page.get_by_role("alert").locator("li").all_inner_texts()]


async def _error_of(page, label: str) -> str:
    """The message the field labelled `label` is described by."""
    field = page.get_by_label(label, exact=True)
    assert await field.get_attribute("aria-invalid") == "true"
    described = await field.get_attribute("aria-describedby")
    return (await page.locator(f"#{described}").inner_text()).strip()


async def test_a_visitor_signs_up_on_the_hosted_page(live_server, page, client, ws):
    form, list_id = await _signup_form(client, ws)
    answer = await page.goto(f"{live_server}/f/{form['id']}")
    assert answer.status == 200
    assert "default-src 'none'" in answer.headers["content-security-policy"]
    assert await page.title() == "Join the weekly email"
    assert await page.get_attribute("html", "lang") == "en"
    assert CONSENT in await page.inner_text("main")
    await look(page, "forms", "form")
    assert page.errors == []

    # The keyboard reaches every control in reading order, never the honeypot.
    order = []
    for _ in range(5):
        await page.keyboard.press("Tab")
        order.append(await page.evaluate(FOCUSED))
    assert order == ["email", "first_name", "plan", "agree", "button"]
    for _ in range(3):  # on past the button: out of the page, and round again
        await page.keyboard.press("Tab")
        assert await page.evaluate(FOCUSED) != "hp"
    honeypot = page.locator("input[name=hp]")
    assert await honeypot.get_attribute("tabindex") == "-1"
    box = await honeypot.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 0  # off the screen
    # Every field has its label; the optional one says so.
    for label in ("Email", "First name (optional)", "Plan", AGREE):
        assert await page.get_by_label(label, exact=True).count() == 1
    assert await page.get_by_label("Plan").evaluate("e => e.options[0].text") == "Choose…"

    # Sent empty (past the browser's own checks): a summary and a message at each field.
    await page.evaluate(NO_BROWSER_CHECKS)
    answer = await _submit(page, "Subscribe")
    assert answer.status == 400
    assert await page.inner_text("h1") == "Join the weekly email"
    alert = page.get_by_role("alert")
    assert "Please check the form" in await alert.inner_text()
    summary = await _summary(page)
    assert summary[:2] == ["Email is required", "Plan is required"]
    assert len(summary) == 3 and summary[2].startswith(AGREE)
    assert await _error_of(page, "Email") == "Email is required"
    assert await _error_of(page, "Plan") == "Plan is required"
    assert await _error_of(page, AGREE) == summary[2]
    assert await page.get_by_label("First name").get_attribute("aria-invalid") is None
    for href in await alert.locator("a").evaluate_all("links => links.map(a => a.hash)"):
        assert await page.locator(href).count() == 1  # each summary line leads to its field
    await page.get_by_role("link", name="Plan is required").focus()
    await page.keyboard.press("Enter")
    assert await page.evaluate(FOCUSED) == "plan"
    await look(page, "forms", "form-errors")
    assert page.errors == []

    # An address the browser takes but the server does not: the other answers are kept.
    await page.get_by_label("Email", exact=True).fill("jane@mail")
    await page.get_by_label("First name").fill("Jane")
    await page.get_by_label("Plan").select_option("Pro")
    await page.get_by_label(AGREE).check()
    answer = await _submit(page, "Subscribe")
    assert answer.status == 400
    assert await _summary(page) == ["Email must be a valid email address"]
    assert await page.get_by_label("Email", exact=True).input_value() == "jane@mail"
    assert await page.get_by_label("First name").input_value() == "Jane"
    assert await page.get_by_label("Plan").input_value() == "Pro"
    assert await page.get_by_label(AGREE).is_checked()
    assert page.errors == []

    # Corrected with the keyboard and sent with Enter.
    await page.get_by_label("Email", exact=True).fill("")
    await page.get_by_label("Email", exact=True).focus()
    await page.keyboard.type(JANE)
    async with page.expect_navigation() as navigation:
        await page.keyboard.press("Enter")
    answer = await navigation.value
    assert answer.status == 200
    assert await page.inner_text("h1") == "Thank you"
    assert await page.get_by_role("status").inner_text() == "Thanks for subscribing!"
    assert await page.locator("form").count() == 0
    await look(page, "forms", "form-thanks")
    assert page.errors == []

    contact = await contact_by_email(client, ws, JANE)
    assert contact is not None
    assert (contact["status"], contact["source"], contact["first_name"]) == (
        "subscribed",
        "form",
        "Jane",
    )
    assert contact["language"] == "en"
    assert contact["custom_fields"]["plan"] == "Pro"
    assert contact["custom_fields"]["agree"] is True
    assert contact["custom_fields"]["consent_source"] == f"form:{form['id']}"
    assert await memberships(client, ws, list_id) == {JANE: "confirmed"}


async def test_the_form_speaks_french_to_a_french_browser(live_server, browser, page, client, ws):
    form, _ = await _signup_form(client, ws)
    context = await browser.new_context(viewport=DESKTOP, locale="fr-FR")  # Accept-Language: fr
    try:
        french = await context.new_page()
        french.errors = console_errors(french)
        await _in_french(french, f"{live_server}/f/{form['id']}")
    finally:
        await context.close()

    # ?lang= picks the language whatever the browser asks for (this one asks for English).
    await page.goto(f"{live_server}/f/{form['id']}?lang=fr")
    assert await page.get_attribute("html", "lang") == "fr"
    assert await page.get_by_role("button", name="S'inscrire").count() == 1
    assert page.errors == []
    assert await contact_by_email(client, ws, "jane@mail") is None


async def _in_french(page, url: str) -> None:
    answer = await page.goto(url)
    assert answer.status == 200
    assert await page.get_attribute("html", "lang") == "fr"
    for label in ("E-mail", "Prénom (facultatif)", "Plan", AGREE):
        assert await page.get_by_label(label, exact=True).count() == 1
    assert await page.get_by_label("Plan").evaluate("e => e.options[0].text") == "Choisir…"
    await look(page, "forms", "form-fr")
    assert page.errors == []

    await page.evaluate(NO_BROWSER_CHECKS)
    await page.get_by_label("E-mail", exact=True).fill("jane@mail")
    answer = await _submit(page, "S'inscrire")
    assert answer.status == 400
    assert answer.url.endswith("?lang=fr")
    assert await page.get_attribute("html", "lang") == "fr"
    assert "Veuillez vérifier le formulaire" in await page.get_by_role("alert").inner_text()
    summary = await _summary(page)
    assert summary[:2] == [
        "E-mail doit être une adresse e-mail valide",
        "Plan est obligatoire",
    ]
    assert len(summary) == 3 and summary[2].startswith(AGREE)
    assert await _error_of(page, "E-mail") == summary[0]
    assert await page.get_by_label("E-mail", exact=True).input_value() == "jane@mail"
    await look(page, "forms", "form-errors-fr")
    assert page.errors == []


async def test_double_opt_in_from_the_form_to_the_confirmed_page(
    live_server, page, client, db, ws, sink, driver
):
    await sender(client, db, ws)
    list_id = await make_list(client, ws, "Weekly")
    form = await make_form(
        client,
        ws,
        name="Weekly news",
        fields=[{"key": "email"}, {"key": "first_name"}],
        list_ids=[list_id],
        double_opt_in=True,
    )
    await page.goto(f"{live_server}/f/{form['id']}")
    await page.get_by_label("Email", exact=True).fill(JANE)
    await page.get_by_label("First name").fill("Jane")
    answer = await _submit(page, "Subscribe")
    assert answer.status == 200
    assert await page.inner_text("h1") == "Thank you"
    assert (await page.get_by_role("status").inner_text()).startswith(
        "Almost done: we sent an email to confirm your subscription."
    )
    await look(page, "forms", "double-opt-in-sent")
    assert page.errors == []
    assert await memberships(client, ws, list_id) == {JANE: "unconfirmed"}

    await driver.drain()
    message = sink.received[-1].parsed()
    assert message["To"] == f"Jane <{JANE}>"  # the name the form gave
    # The email as a mail client shows it; its button leads to the confirmation page.
    await page.set_content(message.get_body(("html",)).get_content())
    await look(page, "forms", "confirmation-email")
    button = page.get_by_role("link", name="Yes, subscribe me")
    assert await button.get_attribute("href") == live_server + confirm_link(sink)
    async with page.expect_navigation() as navigation:
        await button.click()
    answer = await navigation.value
    assert answer.status == 200
    assert await page.inner_text("h1") == "Confirm your subscription"
    assert f"Confirm that {JANE} wants to receive Weekly from" in await page.inner_text("main")
    await look(page, "forms", "confirm")
    assert page.errors == []
    assert await memberships(client, ws, list_id) == {JANE: "unconfirmed"}  # opening is not yes

    answer = await _submit(page, "Confirm")
    assert answer.status == 200
    assert await page.inner_text("h1") == "Subscription confirmed"
    assert f"{JANE} will receive Weekly from" in await page.inner_text("main")
    await look(page, "forms", "confirmed")
    assert page.errors == []
    assert await memberships(client, ws, list_id) == {JANE: "confirmed"}
    contact = await contact_by_email(client, ws, JANE)
    assert contact["first_name"] == "Jane"
    assert contact["custom_fields"]["consent_confirmed_at"].endswith("Z")


SHOP = "http://shop.example"
SHOP_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Shop: newsletter</title>
<style>body { font: 16px/1.5 Georgia, serif; margin: 0; color: #222; }
header { background: #14532d; color: #fff; padding: 1rem 1.5rem; font-size: 1.3rem; }
article { max-width: 40rem; margin: 2rem auto; padding: 0 1rem; }</style></head>
<body><header>Shop</header><article><h1>Our weekly email</h1>
<p>New products and offers, every Thursday.</p>
{embed}
</article></body></html>"""


async def test_the_embed_on_another_site_reaches_the_app(live_server, page, client, ws):
    form, list_id = await _signup_form(client, ws)
    embed = await ok(await client.get(f"/api/v1/forms/{form['id']}/embed", headers=ws.headers))
    snippet = embed["embed"]["html"]
    assert f'action="{live_server}/f/{form["id"]}?lang=en"' in snippet

    # The shop's page, from its own origin: the browser asks shop.example, the test answers.
    async def shop(route):
        await route.fulfill(
            status=200,
            content_type="text/html; charset=utf-8",
            body=SHOP_PAGE.replace("{embed}", snippet),
        )

    await page.route(f"{SHOP}/**", shop)
    answer = await page.goto(f"{SHOP}/newsletter")
    assert answer.status == 200
    assert await page.evaluate("location.origin") == SHOP
    for label in ("Email", "First name (optional)", "Plan", AGREE):
        assert await page.get_by_label(label, exact=True).count() == 1
    assert CONSENT in await page.inner_text("article")
    await look(page, "forms", "embed")
    assert page.errors == []

    order = []
    await page.locator("h1").click()
    for _ in range(5):
        await page.keyboard.press("Tab")
        order.append(await page.evaluate(FOCUSED))
    assert order == ["email", "first_name", "plan", "agree", "button"]

    await page.get_by_label("Email", exact=True).fill(JANE)
    await page.get_by_label("First name").fill("Jane")
    await page.get_by_label("Plan").select_option("Basic")
    await page.get_by_label(AGREE).check()
    answer = await _submit(page, "Subscribe")
    assert answer.status == 200
    assert answer.url.startswith(f"{live_server}/f/{form['id']}")
    assert (await answer.request.all_headers())["origin"] == SHOP  # a cross-site post
    assert await page.inner_text("h1") == "Thank you"
    assert await page.get_by_role("status").inner_text() == "Thanks for subscribing!"
    await look(page, "forms", "embed-thanks")
    assert page.errors == []

    contact = await contact_by_email(client, ws, JANE)
    assert contact is not None and contact["first_name"] == "Jane"
    assert contact["custom_fields"]["plan"] == "Basic"
    assert contact["custom_fields"]["agree"] is True
    assert await memberships(client, ws, list_id) == {JANE: "confirmed"}
