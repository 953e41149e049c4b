""" "New workspace" in Chromium: reached from the link beside the workspace switcher, a
workspace started from the newsletter starter (the answer drawn in the new workspace, what was
made listed), then an empty one; each page photographed at desktop and phone width
(build/screenshots/dashboard/) and checked for labels, contrast, browser errors and sideways
scrolling."""

from __future__ import annotations

from playwright.async_api import expect

from tests.dashboard.browsing import checked, choose_password, flashes, submit
from tests.dashboard.helpers import make_person


async def test_new_workspaces_in_a_browser(live_server, page, db, settings, ws):
    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@shop.example")
    )
    async with page.expect_navigation():
        await page.get_by_role("link", name="New workspace").click()
    assert page.url == f"{live_server}/app/workspaces/new"
    assert await page.inner_text("h1") == "New workspace"
    await checked(page, "workspace-new")

    # An empty name is stopped by the browser itself (required): nothing posted.
    await page.get_by_label("Name", exact=True).fill("Weekly letter")
    await page.get_by_label("Start from a blueprint").select_option(label="Newsletter (starter)")
    answer = await submit(page, "Create workspace")
    assert answer.status == 200
    assert await page.inner_text("h1") == "Workspace “Weekly letter” created"
    await expect(page.get_by_role("status").first).to_contain_text(
        "Blueprint “Newsletter” applied: 5 created"
    )
    await expect(page.locator("#plan-rows tbody tr")).to_have_count(5)
    # The frame is the new workspace's: the switcher stands on it.
    chosen = page.get_by_label("Workspace", exact=True).locator("option:checked")
    await expect(chosen).to_have_text("Weekly letter")
    await checked(page, "workspace-new-from-blueprint")

    async with page.expect_navigation():
        await page.get_by_role("link", name="Go to the overview").click()
    async with page.expect_navigation():
        await page.get_by_role("link", name="New workspace").click()
    await page.get_by_label("Name", exact=True).fill("Shop two")
    answer = await submit(page, "Create workspace")
    assert (answer.status, answer.url) == (200, f"{live_server}/app")
    assert "Workspace “Shop two” created: you are its admin." in (await flashes(page))[0]
    await expect(chosen).to_have_text("Shop two")
    assert page.errors == []
