"""The dashboard shows revenue where the API reports it: the campaign report, the campaign
list and the overview; and a contact's orders and abandoned carts on its timeline. A
workspace without a store sees no revenue at all."""

from __future__ import annotations

from contextlib import aclosing

from sqlalchemy import update

from mailroom.core.clock import utcnow
from mailroom.models import Cart
from tests.dashboard.helpers import signed_in
from tests.ecommerce.store_helpers import make_store, put_cart, put_order
from tests.tracking.helpers import CHROME, hrefs, html_of, path_of, sent_campaign

ANN = "ann@mail.example"


async def _clicked_campaign(app, client, db, ws, sink, driver) -> dict:
    campaign, got = await sent_campaign(client, db, ws, driver, sink, [ANN])
    link = next(h for h in hrefs(html_of(got[ANN])) if "/l/" in h)
    assert (await client.get(path_of(link), headers={"user-agent": CHROME})).status_code == 302
    await app.state.hits.flush()
    return campaign


async def test_revenue_on_the_report_the_list_and_the_overview(
    app, client, db, settings, ws, sink, driver
):
    campaign = await _clicked_campaign(app, client, db, ws, sink, driver)
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        # No store yet: nothing about revenue anywhere.
        for path in ("/app", "/app/campaigns", f"/app/campaigns/{campaign['id']}"):
            page = await member.get(path)
            assert page.status_code == 200 and "Revenue" not in page.text, path

        store = await make_store(client, ws.headers, name="Main shop")
        await put_order(client, ws.headers, store["id"], "1001", email=ANN, total="1240.50")
        await put_order(client, ws.headers, store["id"], "1002", email=ANN, total="9.50")

        report = await member.get(f"/app/campaigns/{campaign['id']}")
        assert '<h2>Revenue</h2><p class="figure">1,250.00 EUR</p>' in report.text
        assert "2 orders after a click" in report.text
        listing = await member.get("/app/campaigns")
        assert '<th scope="col">Revenue</th>' in listing.text
        assert '<td data-label="Revenue">1,250.00 EUR</td>' in listing.text
        overview = await member.get("/app")
        assert "Revenue from email" in overview.text and "1,250.00 EUR" in overview.text
        assert "2 orders in the last 30 days" in overview.text

        # A refund leaves the figures.
        await put_order(
            client, ws.headers, store["id"], "1001", expect=200, status="refunded", total="1240.50"
        )
        listing = await member.get("/app/campaigns")
        assert '<td data-label="Revenue">9.50 EUR</td>' in listing.text


async def test_orders_and_abandoned_carts_on_the_contact_timeline(
    app, client, db, settings, ws, sink, driver
):
    made = await client.post("/api/v1/contacts", json={"email": ANN}, headers=ws.headers)
    contact_id = made.json()["contact"]["id"]
    store = await make_store(client, ws.headers, name="Main shop")
    await put_order(client, ws.headers, store["id"], "1001", email=ANN, total="19.90")
    await put_order(
        client, ws.headers, store["id"], "1002", email=ANN, total="5.00", status="refunded"
    )
    await put_cart(client, ws.headers, store["id"], "c1", email=ANN, total="42.00")
    async with db.session() as session:  # the worker's abandonment, done here at once
        await session.execute(
            update(Cart)
            .where(Cart.external_id == "c1")
            .values(status="abandoned", abandoned_at=utcnow())
        )
        await session.commit()
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get(f"/app/contacts/{contact_id}")
        assert page.status_code == 200
        assert "Ordered #1001 at “Main shop”: 19.90 EUR<" in page.text
        assert "Ordered #1002 at “Main shop”: 5.00 EUR, refunded" in page.text
        assert "Left a cart at “Main shop”: 42.00 EUR<" in page.text
