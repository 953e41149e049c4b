"""Segment rules over purchase data (`ecommerce.*`): money spent, number of orders, the last
order, what was bought (a product, a category) and abandoned carts, in the same statement as
the other rules. Orders, products and carts are made through the e-commerce API; a cart is
abandoned by the worker's loop at a chosen time (its row aged first, never by waiting)."""

from __future__ import annotations

import re
from contextlib import aclosing
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mailroom.ecommerce import abandon
from tests.dashboard.helpers import csrf_of, form_values, signed_in
from tests.ecommerce.store_helpers import age_cart, make_store, put, put_cart, put_order
from tests.segments.helpers import cond, contact, matched, named, preview, rule, tag

A, B, C, D, E, F = (f"{x}@example.org" for x in "abcdef")
NOW = datetime.now(UTC)


def _ago(days: float) -> str:
    return (NOW - timedelta(days=days)).isoformat()


def _line(product: str, price: str = "10.00") -> dict[str, Any]:
    return {"product_id": product, "quantity": 1, "price": price}


async def _check(client, ws, cases) -> None:
    wrong = []
    for condition, expected in cases:
        got = await matched(client, ws.headers, rule(condition))
        if got != expected:
            wrong.append((condition, sorted(got), sorted(expected)))
    assert wrong == []


async def _product(client, headers, store_id: str, external_id: str, *categories: str) -> None:
    body = {"title": external_id, "categories": list(categories)}
    response = await put(client, headers, store_id, "products", external_id, body)
    assert response.status_code == 201, response.text


async def _abandon_at(db, store_id: str, external_id: str, days_ago: float) -> None:
    """The worker's loop abandons the cart as it would have `days_ago` (the store waits an
    hour: the cart's last change is moved to an hour before that)."""
    await age_cart(db, store_id, external_id, minutes=days_ago * 1440 + 61)
    async with db.transaction() as session:
        done = await abandon.mark_due(session, now=datetime.now(UTC) - timedelta(days=days_ago))
    assert [a.store_id for a in done] == [store_id]


async def test_total_spent_and_orders_count(client, ws, factory):
    for email in (A, B, C, D, E):
        await contact(client, ws.headers, email)
    shop = (await make_store(client, ws.headers))["id"]
    other_shop = (await make_store(client, ws.headers, "Second shop"))["id"]
    h = ws.headers
    await put_order(client, h, shop, "a1", email=A, total="60.00", status="paid")
    await put_order(client, h, shop, "a2", email=A, total="50.00", status="fulfilled")
    await put_order(client, h, shop, "b1", email=B, total="100.00")  # placed
    await put_order(client, h, shop, "b2", email=B, total="500.00", status="cancelled")
    await put_order(client, h, shop, "b3", email=B, total="300.00", status="refunded")
    await put_order(client, h, shop, "d1", email=D, total="1000.00", status="cancelled")
    await put_order(client, h, shop, "e1", email=E, total="30.00", status="paid")
    await put_order(client, h, other_shop, "e2", email=E, total="20.50", status="paid")
    # C has no orders here; in another workspace the same address spent a fortune.
    other = await factory.workspace("pro")
    await contact(client, other.headers, C)
    theirs = (await make_store(client, other.headers))["id"]
    for n in range(3):
        await put_order(client, other.headers, theirs, f"c{n}", email=C, total="900.00")

    spent, count = "ecommerce.total_spent", "ecommerce.orders_count"
    everyone = {A, B, C, D, E}
    await _check(
        client,
        ws,
        [
            (cond(spent, "gt", 100), {A}),
            (cond(spent, "gt", 99.99), {A, B}),
            (cond(spent, "gte", 100), {A, B}),
            (cond(spent, "gte", 0), everyone),
            (cond(spent, "eq", 100), {B}),
            (cond(spent, "eq", 50.5), {E}),
            (cond(spent, "eq", 0), {C, D}),
            (cond(spent, "lt", 100), {C, D, E}),
            (cond(spent, "lt", 0), set()),
            (cond(spent, "lte", 100), {B, C, D, E}),
            (cond(spent, "lte", 0), {C, D}),
            (cond(spent, "gt", 0), {A, B, E}),
            (cond(count, "gt", 1), {A, E}),
            (cond(count, "gte", 1), {A, B, E}),
            (cond(count, "eq", 1), {B}),
            (cond(count, "eq", 0), {C, D}),
            (cond(count, "lt", 2), {B, C, D}),
            (cond(count, "lte", 2), everyone),
            (cond(count, "gte", 3), set()),
        ],
    )
    # A status change moves the figures at once: b1 refunded leaves B with nothing.
    await put_order(client, h, shop, "b1", expect=200, total="100.00", status="refunded")
    await _check(client, ws, [(cond(spent, "eq", 0), {B, C, D}), (cond(count, "gte", 1), {A, E})])


async def test_last_order(client, ws):
    for email in (A, B, C, D):
        await contact(client, ws.headers, email)
    shop = (await make_store(client, ws.headers))["id"]
    h = ws.headers
    await put_order(client, h, shop, "a1", email=A, total=5, placed_at=_ago(5))
    await put_order(client, h, shop, "a2", email=A, total=5, placed_at=_ago(200))
    await put_order(client, h, shop, "b1", email=B, total=5, placed_at=_ago(40))
    # A cancelled or refunded order is no purchase, however recent.
    await put_order(client, h, shop, "b2", email=B, total=5, placed_at=_ago(2), status="cancelled")
    await put_order(client, h, shop, "d1", email=D, total=5, placed_at=_ago(1), status="refunded")
    last = "ecommerce.last_order"
    await _check(
        client,
        ws,
        [
            (cond(last, "within_last", 30), {A}),
            (cond(last, "within_last", 60), {A, B}),
            (cond(last, "within_last", 1), set()),
            (cond(last, "before_last", 30), {B}),
            (cond(last, "before_last", 6), {B}),
            (cond(last, "before_last", 4), {A, B}),
            (cond(last, "before_last", 1), {A, B}),
            (cond(last, "before_last", 60), set()),
        ],
    )


async def test_purchased_product_and_category(client, ws, factory):
    for email in (A, B, C, D, E, F):
        await contact(client, ws.headers, email)
    h = ws.headers
    shop = (await make_store(client, h))["id"]
    second = (await make_store(client, h, "Second shop"))["id"]
    await _product(client, h, shop, "shirt-1", "Shirts", "Summer Sale")
    await _product(client, h, shop, "mug-1", "Kitchen")
    # The same id in another store is another product, in other categories.
    await _product(client, h, second, "shirt-1", "Kitchen")
    await _product(client, h, second, "hat-9", "summer  SALE")
    orders = [
        (shop, "a1", A, {"placed_at": _ago(10), "lines": [_line("shirt-1"), _line("mug-2")]}),
        (second, "b1", B, {"placed_at": _ago(100), "lines": [_line("shirt-1")]}),
        (shop, "c1", C, {"status": "cancelled", "lines": [_line("mug-1")]}),
        (second, "d1", D, {"placed_at": _ago(5), "lines": [_line("hat-9")]}),
    ]
    for store_id, external_id, email, body in orders:
        await put_order(client, h, store_id, external_id, email=email, total=10, **body)
    # A line may name a product the shop never sent: bought by its id, in no category.
    await put_order(client, h, shop, "e1", email=E, total=10, lines=[_line("ghost-1")])
    # Another workspace's purchases say nothing here (F buys shirts there).
    other = await factory.workspace("pro")
    await contact(client, other.headers, F)
    theirs = (await make_store(client, other.headers))["id"]
    await _product(client, other.headers, theirs, "shirt-1", "Shirts", "Kitchen")
    await put_order(
        client, other.headers, theirs, "f1", email=F, total=10, lines=[_line("shirt-1")]
    )

    bought = "ecommerce.purchased"
    await _check(
        client,
        ws,
        [
            (cond(bought, "product", {"product": "shirt-1"}), {A, B}),
            (cond(bought, "product", {"product": "shirt-1", "within_days": 30}), {A}),
            (cond(bought, "product", {"product": "shirt-1", "within_days": None}), {A, B}),
            (cond(bought, "product", {"product": "mug-1"}), set()),
            (cond(bought, "product", {"product": "hat-9"}), {D}),
            (cond(bought, "product", {"product": "ghost-1"}), {E}),
            (cond(bought, "product", {"product": "SHIRT-1"}), set()),
            (cond(bought, "category", {"category": "shirts"}), {A}),
            (cond(bought, "category", {"category": "SUMMER SALE"}), {A, D}),
            (cond(bought, "category", {"category": "  Summer   sale "}), {A, D}),
            (cond(bought, "category", {"category": "summer sale", "within_days": 7}), {D}),
            (cond(bought, "category", {"category": "Kitchen"}), {B}),
            (cond(bought, "category", {"category": "Kitchen", "within_days": 30}), set()),
            (cond(bought, "category", {"category": "Toys"}), set()),
        ],
    )


async def test_abandoned_carts(client, ws, db, factory):
    for email in (A, B, C, D, E):
        await contact(client, ws.headers, email)
    h = ws.headers
    shop = (await make_store(client, h))["id"]
    for email, cart in ((A, "ca"), (B, "cb"), (C, "cc"), (D, "cd")):
        await put_cart(client, h, shop, cart, email=email, total="12.00")
    await _abandon_at(db, shop, "cb", days_ago=20)
    await _abandon_at(db, shop, "ca", days_ago=2)
    await _abandon_at(db, shop, "cc", days_ago=1)
    # C's order converts the cart after it was abandoned: no longer abandoned. D's is active.
    await put_order(client, h, shop, "c1", email=C, total="12.00", cart_id="cc")
    # Another workspace's abandoned cart of E's address says nothing here.
    other = await factory.workspace("pro")
    await contact(client, other.headers, E)
    theirs = (await make_store(client, other.headers))["id"]
    await put_cart(client, other.headers, theirs, "ce", email=E, total="1.00")
    await _abandon_at(db, theirs, "ce", days_ago=1)

    cart = "ecommerce.cart"
    await _check(
        client,
        ws,
        [
            (cond(cart, "abandoned"), {A, B}),
            (cond(cart, "abandoned", {}), {A, B}),
            (cond(cart, "abandoned", {"within_days": 7}), {A}),
            (cond(cart, "abandoned", {"within_days": None}), {A, B}),
            (cond(cart, "abandoned", {"within_days": 1}), set()),
        ],
    )


async def test_with_other_rules_in_a_saved_segment_and_the_contact_list(client, ws):
    """One rule mixing contact fields, tags and purchase data, nested: the preview, the saved
    segment's preview and the contact list filtered by it agree."""
    ids = {email: await contact(client, ws.headers, email) for email in (A, B, C, D)}
    vip = await named(client, ws.headers, "tags", "vip")
    await tag(client, ws.headers, ids[D], vip)
    h = ws.headers
    shop = (await make_store(client, h))["id"]
    await _product(client, h, shop, "boots", "Shoes")
    await put_order(client, h, shop, "a1", email=A, total="250.00", lines=[_line("boots")])
    await put_order(client, h, shop, "b1", email=B, total="250.00", lines=[_line("socks")])
    await put_order(client, h, shop, "c1", email=C, total="20.00", lines=[_line("boots")])
    rules = rule(
        cond("email", "ends_with", "@example.org"),
        rule(
            rule(
                cond("ecommerce.total_spent", "gte", 200),
                cond("ecommerce.purchased", "category", {"category": "shoes"}),
            ),
            cond("tags", "has_any", [vip]),
            match="any",
        ),
    )
    assert await matched(client, h, rules) == {A, D}
    saved = await client.post(
        "/api/v1/segments", json={"name": "Shoe VIPs", "rules": rules}, headers=h
    )
    assert saved.status_code == 201, saved.text
    segment = saved.json()["segment"]
    assert segment["rules"] == rules  # stored as sent
    shown = await client.get(f"/api/v1/segments/{segment['id']}/preview", headers=h)
    assert shown.status_code == 200
    assert (shown.json()["count"], {c["email"] for c in shown.json()["contacts"]}) == (2, {A, D})
    listed = await client.get("/api/v1/contacts", params={"segment": segment["id"]}, headers=h)
    assert listed.status_code == 200
    assert {c["email"] for c in listed.json()["contacts"]} == {A, D}
    assert listed.json()["pagination"]["total"] == 2
    # Live: C's next order makes C a big spender of shoes.
    await put_order(client, h, shop, "c2", email=C, total="190.00")
    again = await client.get(f"/api/v1/segments/{segment['id']}/preview", headers=h)
    assert again.json()["count"] == 3


TOTAL = "must be a number from 0 to 999999999999.99 with at most two decimal places"
DAYS = "must be a whole number of days from 1 to 36500"
PRODUCT = (
    "must be a product id: 1 to 255 letters, digits or . _ : @ ~ + - (not starting with a dot)"
)


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        (
            cond("ecommerce.revenue", "gt", 1),
            "conditions[0].field: unknown field ecommerce.revenue",
        ),
        (
            cond("ecommerce.total_spent", "neq", 1),
            "conditions[0].op: neq is not valid for ecommerce.total_spent",
        ),
        (cond("ecommerce.total_spent", "gt", "100"), f"conditions[0].value: {TOTAL}"),
        (cond("ecommerce.total_spent", "gt"), f"conditions[0].value: {TOTAL}"),
        (cond("ecommerce.total_spent", "gt", True), f"conditions[0].value: {TOTAL}"),
        (cond("ecommerce.total_spent", "gt", -1), f"conditions[0].value: {TOTAL}"),
        (cond("ecommerce.total_spent", "gt", 10.005), f"conditions[0].value: {TOTAL}"),
        (cond("ecommerce.total_spent", "gt", 1e12), f"conditions[0].value: {TOTAL}"),
        (
            cond("ecommerce.orders_count", "gte", 2.5),
            "conditions[0].value: must be a whole number from 0 to 1000000000",
        ),
        (
            cond("ecommerce.orders_count", "in", [1]),
            "conditions[0].op: in is not valid for ecommerce.orders_count",
        ),
        (
            cond("ecommerce.last_order", "after", "2026-01-01"),
            "conditions[0].op: after is not valid for ecommerce.last_order",
        ),
        (cond("ecommerce.last_order", "within_last", 0), f"conditions[0].value: {DAYS}"),
        (cond("ecommerce.last_order", "before_last", 1.5), f"conditions[0].value: {DAYS}"),
        (
            cond("ecommerce.purchased", "bought", {"product": "x"}),
            "conditions[0].op: bought is not valid for ecommerce.purchased",
        ),
        (
            cond("ecommerce.purchased", "product", "shirt-1"),
            "conditions[0].value: must be an object with product and optional within_days",
        ),
        (cond("ecommerce.purchased", "product", {}), "conditions[0].value.product: is required"),
        (
            cond("ecommerce.purchased", "product", {"category": "Shirts"}),
            "conditions[0].value: unknown key(s): category",
        ),
        (
            cond("ecommerce.purchased", "product", {"product": ".hidden"}),
            f"conditions[0].value.product: {PRODUCT}",
        ),
        (
            cond("ecommerce.purchased", "product", {"product": 42}),
            f"conditions[0].value.product: {PRODUCT}",
        ),
        (
            cond("ecommerce.purchased", "category", {"category": "x" * 101}),
            "conditions[0].value.category: must be a category name of 1 to 100 characters",
        ),
        (
            cond("ecommerce.purchased", "category", {"category": ""}),
            "conditions[0].value.category: is required",
        ),
        (
            cond("ecommerce.purchased", "category", {"category": "Shirts", "within_days": 0}),
            f"conditions[0].value.within_days: {DAYS}",
        ),
        (
            cond("ecommerce.cart", "active"),
            "conditions[0].op: active is not valid for ecommerce.cart",
        ),
        (
            cond("ecommerce.cart", "abandoned", 7),
            "conditions[0].value: must be an object with optional within_days",
        ),
        (
            cond("ecommerce.cart", "abandoned", {"days": 7}),
            "conditions[0].value: unknown key(s): days",
        ),
        (
            cond("ecommerce.cart", "abandoned", {"within_days": 40000}),
            f"conditions[0].value.within_days: {DAYS}",
        ),
    ],
)
async def test_bad_values_are_400(client, ws, condition, message):
    for path, body in (
        ("/api/v1/segments/preview", {"rules": rule(condition)}),
        ("/api/v1/segments", {"name": "Bad", "rules": rule(condition)}),
    ):
        response = await client.post(path, json=body, headers=ws.headers)
        assert response.status_code == 400
        assert response.json() == {"error": message}
    assert (await client.get("/api/v1/segments", headers=ws.headers)).json()["segments"] == []


async def test_a_nested_bad_value_names_its_place(client, ws):
    rules = rule(
        cond("email", "contains", "@"),
        rule(cond("ecommerce.total_spent", "gt", "lots"), match="any"),
    )
    response = await client.post(
        "/api/v1/segments/preview", json={"rules": rules}, headers=ws.headers
    )
    assert response.status_code == 400
    assert response.json() == {"error": f"conditions[1].conditions[0].value: {TOTAL}"}


async def test_without_stores_nobody_has_bought(client, ws):
    await contact(client, ws.headers, A)
    answer = await preview(client, ws.headers, rule(cond("ecommerce.total_spent", "lte", 0)))
    assert answer["count"] == 1
    for condition in (
        cond("ecommerce.orders_count", "gt", 0),
        cond("ecommerce.purchased", "category", {"category": "Shirts"}),
        cond("ecommerce.last_order", "before_last", 1),
        cond("ecommerce.cart", "abandoned"),
    ):
        assert await matched(client, ws.headers, rule(condition)) == set()


async def test_the_dashboard_builder_offers_purchase_fields(app, client, db, settings, ws):
    """The rule builder lists the e-commerce fields, counts with them (a purchase's window
    in its own box), saves the API's rule and opens it again as the same form."""
    for email in (A, B):
        await contact(client, ws.headers, email)
    h = ws.headers
    shop = (await make_store(client, h))["id"]
    await _product(client, h, shop, "boots", "Shoes")
    await put_order(
        client, h, shop, "a1", email=A, total="150", placed_at=_ago(10), lines=[_line("boots")]
    )
    await put_order(client, h, shop, "b1", email=B, total="150", lines=[_line("socks")])

    def count(html: str) -> int:
        return int(re.search(r'<p class="figure">([\d,]+)', html).group(1).replace(",", ""))

    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/app/segments/new")
        assert '<option value="ecommerce.purchased">purchased (shop)</option>' in page.text
        form = {
            "csrf": csrf_of(page.text),
            "name": "Shoe buyers",
            "match_top": "all",
            "field_0": "ecommerce.purchased",
            "op_0": "category",
            "value_0": "shoes",
            "days_0": "30",
            "group_0": "",
            "field_1": "ecommerce.total_spent",
            "op_1": "gt",
            "value_1": "100",
            "group_1": "",
        }
        counted = await member.post("/app/segments/builder", data=form)
        assert count(counted.text) == 1
        assert 'name="days_0" value="30"' in counted.text
        assert (
            count((await member.post("/app/segments/builder", data={**form, "days_0": "5"})).text)
            == 0
        )
        refused = await member.post("/app/segments/builder", data={**form, "value_1": "lots"})
        assert f"conditions[1].value: {TOTAL}" in refused.text

        saved = await member.post("/app/segments/save", data=form)
        assert saved.status_code == 303, saved.text
        segment_id = saved.headers["location"].rsplit("/", 1)[1]
        stored = await client.get(f"/api/v1/segments/{segment_id}", headers=h)
        assert stored.json()["segment"]["rules"] == rule(
            cond("ecommerce.purchased", "category", {"category": "shoes", "within_days": 30}),
            cond("ecommerce.total_spent", "gt", 100),
        )
        reopened = await member.get(f"/app/segments/{segment_id}")
        shown = form_values(reopened.text, "segment-builder")
        assert (shown["field_0"], shown["op_0"], shown["value_0"], shown["days_0"]) == (
            "ecommerce.purchased",
            "category",
            "shoes",
            "30",
        )
        assert (shown["field_1"], shown["op_1"], shown["value_1"]) == (
            "ecommerce.total_spent",
            "gt",
            "100",
        )
        assert count(reopened.text) == 1
