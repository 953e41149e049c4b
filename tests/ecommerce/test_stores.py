"""Stores through the API: create (the secret once), read, change, page, delete with what they
hold, the rules' exact messages, permissions and another workspace's store."""

from __future__ import annotations

import pytest

from mailroom.models import Order, Product
from tests.ecommerce.store_helpers import API, count_rows, get_json, make_store, put_order

STORE_KEYS = {
    "id",
    "name",
    "currency",
    "platform",
    "abandon_after_minutes",
    "attribution_days",
    "created_at",
    "updated_at",
}


async def test_create_shows_the_secret_once_and_reads_back_without_it(client, ws):
    response = await client.post(
        f"{API}/stores", json={"name": "Main shop", "currency": "EUR"}, headers=ws.headers
    )
    assert response.status_code == 201
    store = response.json()["store"]
    assert set(store) == STORE_KEYS | {"webhook_secret"}
    assert len(store["webhook_secret"]) >= 32
    assert store["platform"] == "custom"
    assert store["abandon_after_minutes"] == 60 and store["attribution_days"] == 5

    read = await get_json(client, ws.headers, f"/stores/{store['id']}")
    assert set(read["store"]) == STORE_KEYS
    assert read["store"] == {k: v for k, v in store.items() if k != "webhook_secret"}
    listed = await get_json(client, ws.headers, "/stores")
    assert "webhook_secret" not in listed["stores"][0]
    other = await make_store(client, ws.headers, "Second")
    assert other["webhook_secret"] != store["webhook_secret"]


async def test_every_field_given(client, ws):
    store = await make_store(
        client,
        ws.headers,
        "Outlet",
        platform="shopify",
        abandon_after_minutes=10_080,
        attribution_days=30,
    )
    assert (store["platform"], store["abandon_after_minutes"], store["attribution_days"]) == (
        "shopify",
        10_080,
        30,
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"currency": "EUR"}, "name is required"),
        ({"name": "Shop"}, "currency is required"),
        (
            {"name": "Shop", "currency": "eur"},
            "currency must be an ISO 4217 code of three capital letters (e.g. EUR)",
        ),
        (
            {"name": "Shop", "currency": "EURO"},
            "currency must be an ISO 4217 code of three capital letters (e.g. EUR)",
        ),
        (
            {"name": "Shop", "currency": "EUR", "platform": "magento"},
            "platform must be one of custom, shopify, woocommerce",
        ),
        (
            {"name": "Shop", "currency": "EUR", "abandon_after_minutes": 0},
            "abandon_after_minutes must be a whole number from 1 to 10,080",
        ),
        (
            {"name": "Shop", "currency": "EUR", "abandon_after_minutes": 10_081},
            "abandon_after_minutes must be a whole number from 1 to 10,080",
        ),
        (
            {"name": "Shop", "currency": "EUR", "abandon_after_minutes": 1.5},
            "abandon_after_minutes must be a whole number from 1 to 10,080",
        ),
        (
            {"name": "Shop", "currency": "EUR", "attribution_days": 0},
            "attribution_days must be a whole number from 1 to 90",
        ),
    ],
)
async def test_create_refusals(client, ws, body, message):
    response = await client.post(f"{API}/stores", json=body, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert (await get_json(client, ws.headers, "/stores"))["stores"] == []


async def test_names_are_unique_ignoring_case(client, ws):
    first = await make_store(client, ws.headers, "Main Shop")
    response = await client.post(
        f"{API}/stores", json={"name": "main shop", "currency": "USD"}, headers=ws.headers
    )
    assert response.status_code == 409
    assert response.json()["error"] == "A store with this name already exists"
    assert response.json()["id"] == first["id"]


async def test_patch_changes_and_keeps_the_rest(client, ws):
    store = await make_store(client, ws.headers)
    response = await client.patch(
        f"{API}/stores/{store['id']}",
        json={"name": "Renamed", "abandon_after_minutes": 15, "currency": "USD"},
        headers=ws.headers,
    )
    assert response.status_code == 200, response.text
    changed = response.json()["store"]
    assert (changed["name"], changed["abandon_after_minutes"], changed["currency"]) == (
        "Renamed",
        15,
        "USD",
    )
    assert changed["attribution_days"] == 5 and "webhook_secret" not in changed
    again = await get_json(client, ws.headers, f"/stores/{store['id']}")
    assert again["store"] == changed

    empty = await client.patch(f"{API}/stores/{store['id']}", json={}, headers=ws.headers)
    assert empty.status_code == 400
    unknown = await client.patch(
        f"{API}/stores/{store['id']}", json={"webhook_secret": "x"}, headers=ws.headers
    )
    assert unknown.status_code == 400


async def test_currency_is_fixed_once_the_store_has_orders(client, ws):
    store = await make_store(client, ws.headers)
    await put_order(client, ws.headers, store["id"], "1001", total="10.00")
    response = await client.patch(
        f"{API}/stores/{store['id']}", json={"currency": "USD"}, headers=ws.headers
    )
    assert response.status_code == 409
    assert response.json() == {"error": "currency cannot change once the store has orders"}
    same = await client.patch(
        f"{API}/stores/{store['id']}", json={"currency": "EUR"}, headers=ws.headers
    )
    assert same.status_code == 200


async def test_paging_and_q(client, ws):
    for name in ("Alpha", "Beta", "Gamma shop", "Delta shop"):
        await make_store(client, ws.headers, name)
    first = await get_json(client, ws.headers, "/stores", limit=3)
    assert [s["name"] for s in first["stores"]] == ["Alpha", "Beta", "Delta shop"]
    assert first["pagination"] == {"page": 1, "limit": 3, "total": 4, "total_pages": 2}
    second = await get_json(client, ws.headers, "/stores", limit=3, page=2)
    assert [s["name"] for s in second["stores"]] == ["Gamma shop"]
    shops = await get_json(client, ws.headers, "/stores", q="SHOP")
    assert [s["name"] for s in shops["stores"]] == ["Delta shop", "Gamma shop"]


async def test_delete_takes_what_the_store_holds(client, ws, db):
    store = await make_store(client, ws.headers)
    keep = await make_store(client, ws.headers, "Other")
    await put_order(
        client,
        ws.headers,
        store["id"],
        "1",
        total="5.00",
        lines=[{"product_id": "p1", "quantity": 1, "price": "5.00"}],
    )
    await put_order(client, ws.headers, keep["id"], "1", total="7.00")
    product = await client.put(
        f"{API}/stores/{store['id']}/products/p1", json={"title": "Pen"}, headers=ws.headers
    )
    assert product.status_code == 201

    response = await client.delete(f"{API}/stores/{store['id']}", headers=ws.headers)
    assert response.status_code == 200
    assert response.json() == {"success": True, "id": store["id"]}
    gone = await client.get(f"{API}/stores/{store['id']}", headers=ws.headers)
    assert gone.status_code == 404 and gone.json() == {"error": "Store not found"}
    assert await count_rows(db, Order, store_id=store["id"]) == 0
    assert await count_rows(db, Product, store_id=store["id"]) == 0
    assert await count_rows(db, Order, store_id=keep["id"]) == 1
    again = await client.delete(f"{API}/stores/{store['id']}", headers=ws.headers)
    assert again.status_code == 404


async def test_permissions(client, ws, factory):
    store = await make_store(client, ws.headers)
    reader = await factory.key(ws, ["ecommerce:read"])
    nobody = await factory.key(ws, ["contacts:read"])
    assert (await client.get(f"{API}/stores", headers=reader)).status_code == 200
    writes = [
        ("POST", f"{API}/stores", {"name": "X", "currency": "EUR"}),
        ("PATCH", f"{API}/stores/{store['id']}", {"name": "Y"}),
        ("DELETE", f"{API}/stores/{store['id']}", None),
        ("PUT", f"{API}/stores/{store['id']}/orders/1", {"total": "1.00"}),
        ("POST", f"{API}/stores/{store['id']}/orders/batch", {"orders": []}),
        ("PUT", f"{API}/stores/{store['id']}/carts/c1", {"total": "1.00"}),
        ("PUT", f"{API}/stores/{store['id']}/products/p1", {"title": "Pen"}),
        ("DELETE", f"{API}/stores/{store['id']}/products/p1", None),
    ]
    for method, path, body in writes:
        response = await client.request(method, path, json=body, headers=reader)
        assert response.status_code == 403, (method, path)
        assert response.json() == {"error": "Forbidden: ecommerce:write permission required"}
    for path in ("/stores", f"/stores/{store['id']}", f"/stores/{store['id']}/orders"):
        response = await client.get(f"{API}{path}", headers=nobody)
        assert response.status_code == 403
        assert response.json() == {"error": "Forbidden: ecommerce:read permission required"}
    assert (await get_json(client, ws.headers, f"/stores/{store['id']}/orders"))["orders"] == []


async def test_another_workspaces_store_is_not_found(client, ws, factory, db):
    other = await factory.workspace("pro")
    theirs = await make_store(client, other.headers, "Their shop")
    await put_order(client, other.headers, theirs["id"], "9", total="9.00", email="x@example.com")
    sid = theirs["id"]
    calls = [
        ("GET", f"/stores/{sid}", None),
        ("PATCH", f"/stores/{sid}", {"name": "Mine now"}),
        ("DELETE", f"/stores/{sid}", None),
        ("GET", f"/stores/{sid}/orders", None),
        ("GET", f"/stores/{sid}/orders/9", None),
        ("PUT", f"/stores/{sid}/orders/9", {"total": "0.00"}),
        ("DELETE", f"/stores/{sid}/orders/9", None),
        ("POST", f"/stores/{sid}/orders/batch", {"orders": [{"external_id": "10", "total": 1}]}),
        ("GET", f"/stores/{sid}/products", None),
        ("PUT", f"/stores/{sid}/products/p", {"title": "Pen"}),
        ("GET", f"/stores/{sid}/carts", None),
        ("PUT", f"/stores/{sid}/carts/c", {"total": "1.00"}),
    ]
    for method, path, body in calls:
        response = await client.request(method, f"{API}{path}", json=body, headers=ws.headers)
        assert response.status_code == 404, (method, path, response.text)
        assert response.json() == {"error": "Store not found"}
    assert (await get_json(client, ws.headers, "/stores"))["stores"] == []
    order = await get_json(client, other.headers, f"/stores/{sid}/orders/9")
    assert order["order"]["total"] == "9.00"
    assert await count_rows(db, Order, store_id=sid) == 1
    assert await count_rows(db, Product, store_id=sid) == 0
