"""`/app/blueprints` in Chromium: reached from the settings menu, the workspace captured from
the page, then applied in a second workspace of the account (a dry run's plan, "Apply for
real", the new endpoint's secret shown once); each page photographed at desktop and phone
width (build/screenshots/dashboard/) and checked for labels, contrast, browser errors and
sideways scrolling."""

from __future__ import annotations

import httpx
import pytest
from playwright.async_api import expect
from sqlalchemy import select

from mailroom.models import Person
from mailroom.people import service as people
from tests.dashboard.browsing import checked, choose_password, submit
from tests.dashboard.helpers import make_person

ADA = "ada@shop.example"
RECORDER = "http://127.0.0.1:9/recorder"  # conftest's catch-all endpoint of `ws`


@pytest.fixture(autouse=True)
def allow_loopback(settings):
    settings.webhook_allow_networks = ["127.0.0.0/8"]
    return settings


async def test_the_blueprint_pages_in_a_browser(live_server, page, db, settings, ws, factory):
    async with httpx.AsyncClient(base_url=live_server, headers=ws.headers) as api:
        for path, body in (
            ("/api/v1/tags", {"name": "VIP", "color": "#2563eb"}),
            ("/api/v1/lists", {"name": "Newsletter", "double_opt_in": True}),
            (
                "/api/v1/custom-fields",
                {"key": "plan", "type": "dropdown", "options": ["Free", "Pro"]},
            ),
        ):
            assert (await api.post(path, json=body)).status_code == 201
    await choose_password(page, live_server, await make_person(db, settings, ws, ADA))
    second = await factory.workspace(account_id=ws.account_id, name="Second shop", listen=False)
    async with db.transaction() as session:
        ada = await session.scalar(select(Person).where(Person.email == ADA))
        await people.set_role(session, ada, second.workspace_id, "admin")

    async with page.expect_navigation():
        await (
            page.get_by_role("navigation", name="Settings")
            .get_by_role("link", name="Blueprints")
            .click()
        )
    assert page.url == f"{live_server}/app/blueprints"
    assert await page.inner_text("h1") == "Blueprints"
    await expect(page.locator("#blueprint-list .badge.ok")).to_have_count(2)  # the starters
    await checked(page, "blueprints")

    await page.get_by_label("Name").fill("Shop set-up")
    await page.get_by_label("Description (optional)").fill("Fields, tags, lists and hooks")
    for part in ("Segments", "Templates", "Automations", "Forms", "Sending settings"):
        await page.get_by_label(part, exact=True).uncheck()
    answer = await submit(page, "Capture")
    assert answer.status == 200 and "/app/blueprints/" in page.url
    blueprint_url = page.url
    assert await page.inner_text("h1") == "Shop set-up"
    await expect(page.get_by_role("status")).to_contain_text("Blueprint “Shop set-up” captured")
    await checked(page, "blueprint")

    # Into the second workspace: the dry run's plan, then for real.
    await page.get_by_label("Workspace", exact=True).select_option(label="Second shop")
    await submit(page, "Switch")
    await page.goto(blueprint_url)
    await expect(page.locator("#apply")).to_contain_text("Into Second shop.")
    answer = await submit(page, "Dry run")
    assert answer.status == 200
    await expect(page.locator("#plan-rows tbody tr")).to_have_count(4)
    await expect(page.locator("#plan-counts dt:text-is('Create') + dd")).to_have_text("4")
    await checked(page, "blueprint-dry-run")

    answer = await submit(page, "Apply for real")
    assert answer.status == 200
    await expect(page.locator("#plan [role=status]").first).to_have_text(
        "Applied to Second shop: 4 created, 0 updated, 0 unchanged, 0 skipped."
    )
    secret = page.get_by_label(f"Secret of {RECORDER}")
    assert len(await secret.input_value()) >= 20
    await expect(page.locator("#secrets")).to_contain_text("shown this once")
    await checked(page, "blueprint-applied")

    # A conflict disables "Apply for real".
    async with httpx.AsyncClient(base_url=live_server, headers=second.headers) as api:
        assert (await api.delete("/api/v1/custom-fields/plan")).status_code == 200
        made = await api.post("/api/v1/custom-fields", json={"key": "plan", "type": "text"})
        assert made.status_code == 201
    await page.goto(blueprint_url)
    await submit(page, "Dry run")
    await expect(page.locator("#plan-rows")).to_contain_text("conflict")
    await expect(page.get_by_role("button", name="Apply for real")).to_be_disabled()
    await checked(page, "blueprint-conflict")
