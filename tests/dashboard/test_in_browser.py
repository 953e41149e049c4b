"""The dashboard in a real browser (Chromium through Playwright), as a person meets it: an
admin's one-time link to choose a password (refused, then accepted), the overview and its
workspace switcher, the API keys page (a read-only key created, copied, used against the API,
revoked through its confirmation page), signing out and in again; a member's 403 page; the
keyboard on the sign-in page and the overview. Each page is photographed at desktop and phone
width (build/screenshots/dashboard/) and must not scroll sideways on a phone; every control
has a label, text has enough contrast, and the browser reports no error (a CSP violation
would be one)."""

from __future__ import annotations

import httpx
from sqlalchemy import select

from mailroom.models import Person
from mailroom.people import service as people
from tests.browser import look
from tests.dashboard.browsing import FOCUSED, checked, choose_password, flashes, sign_in, submit
from tests.dashboard.helpers import PASSWORD, make_person

ADA = "ada@shop.example"
MO = "mo@shop.example"


async def test_an_admin_signs_in_switches_workspace_and_manages_a_key(
    live_server, page, db, settings, ws, factory
):
    link = await make_person(db, settings, ws, ADA)
    second = await factory.workspace(account_id=ws.account_id, name="Second shop")
    async with db.transaction() as session:
        ada = await session.scalar(select(Person).where(Person.email == ADA))
        await people.set_role(session, ada, second.workspace_id, "admin")

    # The one-time link: choose a password.
    answer = await page.goto(live_server + link)
    assert answer.status == 200
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    assert await page.title() == "Choose your password · Mailroom"
    assert f"You are signing in as {ADA}." in await page.inner_text("main")
    field = page.get_by_label("New password")
    assert await field.get_attribute("autocomplete") == "new-password"
    assert await field.get_attribute("type") == "password"
    help_id = (await field.get_attribute("aria-describedby")).split()[0]
    help_text = await page.locator(f"#{help_id}").inner_text()
    assert help_text == "At least 10 characters, not a common password, and not your email address."
    await checked(page, "set-password")

    # Too short: the browser stops it first and says why...
    await field.fill("short")
    await page.get_by_role("button", name="Save and sign in").click()
    assert await page.evaluate("location.pathname") == link
    assert await field.evaluate("e => e.validity.tooShort")
    assert "10 characters" in await field.evaluate("e => e.validationMessage")
    # ...and the server does too, next to the field, when the browser's check is not there.
    await field.evaluate("e => e.removeAttribute('minlength')")
    answer = await submit(page, "Save and sign in")
    assert answer.status == 400
    alert = page.get_by_role("alert")
    assert await alert.inner_text() == "Use at least 10 characters."
    described = (await field.get_attribute("aria-describedby")).split()
    assert await alert.get_attribute("id") in described
    assert await field.input_value() == ""  # a refused password is not sent back
    await checked(page, "set-password-error")

    # A good one: signed in, on the overview of the first workspace.
    await field.fill(PASSWORD)
    answer = await submit(page, "Save and sign in")
    assert (answer.status, answer.url) == (200, f"{live_server}/app")
    assert await page.title() == "Overview · Mailroom"
    assert await page.get_by_role("status").inner_text() == (
        "Your password is saved. Welcome to Mailroom."
    )
    # `ws` has no name: it is told apart by its id.
    assert await page.inner_text("h1") == f"Workspace {ws.workspace_id[:8]}"
    assert f"Signed in as {ADA}, admin of this workspace." in await page.inner_text("main")
    assert await page.get_by_role("button", name="Sign out", exact=True).count() == 1
    assert await page.get_by_role("button", name="Sign out on every device").count() == 1
    switcher = page.get_by_label("Workspace", exact=True)
    assert await switcher.evaluate("e => [...e.options].map(o => o.text)") == [
        f"Workspace {ws.workspace_id[:8]}",
        "Second shop",
    ]
    await checked(page, "overview")

    # The switcher: to the account's second workspace.
    await switcher.select_option(label="Second shop")
    answer = await submit(page, "Switch")
    assert answer.url == f"{live_server}/app"
    assert await page.get_by_role("status").inner_text() == "You are now in Second shop."
    assert await page.inner_text("h1") == "Second shop"
    assert await switcher.evaluate("e => e.selectedOptions[0].text") == "Second shop"
    await page.reload()  # a flash is shown once; the workspace stays
    assert await flashes(page) == []
    assert await page.inner_text("h1") == "Second shop"
    assert page.errors == []

    # API keys: the second workspace's own key is listed; a read-only one is made.
    async with page.expect_navigation():
        await (
            page.get_by_role("navigation", name="Settings")
            .get_by_role("link", name="API keys")
            .click()
        )
    assert page.url == f"{live_server}/settings/api-keys"
    assert await page.title() == "API keys · Mailroom"
    current = page.get_by_role("navigation", name="Settings").locator("[aria-current=page]")
    assert await current.inner_text() == "API keys"
    rows = page.locator("table tbody tr")
    assert await rows.count() == 1
    assert f"mr_live_{second.api_key.split('_')[2]}_…" in await rows.inner_text()
    assert ws.api_key.split("_")[2] not in await page.inner_text("main")
    assert await page.get_by_label("Full access").is_checked()  # the preset by default
    await checked(page, "api-keys")

    await page.get_by_label("Name").fill("Shop sync")
    await page.get_by_label("Read-only").check()
    answer = await submit(page, "Create key")
    assert answer.status == 201
    created = page.get_by_role("status")
    assert await created.get_by_role("heading").inner_text() == "Key “Shop sync” created"
    assert "it is shown this once" in await created.inner_text()
    shown = page.get_by_label("The new API key")
    secret = await shown.input_value()
    assert secret.startswith("mr_live_")
    assert await shown.get_attribute("readonly") is not None
    row = rows.filter(has_text="Shop sync")
    assert await row.count() == 1
    badges = await row.locator(".badge").all_inner_texts()
    assert badges and all(b.endswith(":read") for b in badges)
    assert secret not in await page.locator("table").inner_text()
    await checked(page, "api-key-created")

    # Copy key: the key is on the clipboard and the button says so.
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server)
    copy = page.get_by_role("button", name="Copy key")
    await copy.click()
    await page.get_by_role("button", name="Copied").wait_for()
    assert await page.evaluate("navigator.clipboard.readText()") == secret
    assert page.errors == []

    async with httpx.AsyncClient(base_url=live_server) as api:
        headers = {"x-api-key": secret}
        assert (await api.get("/api/v1/contacts", headers=headers)).status_code == 200
        write = await api.post(
            "/api/v1/contacts", json={"email": "x@shop.example"}, headers=headers
        )
        assert write.status_code == 403  # read-only

        # Revoke, through the confirmation page.
        async with page.expect_navigation():
            await row.get_by_role("link", name="Revoke Shop sync").click()
        assert await page.title() == "Revoke a key · Mailroom"
        assert await page.inner_text("h1") == "Revoke “Shop sync”?"
        assert "This cannot be undone." in await page.inner_text("main")
        revoke = page.get_by_role("button", name="Revoke key")
        assert await revoke.evaluate("e => getComputedStyle(e).backgroundColor") == (
            "rgb(180, 35, 24)"  # red
        )
        assert await page.get_by_role("link", name="Cancel").get_attribute("href") == (
            "/settings/api-keys"
        )
        assert (await api.get("/api/v1/contacts", headers=headers)).status_code == 200
        await checked(page, "revoke-confirm")
        answer = await submit(page, "Revoke key")
        assert answer.url == f"{live_server}/settings/api-keys"
        assert await page.get_by_role("status").inner_text() == "Key “Shop sync” is revoked."
        assert (await api.get("/api/v1/contacts", headers=headers)).status_code == 401
    row = page.locator("table tbody tr").filter(has_text="Shop sync")
    assert "revoked 20" in await row.inner_text()
    assert await row.get_by_role("link").count() == 0
    assert await page.get_by_label("The new API key").count() == 0  # shown once
    assert page.errors == []

    # Sign out, then in again: a wrong password first.
    answer = await submit(page, "Sign out")
    assert answer.url == f"{live_server}/app/sign-in?signed_out=1"
    assert await page.get_by_role("status").inner_text() == "You are signed out."
    assert await page.locator("header.top").count() == 0
    await checked(page, "signed-out")
    answer = await page.goto(f"{live_server}/app")
    assert answer.url == f"{live_server}/app/sign-in?next=/app"

    answer = await sign_in(page, ADA, "not my password")
    assert answer.status == 400
    assert await page.get_by_role("alert").inner_text() == (
        "That email and password do not match an account."
    )
    assert await page.get_by_label("Email").input_value() == ADA  # kept
    assert await page.get_by_label("Password").input_value() == ""
    await checked(page, "sign-in-error")

    answer = await sign_in(page, ADA, PASSWORD)
    assert (answer.status, answer.url) == (200, f"{live_server}/app")
    assert f"Signed in as {ADA}" in await page.inner_text("main")
    assert page.errors == []


async def test_a_member_gets_the_admins_only_page(live_server, page, db, settings, ws):
    await choose_password(page, live_server, await make_person(db, settings, ws, MO, "member"))
    assert f"Signed in as {MO}, member of this workspace." in await page.inner_text("main")
    nav = page.get_by_role("navigation", name="Settings")
    assert await nav.get_by_role("link", name="API keys").count() == 0
    assert await page.get_by_role("link", name="Manage API keys").count() == 0

    answer = await page.goto(f"{live_server}/settings/api-keys")
    assert answer.status == 403
    assert await page.title() == "Admins only · Mailroom"
    assert await page.inner_text("h1") == "Admins only"
    assert "Only workspace admins can open this page." in await page.inner_text("main")
    assert ws.api_key.split("_")[2] not in await page.content()
    await checked(page, "forbidden")
    async with page.expect_navigation():
        await page.get_by_role("link", name="Back to the overview").click()
    assert page.url == f"{live_server}/app"
    assert page.errors == []


async def test_the_keyboard_on_the_sign_in_page_and_the_overview(
    live_server, page, db, settings, ws
):
    link = await make_person(db, settings, ws, ADA)
    await page.goto(f"{live_server}/app/sign-in")
    await checked(page, "sign-in")
    # The email field has focus on arrival; Tab goes on to the password, then the button.
    assert await page.evaluate(FOCUSED) == "email"
    order = []
    for _ in range(2):
        await page.keyboard.press("Tab")
        order.append(await page.evaluate(FOCUSED))
    assert order == ["password", "button:Sign in"]
    # Typed and sent with the keyboard alone.
    await page.keyboard.press("Shift+Tab")
    await page.keyboard.press("Shift+Tab")
    await page.keyboard.type("nobody@shop.example")
    await page.keyboard.press("Tab")
    await page.keyboard.type("not a password")
    async with page.expect_navigation() as navigation:
        await page.keyboard.press("Enter")
    assert (await navigation.value).status == 400
    assert page.errors == []

    await choose_password(page, live_server, link)
    # The first Tab stop is "Skip to content", shown when it has focus; it leads past the
    # header to the page's own content.
    skip = page.get_by_role("link", name="Skip to content")
    assert not await skip.is_visible() or (await skip.bounding_box())["x"] < 0
    await page.keyboard.press("Tab")
    assert await page.evaluate(FOCUSED) == "a:Skip to content"
    box = await skip.bounding_box()
    assert box is not None and box["x"] >= 0 and box["y"] >= 0
    await look(page, "dashboard", "skip-link")
    assert await page.evaluate(FOCUSED) == "a:Skip to content"  # still, at both widths
    await page.keyboard.press("Enter")
    await page.wait_for_url(f"{live_server}/app#content")  # the fragment lands a moment later
    await page.keyboard.press("Tab")
    # A new workspace's overview starts with its next steps.
    assert await page.evaluate(FOCUSED) == "a:Import your contacts"
    assert page.errors == []


async def test_signing_in_leads_back_to_the_page_asked_for(live_server, page, db, settings, ws):
    await choose_password(page, live_server, await make_person(db, settings, ws, ADA))
    await submit(page, "Sign out")
    answer = await page.goto(f"{live_server}/settings/api-keys")
    assert answer.url == f"{live_server}/app/sign-in?next=/settings/api-keys"
    answer = await sign_in(page, ADA, PASSWORD)
    assert page.errors == []
    assert answer.url == f"{live_server}/settings/api-keys"
