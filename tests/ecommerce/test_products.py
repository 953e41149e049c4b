"""Products through the API: upsert by the shop's id (201, then 200), nothing changes when the
same product is sent again, money in and out, `q`, paging, delete and refusals."""

from __future__ import annotations

import pytest

from mailroom.models import Product
from tests.ecommerce.store_helpers import API, count_rows, get_json, make_store, put

PRODUCT_KEYS = {
    "id",
    "external_id",
    "store_id",
    "title",
    "url",
    "image_url",
    "price",
    "categories",
    "created_at",
    "updated_at",
}
SHIRT = {
    "title": "Linen shirt",
    "url": "https://shop.example.com/p/shirt",
    "image_url": "https://cdn.example.com/shirt.jpg",
    "price": "49.9",
    "categories": ["Shirts", "Summer", "Shirts"],
}


async def test_put_creates_then_updates_and_the_same_twice_changes_nothing(client, ws):
    store = await make_store(client, ws.headers)
    created = await put(client, ws.headers, store["id"], "products", "sku-1", SHIRT)
    assert created.status_code == 201, created.text
    product = created.json()["product"]
    assert set(product) == PRODUCT_KEYS
    assert product["external_id"] == "sku-1" and product["store_id"] == store["id"]
    assert product["price"] == "49.90"
    assert product["categories"] == ["Shirts", "Summer"]

    same = await put(client, ws.headers, store["id"], "products", "sku-1", SHIRT)
    assert same.status_code == 200
    assert same.json()["product"] == product  # updated_at included: nothing was written

    changed = await put(
        client, ws.headers, store["id"], "products", "sku-1", {**SHIRT, "price": 39}
    )
    assert changed.status_code == 200
    assert changed.json()["product"]["id"] == product["id"]
    assert changed.json()["product"]["price"] == "39.00"
    assert changed.json()["product"]["updated_at"] > product["updated_at"]
    read = await get_json(client, ws.headers, f"/stores/{store['id']}/products/sku-1")
    assert read["product"] == changed.json()["product"]


async def test_optional_fields_are_null_without_them(client, ws):
    store = await make_store(client, ws.headers)
    response = await put(client, ws.headers, store["id"], "products", "p", {"title": "  Pen  "})
    assert response.status_code == 201
    product = response.json()["product"]
    assert (product["title"], product["url"], product["price"], product["categories"]) == (
        "Pen",
        None,
        None,
        [],
    )


@pytest.mark.parametrize(
    ("sent", "shown"),
    [
        ("19.90", "19.90"),
        ("19.9", "19.90"),
        ("19", "19.00"),
        (19.9, "19.90"),
        (19, "19.00"),
        (0.07, "0.07"),
        ("0", "0.00"),
        (999999999999.99, "999999999999.99"),
    ],
)
async def test_money_as_string_or_number(client, ws, sent, shown):
    store = await make_store(client, ws.headers)
    response = await put(
        client, ws.headers, store["id"], "products", "p", {"title": "Pen", "price": sent}
    )
    assert response.status_code == 201, response.text
    assert response.json()["product"]["price"] == shown


MONEY_ERROR = (
    'price must be an amount with at most two decimal places (e.g. "19.90"), '
    "from 0 to 999999999999.99"
)


@pytest.mark.parametrize(
    "sent", ["19.999", 19.999, "-1", -1, "1e3", "", " 5", "5.", ".5", True, [5], 1e13, "١٢"]
)
async def test_money_refusals(client, ws, db, sent):
    store = await make_store(client, ws.headers)
    response = await put(
        client, ws.headers, store["id"], "products", "p", {"title": "Pen", "price": sent}
    )
    assert response.status_code == 400
    assert response.json() == {"error": MONEY_ERROR}
    assert await count_rows(db, Product) == 0


@pytest.mark.parametrize(
    ("external_id", "body", "message"),
    [
        ("p", {}, "title is required"),
        ("p", {"title": "   "}, "title is required"),
        ("p", {"title": "x" * 501}, "title must be 500 characters or fewer"),
        (
            "p",
            {"title": "Pen", "url": "ftp://x"},
            "url must be an http(s) URL of 2000 characters or fewer, or null",
        ),
        ("p", {"title": "Pen", "categories": "Shirts"}, "categories must be an array of names"),
        ("p", {"title": "Pen", "categories": [""]}, "categories[0] is required"),
        (
            ".hidden",
            {"title": "Pen"},
            "external_id must be 1 to 255 letters, digits or . _ : @ ~ + - "
            "(not starting with a dot)",
        ),
        (
            "a b",
            {"title": "Pen"},
            "external_id must be 1 to 255 letters, digits or . _ : @ ~ + - "
            "(not starting with a dot)",
        ),
    ],
)
async def test_refusals(client, ws, db, external_id, body, message):
    store = await make_store(client, ws.headers)
    response = await put(client, ws.headers, store["id"], "products", external_id, body)
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert await count_rows(db, Product) == 0


async def test_q_and_paging(client, ws):
    store = await make_store(client, ws.headers)
    other = await make_store(client, ws.headers, "Other")
    for ext, title in [("1", "Blue shirt"), ("2", "Red SHIRT"), ("3", "Socks"), ("4", "shirt")]:
        response = await put(client, ws.headers, store["id"], "products", ext, {"title": title})
        assert response.status_code == 201
    await put(client, ws.headers, other["id"], "products", "9", {"title": "Other shirt"})
    path = f"/stores/{store['id']}/products"
    everything = await get_json(client, ws.headers, path)
    assert [p["title"] for p in everything["products"]] == [
        "Blue shirt",
        "Red SHIRT",
        "shirt",
        "Socks",
    ]
    shirts = await get_json(client, ws.headers, path, q="Shirt", limit=2)
    assert [p["title"] for p in shirts["products"]] == ["Blue shirt", "Red SHIRT"]
    assert shirts["pagination"] == {"page": 1, "limit": 2, "total": 3, "total_pages": 2}
    rest = await get_json(client, ws.headers, path, q="Shirt", limit=2, page=2)
    assert [p["title"] for p in rest["products"]] == ["shirt"]
    assert (await get_json(client, ws.headers, path, q="%"))["products"] == []


async def test_delete(client, ws):
    store = await make_store(client, ws.headers)
    made = await put(client, ws.headers, store["id"], "products", "p-1", {"title": "Pen"})
    product = made.json()["product"]
    path = f"{API}/stores/{store['id']}/products/p-1"
    response = await client.delete(path, headers=ws.headers)
    assert response.status_code == 200
    assert response.json() == {"success": True, "id": product["id"], "external_id": "p-1"}
    gone = await client.get(path, headers=ws.headers)
    assert gone.status_code == 404 and gone.json() == {"error": "Product not found"}
    again = await client.delete(path, headers=ws.headers)
    assert again.status_code == 404 and again.json() == {"error": "Product not found"}
