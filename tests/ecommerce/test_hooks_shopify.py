"""`POST /hooks/shopify/{store_id}` with Shopify's documented payloads, signed as Shopify signs
them: checkouts, orders and products applied and read back through the API, the delivery log,
a retry applied once, customer consent (subscribed creates a subscriber, nothing else creates
or changes a contact), what is refused with nothing stored (signature 401, payload 400, size
413, unknown or other-platform store 404), and a replaced secret refusing the old one."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from sqlalchemy import func, select

from mailroom.models import Contact, Event, Order, StoreDelivery, WebhookDelivery
from tests.ecommerce.platform_fixtures import SECRET, load, raw, shopify_headers
from tests.ecommerce.store_helpers import API, count_rows, get_json, make_store, put_order

ORDER_ID = "5208334008572"
TOKEN = "6a7f9943815c1867d7f3532590e5597e"
PRODUCT_ID = "788032119674292922"
CUSTOMER = "bob@biller.com"


async def shopify_store(
    client, ws, name: str = "Shopify shop", currency: str = "USD"
) -> dict[str, Any]:
    """A Shopify store whose secret is the shop's key (pasted by PATCH, as set up)."""
    store = await make_store(client, ws.headers, name, currency=currency, platform="shopify")
    patched = await client.patch(
        f"{API}/stores/{store['id']}", json={"webhook_secret": SECRET}, headers=ws.headers
    )
    assert patched.status_code == 200, patched.text
    return store


async def deliver(
    client,
    store_id: str,
    topic: str,
    data: bytes,
    *,
    secret: str = SECRET,
    webhook_id: str | None = None,
    **headers: str,
):
    """A delivery as Shopify makes it; each gets its own webhook id unless one is given (a
    retry repeats its delivery's)."""
    sent = {
        **shopify_headers(topic, data, secret),
        "Content-Type": "application/json",
        "X-Shopify-Webhook-Id": webhook_id or str(uuid.uuid4()),
        **headers,
    }
    return await client.post(f"/hooks/shopify/{store_id}", content=data, headers=sent)


def payload(name: str, **changes: Any) -> bytes:
    body = load("shopify", name)
    body.update(changes)
    return json.dumps(body, default=str).encode()


async def log(client, ws, store_id: str) -> dict[str, Any]:
    return await get_json(client, ws.headers, f"/stores/{store_id}/deliveries")


async def test_checkout_order_and_product_are_applied_and_read_back(client, ws):
    store = await shopify_store(client, ws)
    sid = store["id"]

    checkout = await deliver(client, sid, "checkouts/create", raw("shopify", "checkouts_create"))
    assert checkout.status_code == 200, checkout.text
    assert checkout.json() == {
        "received": True,
        "outcome": "applied",
        "detail": f"cart {TOKEN} created",
    }
    cart = (await get_json(client, ws.headers, f"/stores/{sid}/carts/{TOKEN}"))["cart"]
    assert (cart["status"], cart["email"], cart["total"]) == (
        "active",
        "jane.doe@example.com",
        "54.95",
    )
    assert cart["currency"] == "USD" and cart["checkout_url"]

    order = await deliver(client, sid, "orders/create", raw("shopify", "orders_create"))
    assert order.status_code == 200 and order.json()["detail"] == f"order {ORDER_ID} created"
    stored = (await get_json(client, ws.headers, f"/stores/{sid}/orders/{ORDER_ID}"))["order"]
    assert stored["status"] == "paid" and stored["total"] == "59.95"
    assert stored["email"] == "jane.doe@example.com" and stored["currency"] == "USD"
    assert stored["placed_at"].startswith("2026-05-13T16:00:00")
    assert stored["lines"] == [
        {"product_id": "788032119674292922", "quantity": 1, "price": "29.95"},
        {"product_id": "632910392", "quantity": 2, "price": "12.50"},
    ]
    # The order names the checkout it completes: the cart is converted by it.
    cart = (await get_json(client, ws.headers, f"/stores/{sid}/carts/{TOKEN}"))["cart"]
    assert (cart["status"], cart["order_id"]) == ("converted", ORDER_ID)

    product = await deliver(client, sid, "products/create", raw("shopify", "products_create"))
    assert product.status_code == 200 and product.json()["outcome"] == "applied"
    shown = (await get_json(client, ws.headers, f"/stores/{sid}/products/{PRODUCT_ID}"))["product"]
    assert shown["title"] == "Example T-Shirt"
    assert shown["url"].startswith("https://mailroom-demo.myshopify.com/products/")

    deliveries = await log(client, ws, sid)
    assert deliveries["pagination"]["total"] == 3
    assert [(d["topic"], d["outcome"]) for d in deliveries["deliveries"]] == [
        ("products/create", "applied"),
        ("orders/create", "applied"),
        ("checkouts/create", "applied"),
    ]
    first = deliveries["deliveries"][0]
    assert first["platform"] == "shopify" and first["store_id"] == sid
    assert first["detail"] == f"product {PRODUCT_ID} created" and first["delivery_id"]

    # An update that says what is stored changes nothing, and says so.
    again = await deliver(client, sid, "orders/updated", raw("shopify", "orders_create"))
    assert again.json()["detail"] == f"order {ORDER_ID} unchanged"


async def test_a_bad_or_missing_signature_stores_nothing(client, db, ws):
    store = await shopify_store(client, ws)
    data = raw("shopify", "orders_create")
    forged = await deliver(client, store["id"], "orders/create", data, secret="not-the-shop-key")
    assert forged.status_code == 401
    assert forged.json() == {"error": "the signature does not match the store's webhook secret"}
    unsigned = await deliver(
        client, store["id"], "orders/create", data, **{"X-Shopify-Hmac-Sha256": ""}
    )
    assert unsigned.status_code == 401 and unsigned.json() == {
        "error": "the delivery is not signed"
    }
    # The body changed after signing is not what was signed.
    sent = {**shopify_headers("orders/create", data), "X-Shopify-Webhook-Id": "x1"}
    tampered = await client.post(
        f"/hooks/shopify/{store['id']}", content=data.replace(b"59.95", b"0.01"), headers=sent
    )
    assert tampered.status_code == 401
    assert await count_rows(db, Order) == 0
    assert await count_rows(db, StoreDelivery) == 0
    assert (await log(client, ws, store["id"]))["deliveries"] == []


async def test_a_retry_is_applied_once(client, db, ws):
    store = await shopify_store(client, ws)
    data = raw("shopify", "orders_create")
    first = await deliver(client, store["id"], "orders/create", data, webhook_id="retry-1")
    assert first.json()["outcome"] == "applied"
    # Changed since (by the API): a retry of the old delivery must not undo it.
    await put_order(
        client, ws.headers, store["id"], ORDER_ID, expect=200, total="59.95", status="refunded"
    )
    retry = await deliver(client, store["id"], "orders/create", data, webhook_id="retry-1")
    assert retry.status_code == 200
    assert retry.json() == {
        "received": True,
        "outcome": "duplicate",
        "detail": "delivery retry-1 was received before",
    }
    order = await get_json(client, ws.headers, f"/stores/{store['id']}/orders/{ORDER_ID}")
    assert order["order"]["status"] == "refunded"
    assert await count_rows(db, Order) == 1
    deliveries = await log(client, ws, store["id"])
    assert [(d["delivery_id"], d["outcome"]) for d in deliveries["deliveries"]] == [
        ("retry-1", "applied")
    ]


async def test_a_retry_racing_its_first_attempt_is_applied_once(client, db, ws):
    store = await shopify_store(client, ws)
    data = raw("shopify", "orders_create")
    answers = await asyncio.gather(
        *(deliver(client, store["id"], "orders/create", data, webhook_id="race") for _ in range(3))
    )
    assert sorted(a.json()["outcome"] for a in answers) == ["applied", "duplicate", "duplicate"]
    assert await count_rows(db, Order) == 1
    assert await count_rows(db, StoreDelivery) == 1


async def test_subscribed_consent_creates_a_subscriber_with_its_events(client, db, ws):
    store = await shopify_store(client, ws)
    # A customer who bought before consenting: the new contact is named on the order.
    await put_order(client, ws.headers, store["id"], "earlier", email=CUSTOMER, total="5.00")
    created = await deliver(
        client, store["id"], "customers/create", raw("shopify", "customers_create")
    )
    assert created.status_code == 200
    assert created.json()["outcome"] == "applied"
    [contact] = await get_json_contacts(client, ws, CUSTOMER)
    assert contact["status"] == "subscribed" and contact["source"] == "shopify"
    assert contact["custom_fields"]["consent_source"] == f"shopify:{store['id']}"
    assert created.json()["detail"] == (
        f"customer 706405506930370084 subscribed: contact {contact['id']} created"
    )
    order = await get_json(client, ws.headers, f"/stores/{store['id']}/orders/earlier")
    assert order["order"]["contact_id"] == contact["id"]
    # As any new contact: its event, queued for the workspace's webhook endpoint.
    async with db.session() as session:
        events = (
            await session.scalars(select(Event).where(Event.workspace_id == ws.workspace_id))
        ).all()
        [created_event] = [e for e in events if e.type.startswith("contact.")]
        queued = await session.scalar(
            select(func.count()).where(WebhookDelivery.event_id == created_event.id)
        )
    assert created_event.type == "contact.created"
    assert created_event.data["contact"]["id"] == contact["id"] and queued == 1

    # Said again (an update repeats the state): one contact, nothing more.
    again = await deliver(
        client, store["id"], "customers/update", raw("shopify", "customers_create")
    )
    assert again.json()["outcome"] == "ignored"
    assert await count_rows(db, Contact, workspace_id=ws.workspace_id) == 1


async def get_json_contacts(client, ws, email: str) -> list[dict[str, Any]]:
    found = await client.get("/api/v1/contacts", params={"q": email}, headers=ws.headers)
    assert found.status_code == 200, found.text
    return [c for c in found.json()["contacts"] if c["email"] == email]


async def test_consent_other_than_subscribed_never_creates_or_changes_a_contact(client, db, ws):
    store = await shopify_store(client, ws)
    sid = store["id"]
    for state in ("not_subscribed", "pending", "redacted", "invalid"):
        body = payload("customers_create", email_marketing_consent={"state": state})
        answer = await deliver(client, sid, "customers/update", body)
        assert answer.status_code == 200 and answer.json()["outcome"] == "ignored", state
    withdrawn = await deliver(
        client,
        sid,
        "customers_email_marketing_consent/update",
        raw("shopify", "customers_email_marketing_consent_update"),
    )
    assert withdrawn.json()["outcome"] == "ignored"
    assert "withdrew marketing consent on shopify" in withdrawn.json()["detail"]
    assert await count_rows(db, Contact, workspace_id=ws.workspace_id) == 0

    # A contact that exists keeps its status whatever the platform says.
    made = await client.post("/api/v1/contacts", json={"email": CUSTOMER}, headers=ws.headers)
    contact_id = made.json()["contact"]["id"]
    await deliver(
        client,
        sid,
        "customers_email_marketing_consent/update",
        raw("shopify", "customers_email_marketing_consent_update"),
    )
    contact = (await client.get(f"/api/v1/contacts/{contact_id}", headers=ws.headers)).json()
    assert contact["contact"]["status"] == "subscribed"
    await client.patch(
        f"/api/v1/contacts/{contact_id}", json={"status": "unsubscribed"}, headers=ws.headers
    )
    resubscribe = await deliver(client, sid, "customers/update", raw("shopify", "customers_create"))
    assert resubscribe.json()["outcome"] == "ignored"
    assert "status is unsubscribed: left as it is" in resubscribe.json()["detail"]
    contact = (await client.get(f"/api/v1/contacts/{contact_id}", headers=ws.headers)).json()
    assert contact["contact"]["status"] == "unsubscribed"

    # A suppressed address with no contact is not made a subscriber either.
    await client.delete(f"/api/v1/contacts/{contact_id}", headers=ws.headers)
    suppressed = await deliver(client, sid, "customers/update", raw("shopify", "customers_create"))
    assert suppressed.json()["outcome"] == "ignored"
    assert "address is suppressed (deleted)" in suppressed.json()["detail"]
    assert await get_json_contacts(client, ws, CUSTOMER) == []


async def test_legacy_accepts_marketing_subscribes(client, ws):
    store = await shopify_store(client, ws)
    answer = await deliver(
        client, store["id"], "customers/update", raw("shopify", "customers_update_legacy")
    )
    assert answer.json()["outcome"] == "applied"
    [contact] = await get_json_contacts(client, ws, CUSTOMER)
    assert contact["status"] == "subscribed"


async def test_test_orders_unknown_topics_and_rule_breaking_data_store_nothing(client, db, ws):
    store = await shopify_store(client, ws)
    sid = store["id"]
    sample = await deliver(client, sid, "orders/cancelled", raw("shopify", "orders_cancelled"))
    assert sample.json() == {
        "received": True,
        "outcome": "ignored",
        "detail": "order 820982911946154508 is a test order: not stored",
    }
    deleted = await deliver(client, sid, "orders/delete", b'{"id": 1}')
    assert deleted.json()["outcome"] == "ignored"
    assert deleted.json()["detail"] == "Shopify topic orders/delete is not used by Mailroom"
    euro = await shopify_store(client, ws, "Euro shop", currency="EUR")
    # An order in another currency than the store's: 200 so Shopify does not retry it for
    # hours, recorded as invalid with the reason, nothing of it kept.
    dollars = await deliver(client, euro["id"], "orders/create", raw("shopify", "orders_create"))
    assert dollars.status_code == 200
    assert dollars.json() == {
        "received": True,
        "outcome": "invalid",
        "detail": "currency must be EUR",
    }
    assert await count_rows(db, Order) == 0
    [row] = (await log(client, ws, euro["id"]))["deliveries"]
    assert (row["outcome"], row["detail"]) == ("invalid", "currency must be EUR")
    topics = [d["topic"] for d in (await log(client, ws, sid))["deliveries"]]
    assert topics == ["orders/delete", "orders/cancelled"]


async def test_refusals_before_anything_is_stored(client, db, ws):
    store = await shopify_store(client, ws)
    sid = store["id"]
    not_json = await deliver(client, sid, "orders/create", b"<order/>")
    assert not_json.status_code == 400 and not_json.json() == {"error": "body is not valid JSON"}
    data = raw("shopify", "orders_create")
    no_topic = await deliver(client, sid, "orders/create", data, **{"X-Shopify-Topic": ""})
    assert no_topic.status_code == 400
    assert no_topic.json() == {"error": "the X-Shopify-Topic header is required"}
    no_id = await deliver(client, sid, "orders/create", payload("orders_create", id=None))
    assert no_id.status_code == 400 and no_id.json() == {"error": "id is required"}
    huge = b'{"id": 1, "note": "' + b"x" * (1024 * 1024) + b'"}'
    too_big = await deliver(client, sid, "orders/create", huge)
    assert too_big.status_code == 413
    assert too_big.json() == {"error": "Request body too large: deliveries are limited to 1 MB"}
    assert await count_rows(db, Order) == 0 and await count_rows(db, StoreDelivery) == 0


async def test_unknown_and_other_platform_stores_are_404(client, factory, ws):
    data = raw("shopify", "orders_create")
    for store_id in (str(uuid.uuid4()), "not-an-id", "x" * 40):
        answer = await deliver(client, store_id, "orders/create", data)
        assert answer.status_code == 404 and answer.json() == {"error": "Store not found"}
    woo = await make_store(client, ws.headers, "Woo", currency="USD", platform="woocommerce")
    custom = await make_store(client, ws.headers, "Own", currency="USD")
    for other in (woo, custom):
        signed = await deliver(
            client, other["id"], "orders/create", data, secret=other["webhook_secret"]
        )
        assert signed.status_code == 404 and signed.json() == {"error": "Store not found"}
    # A store of another workspace receives its own deliveries; this one's key cannot read them.
    other_ws = await factory.workspace("pro")
    theirs = await shopify_store(client, other_ws, "Theirs")
    assert (await deliver(client, theirs["id"], "orders/create", data)).status_code == 200
    peek = await client.get(f"{API}/stores/{theirs['id']}/deliveries", headers=ws.headers)
    assert peek.status_code == 404 and peek.json() == {"error": "Store not found"}
    assert (
        await client.get(f"{API}/stores/{theirs['id']}/orders", headers=ws.headers)
    ).status_code == 404


async def test_a_replaced_secret_refuses_the_old_one(client, db, ws):
    store = await shopify_store(client, ws)
    sid = store["id"]
    data = raw("shopify", "orders_create")
    assert (await deliver(client, sid, "orders/create", data)).status_code == 200
    new_key = "c7a3f0e1d2b4a5968778695a4b3c2d1e0f9e8d7c6b5a49382716051f2e3d4c5b"
    patched = await client.patch(
        f"{API}/stores/{sid}", json={"webhook_secret": new_key}, headers=ws.headers
    )
    assert patched.status_code == 200 and "webhook_secret" not in patched.json()["store"]
    read = await get_json(client, ws.headers, f"/stores/{sid}")
    assert "webhook_secret" not in read["store"]
    assert new_key not in json.dumps(read) and SECRET not in patched.text
    old = await deliver(client, sid, "orders/updated", data)
    assert old.status_code == 401
    assert old.json() == {"error": "the signature does not match the store's webhook secret"}
    fresh = await deliver(client, sid, "orders/updated", data, secret=new_key)
    assert fresh.status_code == 200 and fresh.json()["outcome"] == "applied"
    assert (await log(client, ws, sid))["pagination"]["total"] == 2


async def test_a_secret_must_be_one_a_platform_can_sign_with(client, ws):
    store = await shopify_store(client, ws)
    message = "webhook_secret must be 16 to 100 printable ASCII characters without spaces"
    for bad in (
        "short",
        "x" * 101,
        "has a space in it ok",
        "tab\there-and-more-chars",
        12345678901234567,
    ):
        answer = await client.patch(
            f"{API}/stores/{store['id']}", json={"webhook_secret": bad}, headers=ws.headers
        )
        assert answer.status_code == 400 and answer.json() == {"error": message}, bad
    # The key that signs is still the one set before.
    data = raw("shopify", "orders_create")
    assert (await deliver(client, store["id"], "orders/create", data)).status_code == 200
