"""The overview and the Contacts pages in Chromium: filters and search by keyboard and mouse,
a contact's page with a flagged custom field corrected, the delete question; screenshots at
desktop and phone width (build/screenshots/dashboard/), labels, contrast, no browser error."""

from __future__ import annotations

from PIL import Image
from playwright.async_api import expect

from tests.browser import SCREENSHOTS
from tests.dashboard.browsing import (
    checked,
    choose_password,
    flashes,
    relaid,
    settled,
    submit,
)
from tests.dashboard.helpers import make_person


async def test_contacts_in_a_browser(live_server, page, client, db, settings, ws):
    for n in range(60):
        made = await client.post(
            "/api/v1/contacts",
            json={"email": f"reader{n:02d}@shop.example", "first_name": f"Reader {n}"},
            headers=ws.headers,
        )
        assert made.status_code == 201
    jane = await client.post(
        "/api/v1/contacts",
        json={"email": "jane@shop.example", "first_name": "Jane", "custom_fields": {"age": "old"}},
        headers=ws.headers,
    )
    changed = await client.patch(
        "/api/v1/custom-fields/age",
        json={"type": "number", "confirm_violations": True},
        headers=ws.headers,
    )
    assert changed.status_code == 200
    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@shop.example")
    )
    assert "61" in await page.locator(".tiles").inner_text()
    await checked(page, "overview-figures")

    async with page.expect_navigation():
        await (
            page.get_by_role("navigation", name="Main").get_by_role("link", name="Contacts").click()
        )
    assert "61 contacts match." in await page.inner_text("main")
    await checked(page, "contacts")
    await page.get_by_label("Search").fill("jane")
    await page.keyboard.press("Enter")
    await page.wait_for_url("**/app/contacts?q=jane*")
    assert "1 contact match." in await page.inner_text("main")
    await checked(page, "contacts-search")

    async with page.expect_navigation():
        await page.get_by_role("link", name="jane@shop.example").click()
    age = page.get_by_label("Age (number)")
    assert await age.get_attribute("aria-invalid") == "true"
    await checked(page, "contact")
    await age.fill("41")
    await submit(page, "Save")
    assert "Contact saved." in await flashes(page)
    assert await page.get_by_label("Age (number)").get_attribute("aria-invalid") is None
    stored = await client.get(
        f"/api/v1/contacts/{jane.json()['contact']['id']}", headers=ws.headers
    )
    assert stored.json()["contact"]["custom_fields"]["age"] == 41

    async with page.expect_navigation():
        await page.get_by_role("link", name="Delete this contact…").click()
    await checked(page, "contact-delete")
    await submit(page, "Delete contact")
    assert "jane@shop.example is deleted." in await flashes(page)
    assert page.errors == []


async def test_lists_and_tags_in_a_browser(live_server, page, client, db, settings, ws):
    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@shop.example")
    )
    for kinds, name in (("Lists", "Newsletter"), ("Tags", "VIP")):
        async with page.expect_navigation():
            await (
                page.get_by_role("navigation", name="Main").get_by_role("link", name=kinds).click()
            )
        await page.get_by_label("Name").fill(name)
        await submit(page, f"Create {kinds[:-1].lower()}")
        assert f"“{name}” created." in (await flashes(page))[0]
        await checked(page, kinds.lower())
    swatch = page.locator(".swatch").first
    assert await swatch.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(99, 102, 241)"
    async with page.expect_navigation():
        await page.get_by_role("link", name="Change VIP").click()
    await checked(page, "tag")
    assert page.errors == []


async def test_a_field_type_change_asks_first(live_server, page, client, db, settings, ws):
    made = await client.post(
        "/api/v1/contacts",
        json={"email": "a@shop.example", "custom_fields": {"age": "old"}},
        headers=ws.headers,
    )
    assert made.status_code == 201
    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@shop.example")
    )
    async with page.expect_navigation():
        await page.get_by_role("navigation", name="Main").get_by_role("link", name="Fields").click()
    await checked(page, "fields")
    await page.get_by_text("Change…").click()
    await page.get_by_label("Type").first.select_option("number")
    answer = await submit(page, "Save age")
    assert answer.status == 409
    assert "Stored values do not fit" in await page.get_by_role("alert").inner_text()
    await checked(page, "fields-conflict")
    await submit(page, "Apply anyway")
    assert "1 stored value(s) do not fit and are flagged." in (await flashes(page))[0]
    assert page.errors == []


async def test_importing_5000_rows_with_a_changed_mapping(
    live_server, page, client, db, settings, ws
):
    lines = ["Email,Prénom,Stadt"] + [
        f"r{n:05d}@mailtest.io,Name {n},Town {n % 7}" for n in range(5000)
    ]
    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@shop.example")
    )
    await page.goto(f"{live_server}/app/import")
    await checked(page, "import")
    await page.get_by_label("A CSV file").set_input_files(
        {"name": "people.csv", "mimeType": "text/csv", "buffer": "\n".join(lines).encode()}
    )
    await submit(page, "Upload and continue")
    assert await page.inner_text("h1") == "Match the columns of people.csv"
    await checked(page, "import-mapping")
    await page.get_by_label("What “Prénom” becomes").select_option("first_name")
    await page.get_by_label("Tag them (optional; several separated by ; or |").fill("imported")
    await submit(page, "Import")
    state = page.locator("#import-state")
    await state.get_by_text("Imported: 5,000 new").wait_for(timeout=60_000)
    assert await state.locator("progress").get_attribute("value") == "100"
    # The heading and, swapped in by htmx, the tab's title say that it finished.
    assert await page.inner_text("h1") == "Import finished"
    assert await page.title() == "Import finished · Mailroom"
    await checked(page, "import-done")
    found = await client.get("/api/v1/contacts", params={"q": "r00042@"}, headers=ws.headers)
    [contact] = found.json()["contacts"]
    assert contact["first_name"] == "Name 42" and contact["custom_fields"]["stadt"] == "Town 0"
    assert page.errors == []


async def test_a_segment_counts_as_conditions_are_added(
    live_server, page, client, db, settings, ws
):
    for n in range(5):
        email = f"m{n}@mailtest.io" if n < 3 else f"o{n}@other.io"
        made = await client.post(
            "/api/v1/contacts",
            json={"email": email, "first_name": "Zed" if n == 0 else "Amy"},
            headers=ws.headers,
        )
        assert made.status_code == 201
    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@shop.example")
    )
    await page.goto(f"{live_server}/app/segments/new")
    await page.get_by_label("Name").fill("Mailtest people")
    await page.get_by_label("Operator of condition 1").select_option("ends_with")
    await page.get_by_label("Value of condition 1").fill("@mailtest.io")
    await page.get_by_label("Value of condition 1").press("Tab")
    count = page.locator("#segment-count .figure")
    await page.wait_for_function(
        "() => (document.querySelector('#segment-count .figure') || {}).textContent?.startsWith('3')"
    )
    await checked(page, "segment-builder")
    await page.get_by_role("button", name="Add a condition").click()
    field = page.get_by_label("Field of condition 2")
    assert page.url.endswith("/app/segments/new")  # updated in place
    await field.wait_for()
    await relaid(page, "/app/segments/builder", field.select_option("first_name"))
    await page.get_by_label("Operator of condition 2").select_option("eq")
    await page.get_by_label("Value of condition 2").fill("Zed")
    await page.get_by_label("Value of condition 2").press("Tab")
    await page.wait_for_function(
        "() => (document.querySelector('#segment-count .figure') || {}).textContent?.startsWith('1')"
    )
    assert "1" in await count.inner_text()
    # The second condition into a group of its own: the group's match appears in place.

    await settled(page)
    await relaid(
        page,
        "/app/segments/builder",
        page.get_by_label("Group of condition 2").select_option(label="a new group"),
    )
    await page.get_by_label("Group 1 matches").select_option("any")
    await page.wait_for_function(
        "() => (document.querySelector('#segment-count .figure') || {}).textContent?.startsWith('1')"
    )
    await checked(page, "segment-group")
    await page.get_by_role("button", name="Save segment").click()
    await page.wait_for_function(
        "() => /\\/app\\/segments\\/[0-9a-f-]{36}$/.test(location.pathname)"
    )
    await page.wait_for_load_state()
    assert "Segment “Mailtest people” saved." in (await flashes(page))[0]
    await checked(page, "segment-saved")
    assert page.errors == []


async def test_a_template_written_and_previewed_as_a_contact(
    live_server, page, client, db, settings, ws, tmp_path
):
    made = await client.post(
        "/api/v1/contacts",
        json={"email": "ann@mailtest.io", "first_name": "Ann"},
        headers=ws.headers,
    )
    assert made.status_code == 201
    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@shop.example")
    )
    await page.goto(f"{live_server}/app/templates/new")
    await page.get_by_label("Name", exact=True).fill("Welcome")
    await page.get_by_label("Subject", exact=True).fill("Hi {{ first_name }}")
    await page.get_by_label("HTML", exact=True).fill(
        "<h1 style='color:#b42318'>Hello {{ first_name | default('there') }}</h1>"
    )
    await submit(page, "Save template")
    await page.get_by_label("As the contact with the address").fill("ann@mailtest.io")
    await submit(page, "Show")
    desktop = page.frame_locator("iframe.desktop")
    heading = desktop.locator("h1")
    # (Retrying reads: each frame loads the saved version, then the draft posted into it.)
    await expect(heading).to_have_text("Hello Ann")
    # The email's own inline style applies inside its frame.
    await expect(heading).to_have_css("color", "rgb(180, 35, 24)")
    await expect(page.frame_locator("iframe.phone").first.locator("h1")).to_have_text("Hello Ann")

    # The previews follow the draft as it is typed, before it is saved.
    await page.get_by_label("HTML", exact=True).fill("<h1>Changed for {{ first_name }}</h1>")
    await expect(heading).to_have_text("Changed for Ann")
    # An image uploaded beside the editor (in place) and inserted at the cursor.
    picture = tmp_path / "logo.png"
    Image.new("RGB", (40, 20), (10, 120, 200)).save(picture)
    await page.get_by_label("Upload an image").set_input_files(str(picture))
    await page.get_by_role("button", name="Upload", exact=True).click()
    await page.get_by_role("status").filter(has_text="Image “logo.png” uploaded.").wait_for()
    await page.get_by_label("HTML", exact=True).press("End")
    await page.get_by_role("button", name="Insert logo.png").click()
    assert '<img src="' in await page.get_by_label("HTML", exact=True).input_value()
    await expect(desktop.locator("img")).to_have_count(1)
    await submit(page, "Save template")
    assert "Template “Welcome” saved." in (await flashes(page))[0]
    await checked(page, "template")
    # A full-page screenshot leaves sandboxed frames blank: the previews, photographed alone.
    await page.locator(".previews").screenshot(
        path=str(SCREENSHOTS / "dashboard" / "template-previews.png")
    )
    assert page.errors == []
