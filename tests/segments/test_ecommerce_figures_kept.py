"""A contact's purchase figures (total spent, number of orders, last order) are kept beside
its orders; segments read them there. Every way an order's money or owner changes moves the
figures at once: a status change, a new address, an order or store deleted, a contact that
appears after its orders, a contact deleted and made again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.ecommerce.store_helpers import API, make_store, put_order
from tests.segments.helpers import cond, contact, matched, rule

A, B = "a@example.org", "b@example.org"
SPENT = "ecommerce.total_spent"
COUNT = "ecommerce.orders_count"
LAST = "ecommerce.last_order"


async def _who(client, ws, field: str, op: str, value: int) -> set[str]:
    return await matched(client, ws.headers, rule(cond(field, op, value)))


async def test_status_and_address_changes_move_the_figures(client, ws):
    await contact(client, ws.headers, A)
    await contact(client, ws.headers, B)
    shop = (await make_store(client, ws.headers))["id"]
    h = ws.headers
    await put_order(client, h, shop, "o1", email=A, total="80.00")
    await put_order(client, h, shop, "o2", email=A, total="40.00", status="paid")
    assert await _who(client, ws, SPENT, "gt", 100) == {A}
    assert await _who(client, ws, COUNT, "eq", 2) == {A}

    # Refunded: out of both figures.
    await put_order(client, h, shop, "o1", expect=200, total="80.00", status="refunded")
    assert await _who(client, ws, SPENT, "gt", 100) == set()
    assert await _who(client, ws, SPENT, "eq", 40) == {A}
    assert await _who(client, ws, COUNT, "eq", 1) == {A}
    # A new total on an order that counts.
    await put_order(client, h, shop, "o2", expect=200, total="140.00")
    assert await _who(client, ws, SPENT, "gt", 100) == {A}

    # The order moves to B's address: A is left with nothing, B has it.
    await put_order(client, h, shop, "o2", expect=200, total="140.00", email=B)
    assert await _who(client, ws, SPENT, "gt", 100) == {B}
    assert await _who(client, ws, COUNT, "eq", 0) == {A}
    assert await _who(client, ws, LAST, "within_last", 1) == {B}
    # The same body again changes nothing.
    await put_order(client, h, shop, "o2", expect=200, total="140.00", email=B)
    assert await _who(client, ws, COUNT, "eq", 1) == {B}


async def test_deleting_an_order_or_its_store_takes_its_money_away(client, ws):
    await contact(client, ws.headers, A)
    h = ws.headers
    shop = (await make_store(client, h))["id"]
    second = (await make_store(client, h, "Second shop"))["id"]
    await put_order(client, h, shop, "o1", email=A, total="70.00")
    await put_order(client, h, shop, "o2", email=A, total="10.00")
    await put_order(client, h, second, "s1", email=A, total="50.00")
    assert await _who(client, ws, SPENT, "eq", 130) == {A}

    response = await client.delete(f"{API}/stores/{shop}/orders/o2", headers=h)
    assert response.status_code == 200, response.text
    assert await _who(client, ws, SPENT, "eq", 120) == {A}

    response = await client.delete(f"{API}/stores/{second}", headers=h)
    assert response.status_code == 200, response.text
    assert await _who(client, ws, SPENT, "eq", 70) == {A}
    assert await _who(client, ws, COUNT, "eq", 1) == {A}


async def test_a_contact_made_after_its_orders_has_their_figures(client, ws):
    h = ws.headers
    shop = (await make_store(client, h))["id"]
    old = (datetime.now(UTC) - timedelta(days=40)).isoformat()
    await put_order(client, h, shop, "o1", email=A, total="30.00", placed_at=old)
    await put_order(client, h, shop, "o2", email=A.upper(), total="25.00", placed_at=old)
    assert await _who(client, ws, SPENT, "gt", 0) == set()

    contact_id = await contact(client, h, A)
    assert await _who(client, ws, SPENT, "eq", 55) == {A}
    assert await _who(client, ws, LAST, "before_last", 30) == {A}
    assert await _who(client, ws, LAST, "within_last", 30) == set()

    # Deleted, its orders name nobody and count for nobody.
    response = await client.delete(f"/api/v1/contacts/{contact_id}", headers=h)
    assert response.status_code == 200, response.text
    assert await _who(client, ws, SPENT, "gt", 0) == set()


async def test_a_contact_taking_a_buyers_address_gets_its_figures(client, ws):
    h = ws.headers
    shop = (await make_store(client, h))["id"]
    await put_order(client, h, shop, "o1", email=A, total="30.00")
    contact_id = await contact(client, h, B)
    assert await _who(client, ws, COUNT, "eq", 0) == {B}
    response = await client.patch(f"/api/v1/contacts/{contact_id}", json={"email": A}, headers=h)
    assert response.status_code == 200, response.text
    assert await _who(client, ws, SPENT, "eq", 30) == {A}


async def test_an_erased_contact_leaves_no_figures_behind(client, ws):
    h = ws.headers
    contact_id = await contact(client, h, A)
    shop = (await make_store(client, h))["id"]
    await put_order(client, h, shop, "o1", email=A, total="30.00")
    response = await client.delete(
        f"/api/v1/contacts/{contact_id}", params={"mode": "erase"}, headers=h
    )
    assert response.status_code == 200, response.text
    assert await _who(client, ws, SPENT, "gt", 0) == set()
    # The order keeps its money and names no one.
    response = await client.get(f"{API}/stores/{shop}/orders/o1", headers=h)
    order = response.json()["order"]
    assert (order["email"], order["contact_id"], order["total"]) == (None, None, "30.00")


async def test_what_was_bought_follows_the_orders_lines_and_status(client, ws):
    await contact(client, ws.headers, A)
    await contact(client, ws.headers, B)
    h = ws.headers
    shop = (await make_store(client, h))["id"]
    for sku, category in (("tea", "Drinks"), ("mug", "Kitchen")):
        response = await client.put(
            f"{API}/stores/{shop}/products/{sku}",
            json={"title": sku, "categories": [category]},
            headers=h,
        )
        assert response.status_code == 201, response.text

    def bought(sku: str) -> list[dict]:
        return [{"product_id": sku, "quantity": 1, "price": "5.00"}]

    async def buyers(op: str, value: dict) -> set[str]:
        return await matched(client, h, rule(cond("ecommerce.purchased", op, value)))

    await put_order(client, h, shop, "o1", email=A, total="5.00", lines=bought("tea"))
    assert await buyers("product", {"product": "tea"}) == {A}
    assert await buyers("category", {"category": "drinks"}) == {A}
    # Its lines replaced: the tea was never bought, the mug was.
    await put_order(client, h, shop, "o1", expect=200, total="5.00", lines=bought("mug"))
    assert await buyers("product", {"product": "tea"}) == set()
    assert await buyers("category", {"category": "kitchen"}) == {A}
    # Moved to B, then cancelled: bought by B, then by nobody.
    await put_order(client, h, shop, "o1", expect=200, total="5.00", email=B)
    assert await buyers("product", {"product": "mug"}) == {B}
    await put_order(client, h, shop, "o1", expect=200, total="5.00", status="cancelled")
    assert await buyers("product", {"product": "mug"}) == set()
    # Bought long ago: ever, but not within 30 days.
    old = (datetime.now(UTC) - timedelta(days=60)).isoformat()
    await put_order(
        client, h, shop, "o2", email=A, total="5.00", placed_at=old, lines=bought("tea")
    )
    assert await buyers("product", {"product": "tea"}) == {A}
    assert await buyers("product", {"product": "tea", "within_days": 30}) == set()
    await put_order(client, h, shop, "o3", email=A, total="5.00", lines=bought("tea"))
    assert await buyers("category", {"category": "drinks", "within_days": 30}) == {A}
