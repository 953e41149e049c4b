"""An A/B test in Chromium: two variants written in the campaign editor, each previewed,
the test sent to part of the audience, the report showing the variants side by side and when
the test decides, a winner picked by hand and sent to the rest; screenshots at both widths."""

from __future__ import annotations

from playwright.async_api import expect

from tests.dashboard.browsing import checked, choose_password, flashes, submit
from tests.dashboard.helpers import make_person
from tests.sending.conftest import driver, sink, verified_domain  # noqa: F401
from tests.sending.helpers import HTML, make_contacts, make_list


async def test_an_ab_test_written_sent_and_decided(
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
    await make_contacts(client, ws, [f"r{n:02d}@mailtest.io" for n in range(20)], news)
    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@shop.example")
    )
    await page.goto(f"{live_server}/app/campaigns/new")
    await page.get_by_label("Name (only you see it)").fill("Spring sale")
    await page.get_by_label("Subject", exact=True).fill("Spring is here")
    await page.get_by_label("HTML", exact=True).fill(HTML)
    await page.get_by_label("From email (empty").fill("news@shop.example")
    await page.get_by_role("group", name="Lists", exact=True).get_by_label("News").check()
    card = page.locator("#ab-test")
    await card.get_by_label("Test variants of this campaign").check()
    first = card.get_by_role("group", name="Variant 1")
    await first.get_by_label("Subject (empty: the campaign's)").fill("Spring is here 🌷")
    second = card.get_by_role("group", name="Variant 2")
    await second.get_by_label("Name", exact=True).fill("Sender test")
    await second.get_by_label("From name (empty: the campaign's)").fill("Ann at Shop")
    await second.get_by_label("HTML (empty: the campaign's)").fill(
        HTML.replace("spring sale", "big spring sale")
    )
    await card.get_by_label("Test on (% of the audience, 10 to 50)").fill("50")
    await card.get_by_label("Winner by").select_option("manual")
    await submit(page, "Save campaign")
    assert "Campaign “Spring sale” saved." in (await flashes(page))[0]

    # Each saved variant has its preview; the second's shows its own content.
    previews = page.locator("#ab-test details.variant-preview")
    await expect(previews).to_have_count(2)
    await previews.nth(1).locator("summary").click()
    frame = page.frame_locator("iframe[title='Sender test at desktop width']")
    await expect(frame.get_by_text("big spring sale")).to_be_visible()
    await checked(page, "ab-test-editor")

    await page.get_by_label("Send it now to 20 contacts").check()
    await submit(page, "Send now")
    await driver.drain()
    await page.reload()
    state = page.locator("#ab-state")
    await expect(state).to_contain_text("Testing on 50 % of the audience")
    await expect(state).to_contain_text("You pick the winner.")
    rows = page.locator("#ab-test tbody tr")
    await expect(rows).to_have_count(2)
    await expect(rows.nth(1)).to_contain_text("From name “Ann at Shop”, HTML")
    assert "10 of 20 sent" in await page.inner_text("#progress")
    await checked(page, "ab-test-report-testing")

    await page.get_by_label("Pick the winner").select_option(label="Sender test")
    await submit(page, "Send it to the rest")
    assert "“Sender test” won: it goes to the rest of the audience." in (await flashes(page))[0]
    await driver.drain()
    await page.reload()
    await expect(state).to_contain_text("Winner: Sender test, picked by hand")
    await expect(page.locator("#ab-test tr.winner")).to_contain_text("Sender test")
    assert "20 of 20 sent" in await page.inner_text("#progress")
    await checked(page, "ab-test-report-decided")
    everyone = [m.recipients[0] for m in sink.received]
    assert len(everyone) == len(set(everyone)) == 20
