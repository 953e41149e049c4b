"""`POST /hooks/woocommerce/{store_id}` with WooCommerce's documented payloads, signed with the
store's own webhook secret (typed into WooCommerce's webhook form): the ping a saved webhook
sends answered 200 with nothing stored, orders and products applied and read back, customers
subscribed only when the shop records consent, a retry applied once, and refusals that store
nothing."""

from __future__ import annotations

import json
import uuid
from typing import Any

from mailroom.models import Contact, Order, Product, StoreDelivery
from tests.ecommerce.platform_fixtures import load, raw, woocommerce_headers
from tests.ecommerce.store_helpers import API, count_rows, get_json, make_store

PING = b"webhook_id=142"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


async def woo_store(client, ws, name: str = "Woo shop") -> dict[str, Any]:
    """A WooCommerce store in USD; its generated secret is what the merchant pastes."""
    return await make_store(client, ws.headers, name, currency="USD", platform="woocommerce")


async def deliver(
    client,
    store: dict[str, Any],
    topic: str,
    data: bytes,
    *,
    secret: str | None = None,
    delivery_id: str | None = None,
):
    headers = {
        **woocommerce_headers(topic, data, secret or store["webhook_secret"]),
        "Content-Type": "application/json",
        "X-WC-Webhook-Delivery-ID": delivery_id or uuid.uuid4().hex,
    }
    return await client.post(f"/hooks/woocommerce/{store['id']}", content=data, headers=headers)


def customer(**changes: Any) -> bytes:
    body = load("woocommerce", "customer_created")
    body.update(changes)
    return json.dumps(body, default=str).encode()


async def test_the_ping_of_a_saved_webhook_is_answered_and_stores_nothing(client, db, ws):
    store = await woo_store(client, ws)
    ping = await client.post(f"/hooks/woocommerce/{store['id']}", content=PING, headers=FORM)
    assert ping.status_code == 200
    assert ping.json() == {"received": True, "outcome": "ignored", "detail": "WooCommerce ping"}
    assert await count_rows(db, StoreDelivery) == 0
    listed = await get_json(client, ws.headers, f"/stores/{store['id']}/deliveries")
    assert listed["deliveries"] == [] and listed["pagination"]["total"] == 0
    # A wrong URL is what WooCommerce should report to the merchant: 404.
    unknown = await client.post(f"/hooks/woocommerce/{uuid.uuid4()}", content=PING, headers=FORM)
    assert unknown.status_code == 404 and unknown.json() == {"error": "Store not found"}
    shopify = await make_store(client, ws.headers, "Shopify", currency="USD", platform="shopify")
    wrong = await client.post(f"/hooks/woocommerce/{shopify['id']}", content=PING, headers=FORM)
    assert wrong.status_code == 404
    # Anything else unsigned is refused: a topic makes it a delivery, and deliveries are signed.
    topical = await client.post(
        f"/hooks/woocommerce/{store['id']}",
        content=PING,
        headers={**FORM, "X-WC-Webhook-Topic": "order.created"},
    )
    assert topical.status_code == 401 and topical.json() == {"error": "the delivery is not signed"}
    assert await count_rows(db, StoreDelivery) == 0


async def test_orders_and_products_are_applied_and_read_back(client, ws):
    store = await woo_store(client, ws)
    sid = store["id"]
    order = await deliver(client, store, "order.created", raw("woocommerce", "order_created"))
    assert order.status_code == 200, order.text
    assert order.json() == {"received": True, "outcome": "applied", "detail": "order 727 created"}
    stored = (await get_json(client, ws.headers, f"/stores/{sid}/orders/727"))["order"]
    assert (stored["status"], stored["total"], stored["currency"]) == ("paid", "29.35", "USD")
    assert stored["email"] == "john.doe@example.com"
    assert stored["placed_at"].startswith("2017-03-22T19:28:02")
    assert stored["lines"] == [
        {"product_id": "93", "quantity": 2, "price": "3.00"},
        {"product_id": "22", "quantity": 1, "price": "12.00"},
    ]

    product = await deliver(client, store, "product.updated", raw("woocommerce", "product_updated"))
    assert product.json()["detail"] == "product 794 created"
    shown = (await get_json(client, ws.headers, f"/stores/{sid}/products/794"))["product"]
    assert (shown["title"], shown["price"]) == ("Premium Quality", "21.99")
    assert shown["url"] == "https://example.com/product/premium-quality-19/"
    assert shown["categories"] == ["Clothing", "T-shirts"]

    # A later status arrives as order.updated: the same order changes.
    completed = load("woocommerce", "order_created")
    completed.update(status="completed", date_modified_gmt="2017-03-23T08:00:00")
    updated = await deliver(client, store, "order.updated", json.dumps(completed).encode())
    assert updated.json()["detail"] == "order 727 updated"
    stored = (await get_json(client, ws.headers, f"/stores/{sid}/orders/727"))["order"]
    assert stored["status"] == "fulfilled"

    deleted = await deliver(client, store, "order.deleted", b'{"id": 727}')
    assert deleted.json()["outcome"] == "ignored"
    assert (await get_json(client, ws.headers, f"/stores/{sid}/orders/727"))["order"]

    log = await get_json(client, ws.headers, f"/stores/{sid}/deliveries")
    assert [(d["topic"], d["outcome"], d["platform"]) for d in log["deliveries"]] == [
        ("order.deleted", "ignored", "woocommerce"),
        ("order.updated", "applied", "woocommerce"),
        ("product.updated", "applied", "woocommerce"),
        ("order.created", "applied", "woocommerce"),
    ]


async def test_a_customer_subscribes_only_when_the_shop_records_consent(client, db, ws):
    store = await woo_store(client, ws)
    plain = await deliver(client, store, "customer.created", raw("woocommerce", "customer_created"))
    assert plain.json() == {
        "received": True,
        "outcome": "ignored",
        "detail": "customer 25: no marketing consent to act on",
    }
    declined = customer(meta_data=[{"id": 1, "key": "accepts_marketing", "value": "no"}])
    assert (await deliver(client, store, "customer.updated", declined)).json()[
        "outcome"
    ] == "ignored"
    assert await count_rows(db, Contact, workspace_id=ws.workspace_id) == 0

    agreed = customer(meta_data=[{"id": 1, "key": "accepts_marketing", "value": "yes"}])
    answer = await deliver(client, store, "customer.updated", agreed)
    assert answer.json()["outcome"] == "applied"
    found = await client.get(
        "/api/v1/contacts", params={"q": "john.doe@example.com"}, headers=ws.headers
    )
    [contact] = found.json()["contacts"]
    assert contact["status"] == "subscribed" and contact["source"] == "woocommerce"
    assert contact["custom_fields"]["consent_source"] == f"woocommerce:{store['id']}"


async def test_a_bad_signature_stores_nothing(client, db, ws):
    store = await woo_store(client, ws)
    data = raw("woocommerce", "order_created")
    other = await woo_store(client, ws, "Other")
    # Signed with another store's secret: not this store's delivery.
    forged = await deliver(client, store, "order.created", data, secret=other["webhook_secret"])
    assert forged.status_code == 401
    assert forged.json() == {"error": "the signature does not match the store's webhook secret"}
    assert await count_rows(db, Order) == 0
    assert await count_rows(db, StoreDelivery) == 0
    not_json = await deliver(client, store, "order.created", b"webhook_id=1&x=2")
    assert not_json.status_code == 400 and not_json.json() == {"error": "body is not valid JSON"}
    assert await count_rows(db, StoreDelivery) == 0


async def test_a_retry_is_applied_once(client, db, ws):
    store = await woo_store(client, ws)
    data = raw("woocommerce", "product_updated")
    first = await deliver(client, store, "product.updated", data, delivery_id="d-1")
    assert first.json()["outcome"] == "applied"
    # The product changed through the API since: the retry must not bring the old one back.
    changed = await client.put(
        f"{API}/stores/{store['id']}/products/794",
        json={"title": "Renamed", "price": "1.00"},
        headers=ws.headers,
    )
    assert changed.status_code == 200, changed.text
    retry = await deliver(client, store, "product.updated", data, delivery_id="d-1")
    assert retry.status_code == 200 and retry.json()["outcome"] == "duplicate"
    product = await get_json(client, ws.headers, f"/stores/{store['id']}/products/794")
    assert product["product"]["title"] == "Renamed"
    assert await count_rows(db, Product) == 1
    assert await count_rows(db, StoreDelivery) == 1
