"""A sending domain cannot be deleted while a scheduled or sending campaign sends from it (its
own `from_email`, or the workspace's sender identity when it names none): 409 naming the
campaign; a draft or a finished campaign does not hold it."""

from __future__ import annotations

from datetime import timedelta

from mailroom.core.clock import utcnow
from tests.sending.helpers import make_campaign, make_contacts, make_list, ok, send_campaign

IN_USE = "This domain is used by a scheduled or sending campaign"


async def _domain(client, ws, name="shop.example"):
    made = await client.post("/api/v1/domains", json={"domain": name}, headers=ws.headers)
    return (await ok(made, 201))["domain"]["id"]


async def test_a_sending_campaign_holds_its_domain(client, ws):
    domain = await _domain(client, ws)
    other = await _domain(client, ws, "other.example")
    news = await make_list(client, ws)
    await make_contacts(client, ws, ["jane@mailtest.io"], news)
    campaign = await make_campaign(client, ws, news, from_email="News@Shop.example")
    draft_ok = await client.get(f"/api/v1/domains/{domain}", headers=ws.headers)
    assert draft_ok.status_code == 200
    await send_campaign(client, ws, campaign["id"])

    refused = await client.delete(f"/api/v1/domains/{domain}", headers=ws.headers)
    assert (refused.status_code, refused.json()) == (
        409,
        {"error": IN_USE, "campaign_id": campaign["id"]},
    )
    assert (await client.get(f"/api/v1/domains/{domain}", headers=ws.headers)).status_code == 200
    gone = await client.delete(f"/api/v1/domains/{other}", headers=ws.headers)
    assert (await ok(gone)) == {"success": True, "id": other}

    await ok(await client.post(f"/api/v1/campaigns/{campaign['id']}/cancel", headers=ws.headers))
    freed = await client.delete(f"/api/v1/domains/{domain}", headers=ws.headers)
    assert freed.status_code == 200


async def test_a_scheduled_campaign_on_the_sender_identity_holds_it(client, ws):
    domain = await _domain(client, ws)
    await ok(
        await client.patch(
            "/api/v1/sending", json={"from_email": "hello@shop.example"}, headers=ws.headers
        )
    )
    news = await make_list(client, ws)
    await make_contacts(client, ws, ["jane@mailtest.io"], news)
    campaign = await make_campaign(client, ws, news, from_email=None)
    when = (utcnow() + timedelta(days=1)).isoformat()
    await ok(
        await client.post(
            f"/api/v1/campaigns/{campaign['id']}/schedule",
            json={"send_at": when},
            headers=ws.headers,
        )
    )
    refused = await client.delete(f"/api/v1/domains/{domain}", headers=ws.headers)
    assert refused.status_code == 409
    assert refused.json()["error"] == IN_USE
