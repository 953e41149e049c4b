"""`GET /api/v1/campaigns/{id}/report`: totals, unique and total opens and clicks, rates of
`sent`, clicks per link and the hourly series; segment `activity` rules over the same data."""

from __future__ import annotations

from datetime import datetime

from tests.sending.helpers import ok
from tests.tracking.helpers import CHROME, SCANNER, hrefs, html_of, path_of, pixel, sent_campaign

PEOPLE = ["a@mail.example", "b@mail.example", "c@mail.example", "d@mail.example"]


async def _click(client, data: bytes, which: int, agent: str = CHROME) -> None:
    link = [h for h in hrefs(html_of(data)) if "/l/" in h][which]
    assert (await client.get(path_of(link), headers={"user-agent": agent})).status_code == 302


async def test_report_counts_people_links_and_hours(app, client, db, ws, sink, driver):
    campaign, got = await sent_campaign(client, db, ws, driver, sink, PEOPLE)
    a, b, c, _d = (got[p] for p in PEOPLE)
    await _click(client, a, 0)
    await _click(client, a, 0)
    await _click(client, a, 1)
    await _click(client, b, 0)
    await _click(client, c, 1, SCANNER)  # recorded, not counted
    await client.get(path_of(pixel(html_of(c))), headers={"user-agent": CHROME})

    await app.state.hits.flush()
    answer = await client.get(f"/api/v1/campaigns/{campaign['id']}/report", headers=ws.headers)
    report = (await ok(answer))["report"]
    assert report["totals"] == {
        "recipients": 4,
        "sent": 4,
        "delivered": 0,
        "opened": 3,
        "clicked": 2,
        "bounced": 0,
        "complained": 0,
        "unsubscribed": 0,
    }
    assert (report["opens"], report["clicks"]) == (1, 4)
    assert report["rates"] == {
        "open": 0.75,
        "click": 0.5,
        "bounce": 0.0,
        "complaint": 0.0,
        "unsubscribe": 0.0,
    }
    assert report["links"] == [
        {"url": "https://shop.example/sale?utm=mail&x=1", "clicks": 3, "unique_clicks": 2},
        {"url": "http://shop.example/blog", "clicks": 1, "unique_clicks": 1},
    ]
    [hour] = report["hourly"]
    assert (hour["opens"], hour["clicks"]) == (1, 4)
    started = datetime.fromisoformat(hour["hour"].replace("Z", "+00:00"))
    assert (started.minute, started.second) == (0, 0)


async def test_report_of_a_draft_and_of_another_workspace(app, client, ws, factory):
    from tests.sending.helpers import make_campaign, make_list

    news = await make_list(client, ws)
    draft = await make_campaign(client, ws, news)
    report = (
        await ok(await client.get(f"/api/v1/campaigns/{draft['id']}/report", headers=ws.headers))
    )["report"]
    assert report["totals"]["sent"] == 0 and report["hourly"] == [] and report["links"] == []
    assert report["rates"]["open"] == 0.0
    other = await factory.workspace()
    foreign = await client.get(f"/api/v1/campaigns/{draft['id']}/report", headers=other.headers)
    assert (foreign.status_code, foreign.json()) == (404, {"error": "Campaign not found"})


async def test_activity_segments_follow_opens_and_clicks(app, client, db, ws, sink, driver):
    campaign, got = await sent_campaign(client, db, ws, driver, sink, PEOPLE)
    await client.get(path_of(pixel(html_of(got[PEOPLE[0]]))), headers={"user-agent": CHROME})
    await _click(client, got[PEOPLE[1]], 0)

    async def matching(op: str, **value) -> list[str]:
        rules = {
            "match": "all",
            "conditions": [{"field": "activity", "op": op, "value": value or None}],
        }
        if not value:
            del rules["conditions"][0]["value"]
        answer = await client.post(
            "/api/v1/segments/preview", json={"rules": rules}, headers=ws.headers
        )
        return sorted(c["email"] for c in (await ok(answer))["contacts"])

    await app.state.hits.flush()
    assert await matching("opened") == PEOPLE[:2]
    assert await matching("clicked") == PEOPLE[1:2]
    assert await matching("received", campaign_id=campaign["id"]) == PEOPLE
    assert await matching("not_opened", campaign_id=campaign["id"], within_days=30) == PEOPLE[2:]
