"""Orders through the API: the contract's JSON, PUT 201/200, upserting the same order twice
changes nothing, fields left out are kept, the store's currency, filters and paging, the
batch (500 at most, all or nothing) and the lines table mirroring each order."""

from __future__ import annotations

import pytest

from mailroom.models import Order, OrderLine
from tests.ecommerce.store_helpers import (
    API,
    count_rows,
    get_json,
    line_rows,
    make_store,
    order_row,
    put,
    put_order,
)

ORDER_KEYS = {
    "id",
    "external_id",
    "store_id",
    "email",
    "contact_id",
    "status",
    "total",
    "currency",
    "placed_at",
    "lines",
    "attributed_to",
}
ORDER = {
    "email": " Jane@Example.COM ",
    "status": "paid",
    "total": "59.80",
    "currency": "EUR",
    "placed_at": "2026-03-15T10:30:00+01:00",
    "lines": [
        {"product_id": "shirt-1", "quantity": 2, "price": "19.90"},
        {"product_id": "socks", "quantity": 1, "price": 20},
    ],
}


async def test_put_creates_an_order_as_the_contract_shows_it(client, ws, db):
    store = await make_store(client, ws.headers)
    order = await put_order(client, ws.headers, store["id"], "1001", **ORDER)
    assert set(order) == ORDER_KEYS
    assert order["external_id"] == "1001" and order["store_id"] == store["id"]
    assert order["email"] == "jane@example.com"
    assert order["contact_id"] is None and order["attributed_to"] is None
    assert (order["status"], order["total"], order["currency"]) == ("paid", "59.80", "EUR")
    assert order["placed_at"].startswith("2026-03-15T09:30:00")
    assert order["lines"] == [
        {"product_id": "shirt-1", "quantity": 2, "price": "19.90"},
        {"product_id": "socks", "quantity": 1, "price": "20.00"},
    ]
    read = await get_json(client, ws.headers, f"/stores/{store['id']}/orders/1001")
    assert read == {"order": order}
    assert await line_rows(db, order["id"]) == [(0, "shirt-1", 2, 1990), (1, "socks", 1, 2000)]


async def test_the_same_order_twice_changes_nothing(client, ws, db):
    store = await make_store(client, ws.headers)
    first = await put_order(client, ws.headers, store["id"], "1001", **ORDER)
    stored = await order_row(db, store["id"], "1001")
    again = await put_order(client, ws.headers, store["id"], "1001", expect=200, **ORDER)
    assert again == first
    # The same content in other spellings is the same order too.
    respelled = {**ORDER, "total": 59.8, "email": "JANE@example.com"}
    await put_order(client, ws.headers, store["id"], "1001", expect=200, **respelled)
    after = await order_row(db, store["id"], "1001")
    assert after.updated_at == stored.updated_at  # nothing written
    assert await count_rows(db, Order) == 1
    assert await count_rows(db, OrderLine) == 2


async def test_an_update_changes_what_is_sent_and_keeps_the_rest(client, ws, db):
    store = await make_store(client, ws.headers)
    first = await put_order(client, ws.headers, store["id"], "1001", **ORDER)
    before = await order_row(db, store["id"], "1001")
    refunded = await put_order(
        client, ws.headers, store["id"], "1001", expect=200, status="refunded", total="59.80"
    )
    assert refunded == {**first, "status": "refunded"}
    assert (await order_row(db, store["id"], "1001")).updated_at > before.updated_at
    fewer = await put_order(
        client,
        ws.headers,
        store["id"],
        "1001",
        expect=200,
        total="19.90",
        lines=[{"product_id": "shirt-1", "quantity": 1, "price": "19.90"}],
        email=None,
    )
    assert fewer["lines"] == [{"product_id": "shirt-1", "quantity": 1, "price": "19.90"}]
    assert (fewer["email"], fewer["total"], fewer["status"]) == (None, "19.90", "refunded")
    assert await line_rows(db, first["id"]) == [(0, "shirt-1", 1, 1990)]


async def test_defaults_of_a_new_order(client, ws):
    store = await make_store(client, ws.headers, currency="USD")
    order = await put_order(client, ws.headers, store["id"], "A-1", total=0)
    assert (order["status"], order["currency"], order["total"], order["lines"]) == (
        "placed",
        "USD",
        "0.00",
        [],
    )
    assert order["email"] is None and order["placed_at"]


async def test_currency_must_be_the_stores(client, ws, db):
    store = await make_store(client, ws.headers)
    response = await put(
        client, ws.headers, store["id"], "orders", "1", {"total": "5.00", "currency": "USD"}
    )
    assert response.status_code == 400
    assert response.json() == {"error": "currency must be EUR"}
    assert await count_rows(db, Order) == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "total is required"),
        (
            {"total": "5.001"},
            "total must be an amount with at most two decimal places "
            '(e.g. "19.90"), from 0 to 999999999999.99',
        ),
        (
            {"total": 5, "status": "shipped"},
            "status must be one of placed, paid, fulfilled, cancelled, refunded",
        ),
        ({"total": 5, "email": "not-an-address"}, "email is not a valid email address"),
        (
            {"total": 5, "placed_at": "yesterday"},
            "placed_at must be an ISO 8601 date-time (e.g. 2026-03-15T10:30:00Z)",
        ),
        (
            {"total": 5, "lines": [{"product_id": "p", "quantity": -1, "price": 1}]},
            "lines[0].quantity must be a whole number from 0 to 1,000,000",
        ),
        ({"total": 5, "lines": [{"quantity": 1, "price": 1}]}, "lines[0].product_id is required"),
        ({"total": 5, "lines": [{"product_id": "p", "quantity": 1}]}, "lines[0].price is required"),
        (
            {"total": 5, "lines": ["p"]},
            "lines[0] must be an object with product_id, quantity and price",
        ),
        (
            {"total": 5, "cart_id": "../x"},
            "cart_id must be 1 to 255 letters, digits or . _ : @ ~ + - (not starting with a dot)",
        ),
    ],
)
async def test_refusals(client, ws, db, body, message):
    store = await make_store(client, ws.headers)
    response = await put(client, ws.headers, store["id"], "orders", "1", body)
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert await count_rows(db, Order) == 0


async def test_filters_and_paging(client, ws, factory):
    store = await make_store(client, ws.headers)
    contact = await client.post(
        "/api/v1/contacts", json={"email": "ann@example.com"}, headers=ws.headers
    )
    ann = contact.json()["contact"]["id"]
    for i, email in enumerate(["ann@example.com", "bob@example.com", "ANN@example.com", None]):
        await put_order(
            client,
            ws.headers,
            store["id"],
            f"o{i}",
            total=i,
            email=email,
            placed_at=f"2026-01-0{i + 1}T00:00:00Z",
        )
    path = f"/stores/{store['id']}/orders"
    everything = await get_json(client, ws.headers, path)
    assert [o["external_id"] for o in everything["orders"]] == ["o3", "o2", "o1", "o0"]
    by_email = await get_json(client, ws.headers, path, email="Ann@Example.com")
    assert [o["external_id"] for o in by_email["orders"]] == ["o2", "o0"]
    by_contact = await get_json(client, ws.headers, path, contact_id=ann)
    assert [o["external_id"] for o in by_contact["orders"]] == ["o2", "o0"]
    assert all(o["contact_id"] == ann for o in by_contact["orders"])
    paged = await get_json(client, ws.headers, path, limit=3, page=2)
    assert [o["external_id"] for o in paged["orders"]] == ["o0"]
    assert paged["pagination"] == {"page": 2, "limit": 3, "total": 4, "total_pages": 2}
    assert (await get_json(client, ws.headers, path, email="nobody@example.com"))["orders"] == []


async def test_delete(client, ws, db):
    store = await make_store(client, ws.headers)
    order = await put_order(client, ws.headers, store["id"], "1001", **ORDER)
    path = f"{API}/stores/{store['id']}/orders/1001"
    response = await client.delete(path, headers=ws.headers)
    assert response.status_code == 200
    assert response.json() == {"success": True, "id": order["id"], "external_id": "1001"}
    gone = await client.get(path, headers=ws.headers)
    assert gone.status_code == 404 and gone.json() == {"error": "Order not found"}
    assert await count_rows(db, OrderLine) == 0


# ---------------------------------------------------------------- batch


def _batch(n: int, start: int = 0, **extra) -> list[dict]:
    return [
        {
            "external_id": f"b{i}",
            "email": f"buyer{i}@example.com",
            "total": f"{i}.50",
            "lines": [{"product_id": "p", "quantity": 1, "price": f"{i}.50"}],
            **extra,
        }
        for i in range(start, start + n)
    ]


async def _post_batch(client, ws, store_id, orders):
    return await client.post(
        f"{API}/stores/{store_id}/orders/batch", json={"orders": orders}, headers=ws.headers
    )


async def test_batch_creates_updates_and_leaves_the_unchanged(client, ws, db):
    store = await make_store(client, ws.headers)
    response = await _post_batch(client, ws, store["id"], _batch(3))
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["created"], body["updated"], body["unchanged"]) == (3, 0, 0)
    assert [(o["external_id"], o["result"]) for o in body["orders"]] == [
        ("b0", "created"),
        ("b1", "created"),
        ("b2", "created"),
    ]
    stored = await order_row(db, store["id"], "b1")
    assert body["orders"][1]["id"] == stored.id
    again = _batch(3)
    again[2]["status"] = "cancelled"
    second = (await _post_batch(client, ws, store["id"], again)).json()
    assert (second["created"], second["updated"], second["unchanged"]) == (0, 1, 2)
    assert (await order_row(db, store["id"], "b1")).updated_at == stored.updated_at
    read = await get_json(client, ws.headers, f"/stores/{store['id']}/orders/b2")
    assert read["order"]["status"] == "cancelled" and read["order"]["total"] == "2.50"
    assert await count_rows(db, Order) == 3
    assert await count_rows(db, OrderLine) == 3


async def test_batch_of_500_is_taken_and_501_is_refused_storing_nothing(client, ws, db):
    store = await make_store(client, ws.headers)
    too_many = await _post_batch(client, ws, store["id"], _batch(501))
    assert too_many.status_code == 400
    assert too_many.json() == {"error": "orders may have at most 500 items"}
    assert await count_rows(db, Order) == 0
    full = await _post_batch(client, ws, store["id"], _batch(500))
    assert full.status_code == 200 and full.json()["created"] == 500
    assert await count_rows(db, Order) == 500
    assert await count_rows(db, OrderLine) == 500
    listed = await get_json(client, ws.headers, f"/stores/{store['id']}/orders", limit=1)
    assert listed["pagination"]["total"] == 500


async def test_one_bad_order_stores_none_of_the_batch(client, ws, db):
    store = await make_store(client, ws.headers)
    orders = _batch(4)
    orders[2]["total"] = "abc"
    response = await _post_batch(client, ws, store["id"], orders)
    assert response.status_code == 400
    assert response.json() == {
        "error": 'total must be an amount with at most two decimal places (e.g. "19.90"), '
        "from 0 to 999999999999.99",
        "index": 2,
        "external_id": "b2",
    }
    orders[2]["total"] = "2.00"
    orders[3]["currency"] = "GBP"
    mismatch = await _post_batch(client, ws, store["id"], orders)
    assert mismatch.status_code == 400
    assert mismatch.json() == {"error": "currency must be EUR", "index": 3, "external_id": "b3"}
    unnamed = await _post_batch(client, ws, store["id"], [{"total": 1}])
    assert unnamed.status_code == 400
    assert unnamed.json() == {"error": "external_id is required", "index": 0}
    assert await count_rows(db, Order) == 0
    assert await count_rows(db, OrderLine) == 0


async def test_an_order_twice_in_one_batch_is_one_order_the_later_fields_winning(client, ws, db):
    store = await make_store(client, ws.headers)
    orders = [
        {"external_id": "x", "total": "1.00", "email": "a@example.com"},
        {"external_id": "y", "total": "2.00"},
        {"external_id": "x", "total": "1.00", "status": "paid"},
    ]
    body = (await _post_batch(client, ws, store["id"], orders)).json()
    assert [(o["external_id"], o["result"]) for o in body["orders"]] == [
        ("x", "created"),
        ("y", "created"),
    ]
    read = await get_json(client, ws.headers, f"/stores/{store['id']}/orders/x")
    assert (read["order"]["status"], read["order"]["email"]) == ("paid", "a@example.com")
    assert await count_rows(db, Order) == 2


async def test_batch_body_refusals(client, ws):
    store = await make_store(client, ws.headers)
    path = f"{API}/stores/{store['id']}/orders/batch"
    for body, message in [
        ({}, "orders is required"),
        ({"orders": "x"}, "orders must be an array of orders"),
    ]:
        response = await client.post(path, json=body, headers=ws.headers)
        assert response.status_code == 400 and response.json() == {"error": message}
    empty = await client.post(path, json={"orders": []}, headers=ws.headers)
    assert empty.json() == {"created": 0, "updated": 0, "unchanged": 0, "orders": []}
