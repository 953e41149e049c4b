"""Revenue attribution: an order placed within the store's `attribution_days` after its buyer
clicked a campaign email belongs to that campaign (the last email clicked), shown on the
order (`attributed_to`) and in the campaign's report (`revenue`); cancelled and refunded
orders leave the figures; a scanner's click, a click after the order, an order past the
window and an address that is no contact are never attributed."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from mailroom.core.clock import utcnow
from mailroom.models import SendLog, TrackingHit
from tests.ecommerce.store_helpers import make_store, put_order
from tests.sending.helpers import make_campaign, ok, send_campaign
from tests.tracking.helpers import CHROME, HTML, SCANNER, hrefs, html_of, path_of, sent_campaign

PEOPLE = ["ann@mail.example", "bob@mail.example", "cy@mail.example"]


async def _click(client, app, data: bytes, agent: str = CHROME) -> None:
    link = next(h for h in hrefs(html_of(data)) if "/l/" in h)
    assert (await client.get(path_of(link), headers={"user-agent": agent})).status_code == 302
    await app.state.hits.flush()


async def _revenue(client, ws, campaign_id: str) -> dict:
    answer = await client.get(f"/api/v1/campaigns/{campaign_id}/report", headers=ws.headers)
    return (await ok(answer))["report"]["revenue"]


def _line(price: str = "20.00") -> list[dict]:
    return [{"product_id": "mug", "quantity": 1, "price": price}]


async def test_an_order_after_a_click_is_the_campaigns(app, client, db, ws, sink, driver):
    campaign, got = await sent_campaign(client, db, ws, driver, sink, PEOPLE)
    assert await _revenue(client, ws, campaign["id"]) == {
        "orders": 0,
        "total": "0.00",
        "currency": None,
        "by_currency": None,
    }
    store = await make_store(client, ws.headers, attribution_days=5)
    await _click(client, app, got[PEOPLE[0]])
    await _click(client, app, got[PEOPLE[2]], SCANNER)  # recorded, never a person's click

    ann = await put_order(client, ws.headers, store["id"], "1001", email=PEOPLE[0], total="40.00")
    bob = await put_order(client, ws.headers, store["id"], "1002", email=PEOPLE[1], total="9.00")
    cy = await put_order(client, ws.headers, store["id"], "1003", email=PEOPLE[2], total="9.00")
    assert ann["attributed_to"] == {"type": "campaign", "id": campaign["id"]}
    assert bob["attributed_to"] is None and cy["attributed_to"] is None
    expected = {"orders": 1, "total": "40.00", "currency": "EUR", "by_currency": None}
    assert await _revenue(client, ws, campaign["id"]) == expected

    # The same order again changes nothing: no double revenue.
    again = await put_order(
        client, ws.headers, store["id"], "1001", expect=200, email=PEOPLE[0], total="40.00"
    )
    assert again["attributed_to"] == ann["attributed_to"]
    assert await _revenue(client, ws, campaign["id"]) == expected

    # A second order inside the window counts too; a refund takes one out again.
    await put_order(client, ws.headers, store["id"], "1004", email=PEOPLE[0], total="10.50")
    assert (await _revenue(client, ws, campaign["id"]))["total"] == "50.50"
    await put_order(
        client, ws.headers, store["id"], "1004", expect=200, status="refunded", total="10.50"
    )
    await put_order(
        client, ws.headers, store["id"], "1001", expect=200, status="cancelled", total="40.00"
    )
    assert await _revenue(client, ws, campaign["id"]) == {
        "orders": 0,
        "total": "0.00",
        "currency": "EUR",
        "by_currency": None,
    }
    # The attribution itself stays on the order (a later read shows it).
    listed = await client.get(
        f"/api/v1/ecommerce/stores/{store['id']}/orders/1001", headers=ws.headers
    )
    assert (await ok(listed))["order"]["attributed_to"]["id"] == campaign["id"]


async def test_the_window_and_the_order_of_events(app, client, db, ws, sink, driver):
    campaign, got = await sent_campaign(client, db, ws, driver, sink, PEOPLE[:1])
    store = await make_store(client, ws.headers, attribution_days=2)
    await _click(client, app, got[PEOPLE[0]])
    now = utcnow()
    # Placed before the click: the click cannot have caused it.
    before = await put_order(
        client,
        ws.headers,
        store["id"],
        "early",
        email=PEOPLE[0],
        total="5.00",
        placed_at=(now - timedelta(hours=1)).isoformat(),
    )
    # Placed after the window closed.
    late = await put_order(
        client,
        ws.headers,
        store["id"],
        "late",
        email=PEOPLE[0],
        total="5.00",
        placed_at=(now + timedelta(days=2, hours=1)).isoformat(),
    )
    inside = await put_order(
        client,
        ws.headers,
        store["id"],
        "inside",
        email=PEOPLE[0],
        total="7.25",
        placed_at=(now + timedelta(days=1, hours=23)).isoformat(),
    )
    assert before["attributed_to"] is None and late["attributed_to"] is None
    assert inside["attributed_to"] == {"type": "campaign", "id": campaign["id"]}
    assert (await _revenue(client, ws, campaign["id"]))["total"] == "7.25"


async def test_the_last_email_clicked_wins(app, client, db, ws, sink, driver):
    first, got_first = await sent_campaign(client, db, ws, driver, sink, PEOPLE[:1])
    sink.received.clear()
    second = await make_campaign(
        client, ws, first["audience"]["list_ids"][0], html_content=HTML, name="Second"
    )
    await send_campaign(client, ws, second["id"])
    await driver.drain()
    got_second = {r.recipients[0]: r.data for r in sink.received}
    store = await make_store(client, ws.headers)
    await _click(client, app, got_second[PEOPLE[0]])
    await _click(client, app, got_first[PEOPLE[0]])
    # Make the order of the two clicks unambiguous: the first campaign's click is the later.
    async with db.session() as session:
        rows = await session.execute(
            select(TrackingHit.id, SendLog.campaign_id).join(
                SendLog, SendLog.id == TrackingHit.send_log_id
            )
        )
        for hit_id, campaign_id in rows.all():
            moved = timedelta(minutes=-30 if campaign_id == second["id"] else -10)
            await session.execute(
                update(TrackingHit)
                .where(TrackingHit.id == hit_id)
                .values(created_at=utcnow() + moved)
            )
        await session.commit()
    order = await put_order(client, ws.headers, store["id"], "1", email=PEOPLE[0], total="3.00")
    assert order["attributed_to"] == {"type": "campaign", "id": first["id"]}
    assert (await _revenue(client, ws, first["id"]))["orders"] == 1
    assert (await _revenue(client, ws, second["id"]))["orders"] == 0


async def test_an_address_that_is_no_contact_is_never_attributed(app, client, db, ws, sink, driver):
    campaign, got = await sent_campaign(client, db, ws, driver, sink, PEOPLE[:1])
    store = await make_store(client, ws.headers)
    await _click(client, app, got[PEOPLE[0]])
    order = await put_order(
        client, ws.headers, store["id"], "1", email="stranger@mail.example", total="3.00"
    )
    assert order["attributed_to"] is None and order["contact_id"] is None
    assert (await _revenue(client, ws, campaign["id"]))["orders"] == 0


async def test_another_workspaces_orders_never_count(app, client, db, ws, factory, sink, driver):
    campaign, got = await sent_campaign(client, db, ws, driver, sink, PEOPLE[:1])
    await _click(client, app, got[PEOPLE[0]])
    other = await factory.workspace("pro")
    await ok(
        await client.post("/api/v1/contacts", json={"email": PEOPLE[0]}, headers=other.headers),
        201,
    )
    theirs = await make_store(client, other.headers)
    order = await put_order(client, other.headers, theirs["id"], "1", email=PEOPLE[0], total="3.00")
    assert order["attributed_to"] is None
    assert (await _revenue(client, ws, campaign["id"]))["orders"] == 0
