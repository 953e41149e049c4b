"""`/app/imports/platform` in Chromium: the form, a Mailchimp .zip checked (the job page follows
the worker by itself until the result is there), then imported for real; each page
photographed at desktop and phone width (build/screenshots/dashboard/) and checked for labels,
contrast, browser errors and sideways scrolling."""

from __future__ import annotations

from playwright.async_api import expect

from tests.dashboard.browsing import checked, choose_password, submit
from tests.dashboard.helpers import make_person
from tests.platform_imports.helpers import mailchimp_zip, work

ZIP = "members_export_5f3e2a1b9c.zip"


async def test_the_platform_import_pages_in_a_browser(live_server, page, db, settings, ws):
    await choose_password(page, live_server, await make_person(db, settings, ws, "ada@shop.ex"))
    await page.goto(f"{live_server}/app/import")
    async with page.expect_navigation():
        await page.get_by_role("link", name="Import from another platform").click()
    assert page.url == f"{live_server}/app/imports/platform"
    assert await page.inner_text("h1") == "Import from another platform"
    await checked(page, "platform-import")

    await page.get_by_role("radio", name="Mailchimp").check()
    await page.get_by_label("The export file").set_input_files(
        files=[{"name": ZIP, "mimeType": "application/zip", "buffer": mailchimp_zip()}]
    )
    answer = await submit(page, "Check (dry run)")
    assert answer.status == 200 and "/app/imports/platform/" in page.url
    check_url = page.url
    assert await page.inner_text("h1") == "Mailchimp import (check)"
    await expect(page.get_by_text("Waiting for the worker to start it")).to_be_visible()
    await checked(page, "platform-import-queued")

    assert await work(db, settings) == 1
    # The page asks again by itself: the result appears without a reload.
    summary = page.locator("#platform-summary")
    await expect(summary).to_be_visible(timeout=10_000)
    assert page.url == check_url
    await expect(summary.locator("dt:text-is('New contacts') + dd")).to_have_text("9")
    await expect(page.get_by_role("status")).to_have_text(
        "Checked: nothing was written. Importing for real would do what follows."
    )
    await expect(page.locator("#platform-skipped tbody tr")).to_have_count(2)
    await checked(page, "platform-import-checked")

    answer = await submit(page, "Import for real")
    assert answer.status == 200 and page.url != check_url
    assert await page.inner_text("h1") == "Mailchimp import"
    assert await work(db, settings) == 1
    await expect(page.get_by_text("Imported: 9 new, 0 updated, 0 unchanged")).to_be_visible(
        timeout=10_000
    )
    await checked(page, "platform-import-done")

    await page.goto(f"{live_server}/app/imports/platform")
    await expect(page.locator("table.stack tbody tr")).to_have_count(2)
    await checked(page, "platform-import-list")
