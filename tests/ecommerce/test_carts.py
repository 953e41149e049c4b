"""Carts through the API: upsert, an order naming the cart converts it (whichever comes
first), and the worker's loop abandons a cart untouched for its store's delay, once. Time is
moved by editing the cart row, never by waiting."""

from __future__ import annotations

from datetime import timedelta

from mailroom.core.clock import utcnow
from mailroom.ecommerce import abandon
from mailroom.models import Cart
from mailroom.worker import WorkerContext, default_loops
from tests.ecommerce.store_helpers import (
    API,
    age_cart,
    count_rows,
    get_json,
    make_store,
    put,
    put_cart,
    put_order,
)

CART_KEYS = {
    "id",
    "external_id",
    "store_id",
    "email",
    "contact_id",
    "status",
    "total",
    "currency",
    "lines",
    "checkout_url",
    "order_id",
    "abandoned_at",
    "converted_at",
    "created_at",
    "updated_at",
}
CART = {
    "email": "Jane@Example.com",
    "total": "29.9",
    "lines": [{"product_id": "shirt-1", "quantity": 1, "price": "29.90"}],
    "checkout_url": "https://shop.example.com/checkout/abc",
}


async def _cart(client, ws, store_id, external_id):
    return (await get_json(client, ws.headers, f"/stores/{store_id}/carts/{external_id}"))["cart"]


async def _abandon(db) -> int:
    async with db.transaction() as session:
        return len(await abandon.mark_due(session))


async def test_put_creates_then_the_same_cart_changes_nothing(client, ws):
    store = await make_store(client, ws.headers)
    cart = await put_cart(client, ws.headers, store["id"], "c1", **CART)
    assert set(cart) == CART_KEYS
    assert (cart["email"], cart["total"], cart["currency"], cart["status"]) == (
        "jane@example.com",
        "29.90",
        "EUR",
        "active",
    )
    assert cart["lines"] == [{"product_id": "shirt-1", "quantity": 1, "price": "29.90"}]
    assert cart["checkout_url"] == CART["checkout_url"]
    assert cart["order_id"] is None and cart["abandoned_at"] is None
    same = await put_cart(client, ws.headers, store["id"], "c1", expect=200, **CART)
    assert same == cart  # updated_at too: the abandonment clock did not restart
    more = await put_cart(
        client, ws.headers, store["id"], "c1", expect=200, total="59.80", lines=[]
    )
    assert (more["total"], more["lines"], more["email"]) == ("59.80", [], "jane@example.com")
    assert more["updated_at"] > cart["updated_at"]
    assert await _cart(client, ws, store["id"], "c1") == more


async def test_currency_and_refusals(client, ws, db):
    store = await make_store(client, ws.headers)
    wrong = await put(
        client, ws.headers, store["id"], "carts", "c", {"total": 1, "currency": "USD"}
    )
    assert wrong.status_code == 400 and wrong.json() == {"error": "currency must be EUR"}
    no_total = await put(client, ws.headers, store["id"], "carts", "c", {"email": "a@example.com"})
    assert no_total.status_code == 400 and no_total.json() == {"error": "total is required"}
    link = await put(
        client, ws.headers, store["id"], "carts", "c", {"total": 1, "checkout_url": "javascript:x"}
    )
    assert link.status_code == 400
    assert link.json() == {
        "error": "checkout_url must be an http(s) URL of 2000 characters or fewer, or null"
    }
    assert await count_rows(db, Cart) == 0


async def test_an_order_naming_the_cart_converts_it(client, ws):
    store = await make_store(client, ws.headers)
    await put_cart(client, ws.headers, store["id"], "c1", **CART)
    await put_order(client, ws.headers, store["id"], "1001", total="29.90", cart_id="c1")
    cart = await _cart(client, ws, store["id"], "c1")
    assert (cart["status"], cart["order_id"]) == ("converted", "1001")
    assert cart["converted_at"] is not None
    # A later change of the cart keeps it converted.
    later = await put_cart(client, ws.headers, store["id"], "c1", expect=200, total="1.00")
    assert later["status"] == "converted"


async def test_a_cart_arriving_after_its_order_is_converted_at_once(client, ws):
    store = await make_store(client, ws.headers)
    await put_order(client, ws.headers, store["id"], "1001", total="29.90", cart_id="late")
    cart = await put_cart(client, ws.headers, store["id"], "late", **CART)
    assert (cart["status"], cart["order_id"]) == ("converted", "1001")


async def test_an_untouched_cart_is_abandoned_once(client, ws, db):
    store = await make_store(client, ws.headers)  # 60 minutes
    await put_cart(client, ws.headers, store["id"], "old", **CART)
    await put_cart(client, ws.headers, store["id"], "fresh", **CART)
    await age_cart(db, store["id"], "old", 61)
    await age_cart(db, store["id"], "fresh", 59)
    assert await _abandon(db) == 1
    old = await _cart(client, ws, store["id"], "old")
    assert old["status"] == "abandoned" and old["abandoned_at"] is not None
    assert (await _cart(client, ws, store["id"], "fresh"))["status"] == "active"
    assert await _abandon(db) == 0  # once
    # Changed again after it was abandoned, it stays abandoned: one abandonment per cart.
    await put_cart(client, ws.headers, store["id"], "old", expect=200, total="1.00")
    await age_cart(db, store["id"], "old", 120)
    assert await _abandon(db) == 0
    again = await _cart(client, ws, store["id"], "old")
    assert (again["status"], again["abandoned_at"]) == ("abandoned", old["abandoned_at"])
    listed = await get_json(client, ws.headers, f"/stores/{store['id']}/carts", status="abandoned")
    assert [c["external_id"] for c in listed["carts"]] == ["old"]


async def test_each_store_has_its_own_delay(client, ws, db):
    quick = await make_store(client, ws.headers, "Quick", abandon_after_minutes=10)
    slow = await make_store(client, ws.headers, "Slow", abandon_after_minutes=600)
    for store in (quick, slow):
        await put_cart(client, ws.headers, store["id"], "c", **CART)
        await age_cart(db, store["id"], "c", 30)
    assert await _abandon(db) == 1
    assert (await _cart(client, ws, quick["id"], "c"))["status"] == "abandoned"
    assert (await _cart(client, ws, slow["id"], "c"))["status"] == "active"
    # A shorter delay applies to carts already waiting.
    response = await client.patch(
        f"{API}/stores/{slow['id']}", json={"abandon_after_minutes": 20}, headers=ws.headers
    )
    assert response.status_code == 200
    assert await _abandon(db) == 1
    assert (await _cart(client, ws, slow["id"], "c"))["status"] == "abandoned"


async def test_a_change_restarts_the_clock_and_conversion_wins(client, ws, db):
    store = await make_store(client, ws.headers)
    await put_cart(client, ws.headers, store["id"], "c", **CART)
    await age_cart(db, store["id"], "c", 90)
    await put_cart(client, ws.headers, store["id"], "c", expect=200, total="5.00")
    assert await _abandon(db) == 0
    await age_cart(db, store["id"], "c", 90)
    assert await _abandon(db) == 1
    await put_order(client, ws.headers, store["id"], "o", total="5.00", cart_id="c")
    cart = await _cart(client, ws, store["id"], "c")
    assert cart["status"] == "converted" and cart["abandoned_at"] is not None
    converted = await get_json(
        client, ws.headers, f"/stores/{store['id']}/carts", status="converted"
    )
    assert converted["pagination"]["total"] == 1


async def test_the_worker_loop_marks_them(client, ws, db, settings):
    store = await make_store(client, ws.headers)
    await put_cart(client, ws.headers, store["id"], "c", **CART)
    await age_cart(db, store["id"], "c", 61)
    [loop] = [lp for lp in default_loops(settings) if lp.name == "abandon-carts"]
    worker = WorkerContext(db, settings, "test-worker")
    assert await loop.tick(worker) == 1
    assert await loop.tick(worker) == 0
    assert (await _cart(client, ws, store["id"], "c"))["status"] == "abandoned"


async def test_mark_due_reports_the_carts_it_abandoned(client, ws, db):
    store = await make_store(client, ws.headers)
    cart = await put_cart(client, ws.headers, store["id"], "c", **CART)
    async with db.transaction() as session:
        assert await abandon.mark_due(session, now=utcnow() + timedelta(minutes=61)) == [
            abandon.Abandoned(ws.workspace_id, store["id"], cart["id"])
        ]


async def test_listing_filters(client, ws):
    store = await make_store(client, ws.headers)
    await put_cart(client, ws.headers, store["id"], "a", **CART)
    await put_cart(client, ws.headers, store["id"], "b", total=1, email="bob@example.com")
    await put_cart(client, ws.headers, store["id"], "c", total=1)
    path = f"/stores/{store['id']}/carts"
    everything = await get_json(client, ws.headers, path)
    assert [c["external_id"] for c in everything["carts"]] == ["c", "b", "a"]
    jane = await get_json(client, ws.headers, path, email="JANE@example.com")
    assert [c["external_id"] for c in jane["carts"]] == ["a"]
    bad = await client.get(f"{API}{path}", params={"status": "lost"}, headers=ws.headers)
    assert bad.status_code == 400
    assert bad.json() == {"error": "status must be one of active, abandoned, converted"}


async def test_delete(client, ws):
    store = await make_store(client, ws.headers)
    cart = await put_cart(client, ws.headers, store["id"], "c", **CART)
    path = f"{API}/stores/{store['id']}/carts/c"
    response = await client.delete(path, headers=ws.headers)
    assert response.json() == {"success": True, "id": cart["id"], "external_id": "c"}
    gone = await client.get(path, headers=ws.headers)
    assert gone.status_code == 404 and gone.json() == {"error": "Cart not found"}
