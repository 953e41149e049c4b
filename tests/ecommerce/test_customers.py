"""Customers are addresses with orders: an order never makes a contact or a subscriber; it
names the contact with its address, whether the contact came first or later (created, imported
or renamed to it); deleting the contact unlinks it, erasing it removes the address from its
orders and carts and keeps the amounts."""

from __future__ import annotations

from sqlalchemy import func, select

from mailroom.models import Contact
from tests.ecommerce.store_helpers import API, get_json, make_store, put_cart, put_order


async def _contact(client, ws, email):
    response = await client.post("/api/v1/contacts", json={"email": email}, headers=ws.headers)
    assert response.status_code == 201, response.text
    return response.json()["contact"]


async def _order(client, ws, store_id, external_id):
    path = f"/stores/{store_id}/orders/{external_id}"
    return (await get_json(client, ws.headers, path))["order"]


async def _cart(client, ws, store_id, external_id):
    return (await get_json(client, ws.headers, f"/stores/{store_id}/carts/{external_id}"))["cart"]


async def _contacts(db, workspace_id) -> int:
    async with db.session() as session:
        return int(
            await session.scalar(
                select(func.count())
                .select_from(Contact)
                .where(Contact.workspace_id == workspace_id)
            )
        )


async def test_an_order_never_makes_a_contact(client, ws, db):
    store = await make_store(client, ws.headers)
    await put_order(client, ws.headers, store["id"], "1", total="10.00", email="new@example.com")
    await put_cart(client, ws.headers, store["id"], "c", total="10.00", email="cart@example.com")
    assert await _contacts(db, ws.workspace_id) == 0
    listed = await client.get("/api/v1/contacts", params={"q": "example"}, headers=ws.headers)
    assert listed.json()["contacts"] == []


async def test_an_existing_contact_is_named_at_once(client, ws, factory):
    other = await factory.workspace("pro")
    await _contact(client, other, "jane@example.com")  # another workspace's: not hers
    jane = await _contact(client, ws, "jane@example.com")
    store = await make_store(client, ws.headers)
    order = await put_order(
        client, ws.headers, store["id"], "1", total="10.00", email="JANE@example.com"
    )
    cart = await put_cart(
        client, ws.headers, store["id"], "c", total="1.00", email="jane@example.com"
    )
    assert order["contact_id"] == jane["id"] and cart["contact_id"] == jane["id"]
    moved = await put_order(
        client, ws.headers, store["id"], "1", expect=200, total="10.00", email="bob@example.com"
    )
    assert moved["contact_id"] is None


async def test_a_contact_created_later_is_linked_to_its_orders_and_carts(client, ws, factory):
    store = await make_store(client, ws.headers)
    other = await factory.workspace("pro")
    theirs = await make_store(client, other.headers)
    await put_order(client, ws.headers, store["id"], "1", total="10.00", email="ann@example.com")
    await put_order(client, ws.headers, store["id"], "2", total="20.00", email="bob@example.com")
    await put_cart(client, ws.headers, store["id"], "c", total="5.00", email="ann@example.com")
    await put_order(client, other.headers, theirs["id"], "1", total="1.00", email="ann@example.com")

    ann = await _contact(client, ws, "Ann@Example.com")
    assert (await _order(client, ws, store["id"], "1"))["contact_id"] == ann["id"]
    assert (await _cart(client, ws, store["id"], "c"))["contact_id"] == ann["id"]
    assert (await _order(client, ws, store["id"], "2"))["contact_id"] is None
    assert (await _order(client, other, theirs["id"], "1"))["contact_id"] is None
    by_contact = await get_json(
        client, ws.headers, f"/stores/{store['id']}/orders", contact_id=ann["id"]
    )
    assert [o["external_id"] for o in by_contact["orders"]] == ["1"]

    # A contact renamed to an address with orders is linked to them too.
    bob = await _contact(client, ws, "robert@example.com")
    renamed = await client.patch(
        f"/api/v1/contacts/{bob['id']}", json={"email": "bob@example.com"}, headers=ws.headers
    )
    assert renamed.status_code == 200, renamed.text
    assert (await _order(client, ws, store["id"], "2"))["contact_id"] == bob["id"]


async def test_imported_contacts_are_linked(client, ws):
    store = await make_store(client, ws.headers)
    for i, email in enumerate(["ann@acme.io", "bob@acme.io", "cat@acme.io"]):
        await put_order(client, ws.headers, store["id"], f"o{i}", total=i, email=email)
    response = await client.post(
        "/api/v1/contacts/import",
        files={"file": ("c.csv", b"email\nann@acme.io\nBOB@acme.io\n", "text/csv")},
        headers=ws.headers,
    )
    assert response.status_code == 200, response.text
    assert response.json()["imported"] == 2
    listed = await client.get("/api/v1/contacts", headers=ws.headers)
    ids = {c["email"]: c["id"] for c in listed.json()["contacts"]}
    assert (await _order(client, ws, store["id"], "o0"))["contact_id"] == ids["ann@acme.io"]
    assert (await _order(client, ws, store["id"], "o1"))["contact_id"] == ids["bob@acme.io"]
    assert (await _order(client, ws, store["id"], "o2"))["contact_id"] is None


async def test_erasing_a_contact_removes_the_address_and_keeps_the_amounts(client, ws):
    store = await make_store(client, ws.headers)
    jane = await _contact(client, ws, "jane@example.com")
    await put_order(client, ws.headers, store["id"], "1", total="10.00", email="jane@example.com")
    await put_order(client, ws.headers, store["id"], "2", total="5.50", email="other@example.com")
    await put_cart(client, ws.headers, store["id"], "c", total="3.00", email="jane@example.com")

    erased = await client.delete(
        f"/api/v1/contacts/{jane['id']}", params={"mode": "erase"}, headers=ws.headers
    )
    assert erased.status_code == 200, erased.text
    order = await _order(client, ws, store["id"], "1")
    assert (order["email"], order["contact_id"], order["total"]) == (None, None, "10.00")
    cart = await _cart(client, ws, store["id"], "c")
    assert (cart["email"], cart["contact_id"], cart["total"]) == (None, None, "3.00")
    assert (await _order(client, ws, store["id"], "2"))["email"] == "other@example.com"
    listed = await get_json(client, ws.headers, f"/stores/{store['id']}/orders")
    assert "jane@example.com" not in str(listed)
    found = await get_json(
        client, ws.headers, f"/stores/{store['id']}/orders", email="jane@example.com"
    )
    assert found["orders"] == []


async def test_bulk_erase_too(client, ws):
    store = await make_store(client, ws.headers)
    a = await _contact(client, ws, "a@example.com")
    b = await _contact(client, ws, "b@example.com")
    await put_order(client, ws.headers, store["id"], "1", total="1.00", email="a@example.com")
    await put_order(client, ws.headers, store["id"], "2", total="2.00", email="b@example.com")
    response = await client.post(
        "/api/v1/contacts/bulk",
        json={"action": "erase", "contact_ids": [a["id"], b["id"]]},
        headers=ws.headers,
    )
    assert response.status_code == 200, response.text
    for external_id, total in (("1", "1.00"), ("2", "2.00")):
        order = await _order(client, ws, store["id"], external_id)
        assert (order["email"], order["contact_id"], order["total"]) == (None, None, total)


async def test_deleting_a_contact_unlinks_and_keeps_the_customer(client, ws):
    store = await make_store(client, ws.headers)
    jane = await _contact(client, ws, "jane@example.com")
    await put_order(client, ws.headers, store["id"], "1", total="10.00", email="jane@example.com")
    deleted = await client.delete(f"/api/v1/contacts/{jane['id']}", headers=ws.headers)
    assert deleted.status_code == 200
    order = await _order(client, ws, store["id"], "1")
    assert (order["email"], order["contact_id"], order["total"]) == (
        "jane@example.com",
        None,
        "10.00",
    )
    listed = await client.get(
        f"{API}/stores/{store['id']}/orders", params={"contact_id": jane["id"]}, headers=ws.headers
    )
    assert listed.json()["orders"] == []
