"""`/app/stores`: add a store (its webhook secret shown once), its page with the delivery URL
for its platform and the topics to choose, replacing the secret (the old one refused from then
on, a refused one changing nothing), the last 20 deliveries with their outcomes, the CSRF
check, and another workspace's store as 404."""

from __future__ import annotations

import re
import uuid
from contextlib import aclosing
from html import unescape

from mailroom.models import Store
from tests.dashboard.helpers import csrf_of, signed_in
from tests.ecommerce.platform_fixtures import SECRET, raw, shopify_headers, woocommerce_headers
from tests.ecommerce.store_helpers import API, count_rows, make_store

SHOWN_SECRET = re.compile(r'id="store-secret-shown"[^>]*>([^<]+)</textarea>')


async def shopify_delivery(client, store_id: str, secret: str, topic: str = "products/create"):
    data = raw("shopify", "products_create")
    headers = {**shopify_headers(topic, data, secret), "X-Shopify-Webhook-Id": str(uuid.uuid4())}
    return await client.post(f"/hooks/shopify/{store_id}", content=data, headers=headers)


async def test_add_a_store_and_see_its_secret_once(app, client, db, settings, ws):
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        listing = await member.get("/app/stores")
        assert listing.status_code == 200 and "No stores yet." in listing.text
        assert 'href="/app/stores" aria-current="page"' in listing.text
        token = csrf_of(listing.text)
        added = await member.post(
            "/app/stores",
            data={
                "csrf": token,
                "name": "Corner shop",
                "currency": "usd",
                "platform": "woocommerce",
            },
        )
        assert added.status_code == 201, added.text
        secret = SHOWN_SECRET.search(added.text).group(1)
        [store] = (await client.get(f"{API}/stores", headers=ws.headers)).json()["stores"]
        assert (store["name"], store["currency"], store["platform"]) == (
            "Corner shop",
            "USD",
            "woocommerce",
        )
        url = f"http://testserver/hooks/woocommerce/{store['id']}"
        assert f'value="{url}"' in added.text and "order.created" in added.text

        # The secret shown is the one WooCommerce signs with: a delivery signed with it lands.
        data = raw("woocommerce", "product_updated")
        delivered = await client.post(
            f"/hooks/woocommerce/{store['id']}",
            content=data,
            headers=woocommerce_headers("product.updated", data, secret),
        )
        assert delivered.status_code == 200 and delivered.json()["outcome"] == "applied"

        page = await member.get(f"/app/stores/{store['id']}")
        assert page.status_code == 200 and "Corner shop" in page.text
        assert secret not in page.text and 'id="store-secret-shown"' not in page.text
        assert f'value="{url}"' in page.text
        assert "product.updated" in page.text and "product 794 created" in page.text
        listed = await member.get("/app/stores")
        assert f'href="/app/stores/{store["id"]}"' in listed.text and secret not in listed.text
        # The addition is audited as the person's.
        audit = (await client.get("/api/v1/account/audit-log", headers=ws.headers)).json()
        assert any(
            e["operation"] == "create_store" and e["target_id"] == store["id"]
            for e in audit["entries"]
        ), audit


async def test_a_refused_store_changes_nothing(app, client, db, settings, ws):
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        token = csrf_of((await admin.get("/app/stores")).text)
        bad = await admin.post(
            "/app/stores",
            data={"csrf": token, "name": "Kept name", "currency": "euro", "platform": "shopify"},
        )
        assert bad.status_code == 400
        assert "currency must be an ISO 4217 code of three capital letters" in bad.text
        assert 'value="Kept name"' in bad.text
        forged = await admin.post("/app/stores", data={"name": "Sneaky", "currency": "EUR"})
        assert forged.status_code == 403
        assert await count_rows(db, Store) == 0


async def test_replace_the_secret_and_the_old_one_is_refused(app, client, db, settings, ws):
    store = await make_store(client, ws.headers, "Shopify shop", currency="USD", platform="shopify")
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        page = await admin.get(f"/app/stores/{store['id']}")
        assert page.status_code == 200
        assert f'value="http://testserver/hooks/shopify/{store["id"]}"' in page.text
        assert "Your webhooks will be signed with" in unescape(page.text)
        assert "orders/create" in page.text and "Nothing received yet." in page.text
        token = csrf_of(page.text)
        # Shopify's key as copied from its admin, with the line break a paste brings.
        replaced = await admin.post(
            f"/app/stores/{store['id']}/secret",
            data={"csrf": token, "webhook_secret": SECRET + "\n"},
        )
        assert replaced.status_code == 303, replaced.text
        after = await admin.get(replaced.headers["location"])
        assert "Webhook secret replaced" in after.text and SECRET not in after.text

        old = await shopify_delivery(client, store["id"], store["webhook_secret"])
        assert old.status_code == 401
        new = await shopify_delivery(client, store["id"], SECRET)
        assert new.status_code == 200 and new.json()["outcome"] == "applied"

        refused = await admin.post(
            f"/app/stores/{store['id']}/secret", data={"csrf": token, "webhook_secret": "too short"}
        )
        assert refused.status_code == 400
        assert "webhook_secret must be 16 to 100 printable ASCII characters" in refused.text
        # Nothing changed: the key set before still signs.
        again = await shopify_delivery(client, store["id"], SECRET, "products/update")
        assert again.status_code == 200
        forged = await admin.post(
            f"/app/stores/{store['id']}/secret", data={"webhook_secret": "a" * 40}
        )
        assert forged.status_code == 403
        assert (await shopify_delivery(client, store["id"], SECRET)).status_code == 200


async def test_the_page_lists_the_last_20_deliveries(app, client, db, settings, ws):
    store = await make_store(client, ws.headers, "Busy shop", currency="USD", platform="shopify")
    await client.patch(
        f"{API}/stores/{store['id']}", json={"webhook_secret": SECRET}, headers=ws.headers
    )
    for _ in range(21):
        assert (await shopify_delivery(client, store["id"], SECRET)).status_code == 200
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        page = await admin.get(f"/app/stores/{store['id']}")
        assert "The last 20 of 21, newest first." in page.text
        # The oldest (the one that created the product) is the one left out.
        assert page.text.count("product 788032119674292922 unchanged") == 20
        assert "product 788032119674292922 created" not in page.text


async def test_another_workspaces_store_is_not_found(app, client, db, factory, settings, ws):
    other = await factory.workspace("pro")
    theirs = await make_store(
        client, other.headers, "Their shop", currency="USD", platform="shopify"
    )
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        page = await admin.get(f"/app/stores/{theirs['id']}")
        assert page.status_code == 404 and "Store not found" in page.text
        assert "Their shop" not in page.text
        token = csrf_of((await admin.get("/app/stores")).text)
        replaced = await admin.post(
            f"/app/stores/{theirs['id']}/secret", data={"csrf": token, "webhook_secret": "b" * 40}
        )
        assert replaced.status_code == 404
        assert "Their shop" not in (await admin.get("/app/stores")).text
    # Their secret still signs.
    assert (
        await shopify_delivery(client, theirs["id"], theirs["webhook_secret"])
    ).status_code == 200
