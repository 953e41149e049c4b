"""The overview: contacts by status (linked to the filtered list), this month's emails against
the allowance, delivery health, the last campaigns with their rates, automations running."""

from __future__ import annotations

from contextlib import aclosing

from tests.dashboard.helpers import signed_in
from tests.sending.helpers import campaign_body, make_list


async def test_the_overview_sums_up_the_workspace(app, client, db, settings, ws):
    for n in range(3):
        made = await client.post(
            "/api/v1/contacts", json={"email": f"c{n}@shop.example"}, headers=ws.headers
        )
        assert made.status_code == 201
    news = await make_list(client, ws)
    campaign = await client.post("/api/v1/campaigns", json=campaign_body(news), headers=ws.headers)
    assert campaign.status_code == 201, campaign.text
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/app")
        assert page.status_code == 200
        text = page.text
        assert '<p class="figure">3</p>' in text
        assert '<a href="/app/contacts?status=subscribed">subscribed</a> 3' in text
        assert "Emails this month" in text and "Sending is on." in text
        assert campaign.json()["campaign"]["name"] in text and "draft" in text
        assert "No automation is running." in text
        assert "Manage API keys" not in text  # a member's overview
