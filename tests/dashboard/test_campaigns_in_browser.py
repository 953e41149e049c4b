"""A campaign in Chromium: written on the page, its recipients counted as the audience is
ticked (htmx, in place), sent, and its report filling in after a tracked link in the received
email is clicked; screenshots of the editor and the report at both widths."""

from __future__ import annotations

import asyncio
import re
import time

import httpx
from playwright.async_api import expect

from tests.automations.helpers import run_due
from tests.dashboard.browsing import checked, choose_password, flashes, relaid, submit
from tests.dashboard.helpers import make_person
from tests.sending.conftest import driver, sink, verified_domain  # noqa: F401
from tests.sending.helpers import HTML, make_contacts, make_list


async def test_a_campaign_sent_and_its_report(
    live_server,
    page,
    client,
    db,
    settings,
    ws,
    sink,  # noqa: F811
    driver,  # noqa: F811
):
    await verified_domain(client, db, ws)
    news = await make_list(client, ws, name="News")
    await make_contacts(client, ws, [f"r{n}@mailtest.io" for n in range(4)], news)
    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@shop.example")
    )
    await page.goto(f"{live_server}/app/campaigns/new")
    await page.get_by_label("Name (only you see it)").fill("Spring sale")
    await page.get_by_label("Subject", exact=True).fill("Spring is here")
    await page.get_by_label("HTML", exact=True).fill(HTML)
    await page.get_by_label("From email (empty").fill("news@shop.example")
    await page.get_by_role("group", name="Lists", exact=True).get_by_label("News").check()
    count = page.locator("#recipient-count")
    await count.get_by_text("4 subscribed contacts would receive it now.").wait_for()
    await checked(page, "campaign-editor")
    await submit(page, "Save campaign")
    assert "Campaign “Spring sale” saved." in (await flashes(page))[0]
    await page.get_by_label("Send it now to 4 contacts").check()
    await submit(page, "Send now")
    await driver.drain()
    await page.reload()
    assert "4 of 4 sent" in await page.inner_text("#progress")

    mail = sink.received[-1].parsed()
    body = mail.get_body(("html",)).get_content()
    link = re.search(r'href="(http[^"]+/l/[^"]+)"', body).group(1)
    async with httpx.AsyncClient() as reader:
        clicked = await reader.get(link, headers={"user-agent": "Mozilla/5.0 Chrome/130.0"})
        assert clicked.status_code == 302
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        await page.reload()
        if "25.0 %" in await page.inner_text(".tiles"):
            break
        await asyncio.sleep(0.1)
    tiles = await page.inner_text(".tiles")
    assert "25.0 %" in tiles  # clicked (and so opened): one of four
    assert await page.locator("svg.chart rect").count() >= 2
    await checked(page, "campaign-report")
    assert page.errors == []


async def test_a_picked_template_fills_the_editor_and_its_preview(
    live_server, page, client, db, settings, ws
):
    """Issue 25: choosing a template filled nothing until the campaign was saved, and the
    editor had no preview. Now the choice fills subject and content in place (htmx) and the
    sandboxed preview shows it; the banner says mail only goes to the outbox."""
    template = await client.post(
        "/api/v1/templates",
        json={
            "name": "Welcome",
            "subject": "Welcome aboard",
            "html_content": "<h1>Hello {{ first_name | default('friend') }}</h1>",
        },
        headers=ws.headers,
    )
    assert template.status_code == 201, template.text
    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@shop.example")
    )
    assert "No email leaves this installation yet." in await page.inner_text(".banner")
    await page.goto(f"{live_server}/app/campaigns/new")
    await page.get_by_label("Name (only you see it)").fill("Spring sale")
    await relaid(
        page,
        "/app/campaigns/template",
        page.get_by_label("Fill from a template").select_option(label="Welcome"),
    )
    await expect(page.get_by_label("Subject", exact=True)).to_have_value("Welcome aboard")
    await expect(page.get_by_label("HTML", exact=True)).to_have_value(
        "<h1>Hello {{ first_name | default('friend') }}</h1>"
    )
    assert await page.get_by_label("Name (only you see it)").input_value() == "Spring sale"
    heading = page.frame_locator("iframe.desktop").locator("h1")
    await expect(heading).to_have_text("Hello Jane")  # the sample contact
    await page.get_by_label("HTML", exact=True).fill("<h1>Changed</h1>")
    await expect(heading).to_have_text("Changed")
    await checked(page, "campaign-template")
    assert page.errors == []


async def test_a_form_built_submitted_and_confirmed(
    live_server,
    page,
    browser,
    client,
    db,
    settings,
    ws,
    sink,  # noqa: F811
    driver,  # noqa: F811
):
    await verified_domain(client, db, ws)
    identity = await client.patch(
        "/api/v1/sending",
        json={"from_email": "news@shop.example", "from_name": "Shop"},
        headers=ws.headers,
    )
    assert identity.status_code == 200, identity.text
    news = await make_list(client, ws, name="News")
    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@shop.example")
    )
    await page.goto(f"{live_server}/app/forms/new")
    # The preview follows the form as it is built, before it is saved.
    await page.get_by_label("Label of First name").fill("Your first name")
    preview = page.frame_locator("iframe.preview")
    await expect(preview.get_by_text("Your first name")).to_have_count(1)
    await page.get_by_label("Label of First name").fill("")
    await page.get_by_label("Name", exact=True).fill("Footer signup")
    await page.get_by_role("group", name="Join these lists").get_by_label("News").check()
    await submit(page, "Save form")
    assert "Form “Footer signup” saved." in (await flashes(page))[0]
    await expect(page.frame_locator("iframe.preview").locator("form")).to_have_count(1)
    await checked(page, "form-builder")
    hosted = await page.get_by_label("Hosted page").input_value()

    visitor_context = await browser.new_context()
    visitor = await visitor_context.new_page()
    await visitor.goto(hosted)
    await visitor.get_by_label("Email").fill("nia@mailtest.io")
    await visitor.get_by_label("First name").fill("Nia")
    async with visitor.expect_navigation():
        await visitor.get_by_role("button").last.click()
    await driver.drain()
    mail = sink.received[-1].parsed()
    assert mail["To"] == "Nia <nia@mailtest.io>"  # the name the form gave
    link = re.search(r"(http\S+/f/confirm/\S+)", mail.get_body(("plain",)).get_content()).group(1)
    await visitor.goto(link)
    async with visitor.expect_navigation():
        await visitor.get_by_role("button").first.click()
    await visitor_context.close()

    members = await client.get(f"/api/v1/lists/{news}/contacts", headers=ws.headers)
    [member] = members.json()["contacts"]
    assert member["email"] == "nia@mailtest.io" and member["membership"]["status"] == "confirmed"
    await page.reload()
    assert "1 submission, 1 confirmed." in await page.inner_text("main")
    assert page.errors == []


async def test_a_two_step_automation_a_new_contact_goes_through(
    live_server,
    page,
    client,
    db,
    settings,
    ws,
    sink,  # noqa: F811
    driver,  # noqa: F811
):
    await verified_domain(client, db, ws)
    identity = await client.patch(
        "/api/v1/sending", json={"from_email": "news@shop.example"}, headers=ws.headers
    )
    assert identity.status_code == 200
    vip = await client.post("/api/v1/tags", json={"name": "VIP"}, headers=ws.headers)
    template = await client.post(
        "/api/v1/templates",
        json={"name": "Hello", "subject": "Welcome, {{ first_name }}", "html_content": "<p>Hi</p>"},
        headers=ws.headers,
    )
    assert vip.status_code == 201 and template.status_code == 201, template.text
    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@shop.example")
    )
    await page.goto(f"{live_server}/app/automations/new")
    await page.get_by_label("Name", exact=True).fill("Welcome")
    await relaid(  # laid out again in place
        page,
        "/app/automations/save",
        page.get_by_label("Step 1", exact=True).select_option("add_tag"),
    )
    await page.get_by_label("New step").select_option("send_email")
    await submit(page, "Add the step")
    await page.get_by_label("Tag", exact=True).select_option(label="VIP")
    await page.get_by_label("Template", exact=True).select_option(label="Hello")
    await checked(page, "automation-editor")
    await submit(page, "Save automation")
    assert "Automation “Welcome” saved." in (await flashes(page))[0]
    await submit(page, "Activate")
    assert "Active:" in (await flashes(page))[0]

    made = await client.post(
        "/api/v1/contacts",
        json={"email": "new@mailtest.io", "first_name": "Nia"},
        headers=ws.headers,
    )
    assert made.status_code == 201
    await run_due(db, settings)
    await driver.drain()
    contact = await client.get(
        f"/api/v1/contacts/{made.json()['contact']['id']}", headers=ws.headers
    )
    assert [t["name"] for t in contact.json()["contact"]["tags"]] == ["VIP"]
    assert sink.received[-1].parsed()["Subject"] == "Welcome, Nia"
    await page.reload()
    assert "1 completed" in await page.inner_text("main")
    await checked(page, "automation-active")
    assert page.errors == []
