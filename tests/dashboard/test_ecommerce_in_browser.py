"""The shop in Chromium: a Shopify store added on /app/stores (its secret shown once, its
delivery URL taking a delivery signed with that secret, the delivery listed), revenue from a
clicked campaign on the campaign list, its report and the overview, a contact's orders and
abandoned cart on its timeline; the segment builder's shop fields counting in place and the
automation editor's order trigger with its store. Screenshots at both widths under
build/screenshots/dashboard/ (labels, contrast, no browser error, no sideways scroll)."""

from __future__ import annotations

import re
import uuid

import httpx
from playwright.async_api import expect

from mailroom.ecommerce import abandon
from tests.dashboard.browsing import checked, choose_password, flashes, relaid, submit
from tests.dashboard.helpers import make_person
from tests.ecommerce.platform_fixtures import raw, shopify_headers
from tests.ecommerce.store_helpers import age_cart, make_store, put_cart, put_order
from tests.segments.helpers import contact
from tests.sending.conftest import driver, sink  # noqa: F401
from tests.tracking.helpers import CHROME, hrefs, html_of, path_of, sent_campaign

ANN = "ann@mail.example"
PRODUCT = "788032119674292922"  # the product of Shopify's products/create sample


def money(amount: str) -> re.Pattern[str]:
    """An amount as a person reads it on every page: thousands grouped, two decimal places,
    the currency ("1,240.50 EUR")."""
    whole, cents = amount.split(".")
    grouped = rf"{whole[:-3]},{whole[-3:]}" if len(whole) > 3 else whole
    return re.compile(rf"{grouped}\.{cents} EUR")


async def _abandoned(db, store_id: str, external_id: str) -> None:
    """The worker's loop abandons the cart (its last change moved past the store's hour)."""
    await age_cart(db, store_id, external_id, minutes=61)
    async with db.transaction() as session:
        done = await abandon.mark_due(session)
    assert [a.store_id for a in done] == [store_id]


async def test_a_store_its_deliveries_revenue_and_a_contacts_orders(
    live_server,
    page,
    app,
    client,
    db,
    settings,
    ws,
    sink,  # noqa: F811
    driver,  # noqa: F811
):
    campaign, got = await sent_campaign(client, db, ws, driver, sink, [ANN])
    link = next(h for h in hrefs(html_of(got[ANN])) if "/l/" in h)
    assert (await client.get(path_of(link), headers={"user-agent": CHROME})).status_code == 302
    await app.state.hits.flush()
    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@shop.example")
    )
    assert "Revenue" not in await page.inner_text("main")  # no store yet

    # 1. A store added in the page: its secret shown once, the URL to give Shopify.
    await page.goto(f"{live_server}/app/stores")
    assert "No stores yet." in await page.inner_text("main")
    await page.get_by_label("Name").fill("Corner shop")
    await page.get_by_label("Currency").fill("eur")
    await page.get_by_label("Platform").select_option(label="Shopify")
    answer = await submit(page, "Add store")
    assert answer.status == 201
    assert "Store “Corner shop” added." in (await flashes(page))[0]
    assert "Copy it now: it is shown this once." in await page.inner_text("main")
    await expect(page.get_by_role("heading", name="Corner shop")).to_be_visible()
    assert "Shopify · EUR · a cart untouched for 60 minutes is abandoned" in (
        await page.inner_text("main")
    )
    secret = await page.get_by_label("The webhook secret").input_value()
    hook = await page.get_by_label("Shopify delivery URL").input_value()
    store_id = hook.rsplit("/", 1)[1]
    assert hook == f"{live_server}/hooks/shopify/{store_id}"
    assert "Nothing received yet." in await page.inner_text("main")
    await checked(page, "store-added")

    # Shopify posts to the URL shown, signed with the secret shown.
    data = raw("shopify", "products_create")
    headers = {
        **shopify_headers("products/create", data, secret),
        "Content-Type": "application/json",
        "X-Shopify-Webhook-Id": str(uuid.uuid4()),
    }
    async with httpx.AsyncClient() as shopify:
        delivered = await shopify.post(hook, content=data, headers=headers)
        assert delivered.status_code == 200 and delivered.json()["outcome"] == "applied"
        forged = {**headers, "X-Shopify-Hmac-Sha256": "bm90IHRoZSBzaWduYXR1cmU="}
        refused = await shopify.post(hook, content=data, headers=forged)
        assert refused.status_code == 401
    # The list, then the store's page: the delivery listed, the secret not shown again.
    await page.get_by_role("link", name="← All stores").click()
    await page.wait_for_url(f"{live_server}/app/stores")
    listed = [await r.inner_text() for r in await page.locator("table.stack tbody tr").all()]
    assert [re.split(r"\s+", t.strip()) for t in listed] == [["Corner", "shop", "Shopify", "EUR"]]
    await checked(page, "stores")
    async with page.expect_navigation():
        await page.get_by_role("link", name="Corner shop").click()
    assert secret not in await page.content()
    deliveries = page.locator("table.stack tbody tr")
    await expect(deliveries).to_have_count(1)  # the refused one is not kept
    row = await deliveries.first.inner_text()
    assert "products/create" in row and "applied" in row
    assert f"product {PRODUCT} created" in row
    await checked(page, "store-deliveries")

    # 5. Orders after the click: revenue on the list, the report and the overview.
    await put_order(client, ws.headers, store_id, "1001", email=ANN, total="1240.50")
    await put_order(client, ws.headers, store_id, "1002", email=ANN, total="9.50", status="paid")
    await put_order(
        client, ws.headers, store_id, "1003", email=ANN, total="5.00", status="refunded"
    )
    await put_cart(client, ws.headers, store_id, "c1", email=ANN, total="42.00")
    await _abandoned(db, store_id, "c1")

    await page.goto(f"{live_server}/app/campaigns")
    revenue = page.locator("td[data-label=Revenue]")
    await expect(revenue).to_have_count(1)
    assert money("1250.00").fullmatch((await revenue.inner_text()).strip())
    await checked(page, "campaigns-revenue")
    await page.get_by_role("link", name=campaign["name"]).click()
    await page.wait_for_url(f"**/app/campaigns/{campaign['id']}")
    report = page.get_by_role("region", name="Revenue")
    assert money("1250.00").search(await report.inner_text())
    assert "2 orders after a click" in await report.inner_text()
    await checked(page, "campaign-report-revenue")
    await page.goto(f"{live_server}/app")
    figures = await page.get_by_role("region", name="Revenue from email").inner_text()
    assert money("1250.00").search(figures), figures
    assert "2 orders in the last 30 days after a click" in figures
    await checked(page, "overview-revenue")

    # 2. The contact's timeline: its orders (a refund said so) and the cart it left.
    await page.goto(f"{live_server}/app/contacts?q=ann")
    async with page.expect_navigation():
        await page.get_by_role("link", name=ANN).click()
    timeline = await page.locator("ol.timeline").inner_text()
    assert re.search(r"Ordered #1001 at “Corner shop”: " + money("1240.50").pattern, timeline)
    assert "Ordered #1002 at “Corner shop”: 9.50 EUR, paid" in timeline
    assert "Ordered #1003 at “Corner shop”: 5.00 EUR, refunded" in timeline
    assert "Left a cart at “Corner shop”: 42.00 EUR" in timeline
    assert "Clicked: campaign" in timeline
    await checked(page, "contact-orders")
    assert page.errors == []


async def test_shop_fields_in_the_segment_builder_and_an_order_trigger(
    live_server, page, client, db, settings, ws
):
    shop = await make_store(client, ws.headers, "Corner shop")
    await make_store(client, ws.headers, "Outlet")
    for email, total in (("big@shop.example", "250.00"), ("small@shop.example", "19.90")):
        await contact(client, ws.headers, email)
        await put_order(client, ws.headers, shop["id"], email, email=email, total=total)
    await contact(client, ws.headers, "none@shop.example")
    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@shop.example")
    )

    # 3. Total spent (shop) at least 100: one contact, counted in place.
    await page.goto(f"{live_server}/app/segments/new")
    await page.get_by_label("Name").fill("Big spenders")
    field = page.get_by_label("Field of condition 1")
    offered = await field.locator("option").all_inner_texts()
    for label in ("total spent (shop)", "number of orders (shop)", "cart (shop)"):
        assert label in offered, offered
    await relaid(page, "/app/segments/builder", field.select_option("ecommerce.total_spent"))
    operator = page.get_by_label("Operator of condition 1")
    assert await operator.locator("option").all_inner_texts() == [
        "is more than",
        "is at least",
        "is less than",
        "is at most",
        "is",
    ]
    await operator.select_option("gte")
    value = page.get_by_label("Value of condition 1")
    assert await value.get_attribute("placeholder") == "an amount, e.g. 100"
    await value.fill("100")
    await value.press("Tab")
    count = page.locator("#segment-count")
    await expect(count.locator(".figure")).to_have_text(re.compile(r"^1 contacts? match"))
    assert "big@shop.example" in await count.inner_text()
    await checked(page, "segment-shop-field")

    # 4. An automation that starts on an order of one store, first orders only.
    await page.goto(f"{live_server}/app/automations/new")
    await page.get_by_label("Name", exact=True).fill("Thank you")
    save = "/app/automations/save"
    await relaid(page, save, page.get_by_label("Trigger").select_option("order_placed"))
    store = page.get_by_label("Store", exact=True)
    assert await store.locator("option").all_inner_texts() == ["—", "Corner shop", "Outlet"]
    await store.select_option(label="Corner shop")
    await page.get_by_label("Only a contact's first order in the store").check()
    assert "A subscribed contact enters when a new order in this store is placed" in (
        await page.inner_text("#automation-editor")
    )
    await checked(page, "automation-order-trigger")
    await submit(page, "Save automation")
    assert "Automation “Thank you” saved." in (await flashes(page))[0]
    listed = await client.get("/api/v1/automations", headers=ws.headers)
    [automation] = listed.json()["automations"]
    assert automation["trigger"] == {
        "type": "order_placed",
        "store_id": shop["id"],
        "first_order_only": True,
    }
    await relaid(page, save, page.get_by_label("Trigger").select_option("cart_abandoned"))
    assert "A subscribed contact enters when its cart in this store is abandoned" in (
        await page.inner_text("#automation-editor")
    )
    await expect(page.get_by_label("Only a contact's first order in the store")).to_have_count(0)
    await checked(page, "automation-cart-trigger")
    assert page.errors == []
