"""The e-commerce triggers end to end, as a shop and a client see them: a new order of a store
(`order_placed`, optionally the contact's first there) or a cart the worker abandons
(`cart_abandoned`) enrols its contact once; the email shows the order or cart as stored when
it is queued (`order` / `cart`, also under `vars`, lines with their product's title and links); a
cart converted or deleted before the email ends the run `exited`; the trigger names a store
of the workspace."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import func, select

from mailroom.core.clock import utcnow
from mailroom.ecommerce import abandon
from mailroom.models import AutomationRun, SendLog
from mailroom.worker import WorkerContext
from tests.automations.helpers import (
    activate,
    create_contact,
    get_automation,
    make_automation,
    run_due,
    runs_of,
    skip_waits,
)
from tests.ecommerce.store_helpers import API, age_cart, make_store, put, put_cart, put_order
from tests.sending.conftest import verified_domain
from tests.sending.helpers import ok
from tests.tracking.helpers import CHROME, hrefs, html_of, path_of, text_of


def _lines(kind: str) -> str:
    return (
        f"{{% for l in {kind}.lines %}}[{{{{ l.title }}}}|{{{{ l.url }}}}|"
        "{{ l.image_url }}|{{ l.quantity }}x{{ l.price }}]{% endfor %}"
    )


ORDER_TEXT = (
    "Order {{ order.external_id }}: "
    + _lines("order")
    + " first={{ order.lines[0].title }} total={{ order.total }} "
    "{{ vars.order.currency }}"
)
CART_TEXT = (
    "Come back: " + _lines("cart") + " total={{ cart.total }} checkout={{ vars.cart.checkout_url }}"
)
SHIRT = {
    "title": "Linen shirt",
    "url": "https://shop.example.com/p/shirt",
    "image_url": "https://cdn.example.com/shirt.jpg",
    "price": "49.90",
}


async def _mail_ready(client, db, ws) -> None:
    await verified_domain(client, db, ws)
    await ok(
        await client.patch(
            "/api/v1/sending",
            json={"from_email": "news@shop.example", "from_name": "Shop"},
            headers=ws.headers,
        )
    )


async def _template(client, ws, text: str) -> str:
    created = await client.post(
        "/api/v1/templates",
        json={"name": "Shop mail", "subject": "From the shop", "text_content": text},
        headers=ws.headers,
    )
    return str((await ok(created, 201))["template"]["id"])


async def _product(client, ws, store_id: str, external_id: str, **fields: Any) -> None:
    answer = await put(client, ws.headers, store_id, "products", external_id, fields)
    assert answer.status_code in (200, 201), answer.text


async def _live(client, ws, trigger: dict[str, Any], steps: list[dict[str, Any]], **more) -> str:
    automation = await make_automation(client, ws, trigger=trigger, steps=steps, **more)
    await activate(client, ws, automation["id"])
    return str(automation["id"])


async def _sent(db) -> int:
    async with db.session() as session:
        return int(await session.scalar(select(func.count()).select_from(SendLog)) or 0)


async def _abandon_due(db, settings) -> int:
    """One pass of the worker's abandon-carts loop."""
    return await abandon.tick(WorkerContext(db, settings, "test-worker"))


async def test_a_new_order_mails_it_with_its_products_as_they_are_at_send_time(
    client, db, ws, settings, sink, driver
):
    await _mail_ready(client, db, ws)
    store = await make_store(client, ws.headers)
    await _product(client, ws, store["id"], "sku-1", **SHIRT)
    jane = await create_contact(client, ws, "jane@mail.example")
    template = await _template(client, ws, ORDER_TEXT)
    automation = await _live(
        client,
        ws,
        {"type": "order_placed", "store_id": store["id"]},
        [{"id": "mail", "type": "send_email", "template_id": template}],
    )
    order = {
        "email": "Jane@Mail.example",
        "total": "104.70",
        "lines": [
            {"product_id": "sku-1", "quantity": 2, "price": "49.9"},
            {"product_id": "gone-9", "quantity": 1, "price": 4.9},
        ],
    }
    await put_order(client, ws.headers, store["id"], "1001", **order)
    # The same order again, then a change of it: neither is a new order.
    await put_order(client, ws.headers, store["id"], "1001", expect=200, **order)
    await put_order(client, ws.headers, store["id"], "1001", expect=200, status="paid", **order)
    [run] = await runs_of(client, ws, automation)
    assert (run["contact_id"], run["status"], run["step_id"]) == (jane, "active", "mail")
    async with db.session() as session:
        stored = await session.scalar(select(AutomationRun.context))
    assert stored is not None and set(stored) == {"store_id", "order_id"}

    # Read when the email is queued: the product's new title shows.
    await _product(client, ws, store["id"], "sku-1", **{**SHIRT, "title": "Linen shirt, blue"})
    await run_due(db, settings)
    await driver.drain()
    [mail] = sink.received
    assert mail.recipients == ["jane@mail.example"]
    assert text_of(mail.data).strip() == (
        "Order 1001: "
        "[Linen shirt, blue|https://shop.example.com/p/shirt|https://cdn.example.com/shirt.jpg|"
        "2x49.90][|||1x4.90] first=Linen shirt, blue total=104.70 EUR"
    )
    [run] = await runs_of(client, ws, automation)
    assert run["status"] == "completed"
    assert len(await runs_of(client, ws, automation)) == 1


async def test_only_a_subscribed_contacts_order_in_that_store_enrols(client, db, ws, settings):
    store = await make_store(client, ws.headers)
    elsewhere = await make_store(client, ws.headers, "Outlet")
    automation = await _live(
        client,
        ws,
        {"type": "order_placed", "store_id": store["id"]},
        [{"type": "wait", "seconds": 60}],
    )
    await create_contact(client, ws, "jane@mail.example")
    gone = await create_contact(client, ws, "gone@mail.example")
    answer = await client.patch(
        f"/api/v1/contacts/{gone}", json={"status": "unsubscribed"}, headers=ws.headers
    )
    await ok(answer)
    await put_order(client, ws.headers, store["id"], "a", email="stranger@mail.example", total=5)
    await put_order(client, ws.headers, store["id"], "b", total=5)  # no address at all
    await put_order(client, ws.headers, store["id"], "c", email="gone@mail.example", total=5)
    await put_order(client, ws.headers, elsewhere["id"], "d", email="jane@mail.example", total=5)
    assert await runs_of(client, ws, automation) == []
    # The stranger becomes a contact: their earlier order enrols nobody after the fact.
    await create_contact(client, ws, "stranger@mail.example")
    assert await runs_of(client, ws, automation) == []
    await put_order(client, ws.headers, store["id"], "e", email="jane@mail.example", total=5)
    assert len(await runs_of(client, ws, automation)) == 1


async def test_first_order_only_counts_the_contacts_earlier_orders_in_that_store(
    client, db, ws, settings
):
    store = await make_store(client, ws.headers)
    outlet = await make_store(client, ws.headers, "Outlet")
    ann = await create_contact(client, ws, "ann@mail.example")
    bob = await create_contact(client, ws, "bob@mail.example")
    # Before the automations exist: Ann ordered in the store, Bob only in the outlet.
    early = "2026-01-10T10:00:00Z"
    await put_order(
        client, ws.headers, store["id"], "old", email="ann@mail.example", total=5, placed_at=early
    )
    await put_order(
        client, ws.headers, outlet["id"], "o1", email="bob@mail.example", total=5, placed_at=early
    )
    wait = [{"type": "wait", "seconds": 60}]
    first = await _live(
        client,
        ws,
        {"type": "order_placed", "store_id": store["id"], "first_order_only": True},
        wait,
        name="First",
    )
    every = await _live(
        client, ws, {"type": "order_placed", "store_id": store["id"]}, wait, name="Every"
    )
    stored = await get_automation(client, ws, first)
    assert stored["trigger"] == {
        "type": "order_placed",
        "store_id": store["id"],
        "first_order_only": True,
    }
    assert (await get_automation(client, ws, every))["trigger"]["first_order_only"] is False
    await put_order(client, ws.headers, store["id"], "n1", email="ann@mail.example", total=9)
    await put_order(client, ws.headers, store["id"], "n2", email="bob@mail.example", total=9)
    assert [r["contact_id"] for r in await runs_of(client, ws, first)] == [bob]
    assert sorted(r["contact_id"] for r in await runs_of(client, ws, every)) == sorted([ann, bob])
    # An order placed earlier than everything stored, arriving late, was the first.
    cy = await create_contact(client, ws, "cy@mail.example")
    late = {"email": "cy@mail.example", "total": 3}
    days_ago = lambda n: (utcnow() - timedelta(days=n)).isoformat()  # noqa: E731
    await put_order(client, ws.headers, store["id"], "c2", **late, placed_at=days_ago(1))
    await put_order(client, ws.headers, store["id"], "c1", **late, placed_at=days_ago(2))
    # c2 was Cy's first when it came; c1 is the first too, and Cy is in the automation already.
    assert sorted(r["contact_id"] for r in await runs_of(client, ws, first)) == sorted([bob, cy])


async def test_an_abandoned_cart_mails_its_checkout_link_once(
    client, db, ws, settings, sink, driver
):
    await _mail_ready(client, db, ws)
    store = await make_store(client, ws.headers)
    other = await make_store(client, ws.headers, "Outlet")
    await _product(client, ws, store["id"], "sku-1", **SHIRT)
    jane = await create_contact(client, ws, "jane@mail.example")
    template = await _template(client, ws, CART_TEXT)
    automation = await _live(
        client,
        ws,
        {"type": "cart_abandoned", "store_id": store["id"]},
        [{"type": "send_email", "template_id": template}],
    )
    cart = {
        "email": "jane@mail.example",
        "total": "49.90",
        "lines": [{"product_id": "sku-1", "quantity": 1, "price": "49.90"}],
        "checkout_url": "https://shop.example.com/checkout/abc",
    }
    await put_cart(client, ws.headers, store["id"], "c1", **cart)
    await put_cart(client, ws.headers, other["id"], "c9", **cart)  # another store's cart
    await put_cart(client, ws.headers, store["id"], "c2", **{**cart, "email": "x@mail.example"})
    assert await _abandon_due(db, settings) == 0  # not idle long enough yet
    assert await runs_of(client, ws, automation) == []
    for store_id, cart_id in ((store["id"], "c1"), (other["id"], "c9"), (store["id"], "c2")):
        await age_cart(db, store_id, cart_id, 120)
    assert await _abandon_due(db, settings) == 3
    [run] = await runs_of(client, ws, automation)
    assert run["contact_id"] == jane
    # Abandoned once: the loop again, and a change to the abandoned cart, start nothing.
    await put_cart(client, ws.headers, store["id"], "c1", expect=200, **{**cart, "total": "50"})
    await age_cart(db, store["id"], "c1", 120)
    assert await _abandon_due(db, settings) == 0
    await run_due(db, settings)
    await driver.drain()
    [mail] = sink.received
    assert text_of(mail.data).strip() == (
        "Come back: "
        "[Linen shirt|https://shop.example.com/p/shirt|https://cdn.example.com/shirt.jpg|1x49.90]"
        " total=50.00 checkout=https://shop.example.com/checkout/abc"
    )
    assert [r["status"] for r in await runs_of(client, ws, automation)] == ["completed"]
    stats = (await get_automation(client, ws, automation))["stats"]
    assert (stats["enrolled"], stats["completed"]) == (1, 1)
    revenue = {k: stats["revenue"][k] for k in ("orders", "total", "currency")}
    assert revenue == {"orders": 0, "total": "0.00", "currency": "EUR"}


async def test_a_cart_converted_or_deleted_before_the_email_ends_the_run(
    client, db, ws, settings, sink, driver
):
    await _mail_ready(client, db, ws)
    store = await make_store(client, ws.headers)
    template = await _template(client, ws, CART_TEXT)
    automation = await _live(
        client,
        ws,
        {"type": "cart_abandoned", "store_id": store["id"]},
        [
            {"id": "later", "type": "wait", "seconds": 3600},
            {"id": "mail", "type": "send_email", "template_id": template},
        ],
    )
    ann = await create_contact(client, ws, "ann@mail.example")
    bob = await create_contact(client, ws, "bob@mail.example")
    for cart_id, email in (("ca", "ann@mail.example"), ("cb", "bob@mail.example")):
        await put_cart(client, ws.headers, store["id"], cart_id, email=email, total=10)
        await age_cart(db, store["id"], cart_id, 120)
    assert await _abandon_due(db, settings) == 2
    await run_due(db, settings)
    assert {r["status"] for r in await runs_of(client, ws, automation)} == {"waiting"}
    # Ann buys what was in her cart; Bob's cart is deleted by the shop.
    bought = {"email": "ann@mail.example", "total": 10, "cart_id": "ca"}
    await put_order(client, ws.headers, store["id"], "o1", **bought)
    deleted = await client.delete(f"{API}/stores/{store['id']}/carts/cb", headers=ws.headers)
    assert deleted.status_code == 200, deleted.text
    await skip_waits(db)
    await run_due(db, settings)
    runs = {r["contact_id"]: r for r in await runs_of(client, ws, automation)}
    assert runs[ann]["status"] == "exited" and runs[bob]["status"] == "exited"
    assert runs[ann]["history"][-1]["step_id"] == "mail"
    assert runs[ann]["history"][-1]["outcome"] == "cart converted before the email"
    assert runs[bob]["history"][-1]["outcome"] == "cart deleted before the email"
    assert await _sent(db) == 0
    await driver.drain()
    assert sink.received == []
    stats = (await get_automation(client, ws, automation))["stats"]
    assert (stats["enrolled"], stats["exited"]) == (2, 2)


async def test_the_trigger_names_a_store_of_the_workspace(client, ws, factory):
    other = await factory.workspace()
    theirs = await make_store(client, other.headers, "Their shop")
    mine = await make_store(client, ws.headers)
    wait = [{"type": "wait", "seconds": 60}]
    for trigger, message in (
        ({"type": "order_placed"}, "trigger.store_id is required"),
        ({"type": "cart_abandoned", "store_id": ""}, "trigger.store_id is required"),
        ({"type": "cart_abandoned", "store_id": 7}, "trigger.store_id must be a string"),
        (
            {"type": "order_placed", "store_id": theirs["id"]},
            "trigger.store_id: Store not found",
        ),
        ({"type": "cart_abandoned", "store_id": "nope"}, "trigger.store_id: Store not found"),
        (
            {"type": "order_placed", "store_id": mine["id"], "first_order_only": "yes"},
            "trigger.first_order_only must be true or false",
        ),
    ):
        answer = await client.post(
            "/api/v1/automations",
            json={"name": "Shop", "trigger": trigger, "steps": wait},
            headers=ws.headers,
        )
        assert (answer.status_code, answer.json()) == (400, {"error": message}), trigger
    assert (await client.get("/api/v1/automations", headers=ws.headers)).json()["automations"] == []
    made = await make_automation(
        client, ws, trigger={"type": "cart_abandoned", "store_id": mine["id"]}, steps=wait
    )
    assert made["trigger"] == {"type": "cart_abandoned", "store_id": mine["id"]}
    moved = await client.patch(
        f"/api/v1/automations/{made['id']}",
        json={"trigger": {"type": "order_placed", "store_id": theirs["id"]}},
        headers=ws.headers,
    )
    assert moved.json() == {"error": "trigger.store_id: Store not found"}
    assert (await get_automation(client, ws, made["id"]))["trigger"]["type"] == "cart_abandoned"


async def test_the_published_trigger_lists_the_store_triggers(client):
    document = (await client.get("/openapi.json")).json()
    body = document["paths"]["/api/v1/automations"]["post"]["requestBody"]["content"]
    name = body["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    trigger = document["components"]["schemas"][name]["properties"]["trigger"]
    options = {o["properties"]["type"]["const"]: o for o in trigger["oneOf"]}
    assert options["order_placed"]["required"] == ["type", "store_id"]
    assert options["order_placed"]["properties"]["first_order_only"]["type"] == "boolean"
    assert options["cart_abandoned"]["required"] == ["type", "store_id"]
    assert set(options["cart_abandoned"]["properties"]) == {"type", "store_id"}
    stats = document["components"]["schemas"]["AutomationStats"]
    assert "revenue" in stats["required"]


async def test_an_order_after_a_click_in_its_email_counts_in_its_revenue(
    app, client, db, ws, settings, sink, driver
):
    await _mail_ready(client, db, ws)
    store = await make_store(client, ws.headers)
    await create_contact(client, ws, "jane@mail.example")
    created = await client.post(
        "/api/v1/templates",
        json={
            "name": "Reminder",
            "subject": "Your cart",
            "html_content": '<p><a href="{{ cart.checkout_url }}">Finish your order</a></p>',
        },
        headers=ws.headers,
    )
    template = (await ok(created, 201))["template"]["id"]
    automation = await _live(
        client,
        ws,
        {"type": "cart_abandoned", "store_id": store["id"]},
        [{"type": "send_email", "template_id": template}],
    )
    checkout = "https://shop.example.com/checkout/abc"
    cart = {"email": "jane@mail.example", "total": 25, "checkout_url": checkout}
    await put_cart(client, ws.headers, store["id"], "c1", **cart)
    await age_cart(db, store["id"], "c1", 120)
    await _abandon_due(db, settings)
    await run_due(db, settings)
    await driver.drain()
    # Jane follows the checkout link of the reminder: its tracked form.
    [mail] = sink.received
    [link] = hrefs(html_of(mail.data))
    assert "/l/" in link and checkout not in link
    followed = await client.get(path_of(link), headers={"user-agent": CHROME})
    assert (followed.status_code, followed.headers["location"]) == (302, checkout)
    await app.state.hits.flush()
    bought = {"email": "jane@mail.example", "total": "25.00", "cart_id": "c1"}
    order = await put_order(client, ws.headers, store["id"], "o1", **bought)
    assert order["attributed_to"] == {"type": "automation", "id": automation}
    stats = (await get_automation(client, ws, automation))["stats"]
    revenue = {k: stats["revenue"][k] for k in ("orders", "total", "currency")}
    assert revenue == {"orders": 1, "total": "25.00", "currency": "EUR"}
    listed = (await client.get("/api/v1/automations", headers=ws.headers)).json()
    assert listed["automations"][0]["stats"]["revenue"]["orders"] == 1


async def test_history_and_orders_that_are_no_purchase_enrol_nobody(client, db, ws, settings):
    """A shop sending its past orders (placed more than a week before they arrive) or an
    order arriving cancelled or refunded thanks no one; the next real order does."""
    store = await make_store(client, ws.headers)
    automation = await _live(
        client,
        ws,
        {"type": "order_placed", "store_id": store["id"]},
        [{"type": "wait", "seconds": 60}],
    )
    jane = await create_contact(client, ws, "jane@mail.example")
    old = (utcnow() - timedelta(days=8)).isoformat()
    mine = {"email": "jane@mail.example", "total": 5}
    await put_order(client, ws.headers, store["id"], "h1", **mine, placed_at=old)
    await put_order(client, ws.headers, store["id"], "h2", **mine, status="cancelled")
    await put_order(client, ws.headers, store["id"], "h3", **mine, status="refunded")
    assert await runs_of(client, ws, automation) == []
    await put_order(client, ws.headers, store["id"], "n1", **mine)
    assert [r["contact_id"] for r in await runs_of(client, ws, automation)] == [jane]
