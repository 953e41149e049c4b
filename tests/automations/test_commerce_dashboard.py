"""The automation editor offers the e-commerce triggers: a store to pick (the workspace's own),
for orders whether only a first order counts, saved through the API's checks."""

from __future__ import annotations

from contextlib import aclosing

from tests.dashboard.helpers import csrf_of, signed_in
from tests.ecommerce.store_helpers import make_store


async def test_the_editor_saves_an_order_trigger_for_a_store(app, client, db, settings, ws):
    store = await make_store(client, ws.headers, "Main shop")
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/app/automations/new")
        assert '<option value="order_placed">an order is placed</option>' in page.text
        assert '<option value="cart_abandoned">a cart is abandoned</option>' in page.text
        base = {
            "csrf": csrf_of(page.text),
            "name": "Thanks",
            "trigger_type": "order_placed",
            "time_zone": "UTC",
            "type_0": "wait",
            "amount_0": "1",
            "unit_0": "hours",
        }
        laid_out = await member.post("/app/automations/save", data={**base, "layout": "1"})
        assert laid_out.status_code == 200
        assert f'<option value="{store["id"]}">Main shop</option>' in laid_out.text
        assert 'name="trigger_first_order_only"' in laid_out.text

        missing = await member.post("/app/automations/save", data=base)
        assert missing.status_code == 400 and "trigger.store_id is required" in missing.text

        saved = await member.post(
            "/app/automations/save",
            data={**base, "trigger_store_id": store["id"], "trigger_first_order_only": "on"},
        )
        assert saved.status_code == 303, saved.text
        automation_id = saved.headers["location"].rsplit("/", 1)[1]
        stored = (
            await client.get(f"/api/v1/automations/{automation_id}", headers=ws.headers)
        ).json()["automation"]
        assert stored["trigger"] == {
            "type": "order_placed",
            "store_id": store["id"],
            "first_order_only": True,
        }
        shown = await member.get(f"/app/automations/{automation_id}")
        assert f'<option value="{store["id"]}" selected>Main shop</option>' in shown.text
        assert 'name="trigger_first_order_only" checked' in shown.text

        # A cart trigger has no first-order box; the checkbox left unticked saves false.
        cart_page = await member.post(
            "/app/automations/save",
            data={**base, "trigger_type": "cart_abandoned", "layout": "1"},
        )
        assert 'name="trigger_first_order_only"' not in cart_page.text
        again = await member.post(
            "/app/automations/save",
            data={**base, "automation_id": automation_id, "trigger_store_id": store["id"]},
        )
        assert again.status_code == 303
        stored = (
            await client.get(f"/api/v1/automations/{automation_id}", headers=ws.headers)
        ).json()["automation"]
        assert stored["trigger"]["first_order_only"] is False
