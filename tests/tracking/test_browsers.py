"""People versus machines by real User-Agent strings: opens and clicks from Firefox, Safari
(desktop and iPhone) and Edge count as people in `stats` and the campaign report, and fire the
first-open/first-click events; scanners that `mailroom.tracking.agents` recognises (a
security gateway, a headless Chrome, Googlebot dressed as Chrome) are recorded, flagged and
counted nowhere."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from mailroom.models import TrackingHit
from tests.sending.helpers import events_of, get_campaign, ok
from tests.tracking.helpers import SCANNER, hrefs, html_of, path_of, pixel, sent_campaign

FIREFOX = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0"
SAFARI = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/18.1 Safari/605.1.15"
)
IPHONE_SAFARI = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
)
EDGE = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.70"
)
HEADLESS = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "HeadlessChrome/131.0.6778.85 Safari/537.36"
)
GOOGLEBOT = (
    "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/131.0.6778.69 Mobile Safari/537.36 "
    "(compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
)
BROWSERS = {"firefox": FIREFOX, "safari": SAFARI, "iphone": IPHONE_SAFARI, "edge": EDGE}
SCANNERS = [SCANNER, HEADLESS, GOOGLEBOT]


async def _report(client, ws, campaign_id):
    answer = await client.get(f"/api/v1/campaigns/{campaign_id}/report", headers=ws.headers)
    return (await ok(answer))["report"]


def _links(data: bytes) -> tuple[str, str]:
    html = html_of(data)
    [sale, _blog] = [path_of(h) for h in hrefs(html) if "/l/" in h]
    return sale, path_of(pixel(html))


@pytest.mark.parametrize("browser", sorted(BROWSERS))
async def test_a_browser_counts_as_a_person(app, client, db, ws, sink, driver, browser):
    agent = BROWSERS[browser]
    opener, clicker = "opener@mail.example", "clicker@mail.example"
    campaign, got = await sent_campaign(client, db, ws, driver, sink, [opener, clicker])
    _sale, opened = _links(got[opener])
    sale, _pixel = _links(got[clicker])

    seen = await client.get(opened, headers={"user-agent": agent})
    assert seen.status_code == 200 and seen.headers["content-type"] == "image/gif"
    clicked = await client.get(sale, headers={"user-agent": agent})
    assert clicked.status_code == 302
    assert clicked.headers["location"] == "https://shop.example/sale?utm=mail&x=1"

    await app.state.hits.flush()
    stats = (await get_campaign(client, ws, campaign["id"]))["stats"]
    assert (stats["opened"], stats["clicked"]) == (2, 1)  # the click is an open too
    report = await _report(client, ws, campaign["id"])
    assert (report["totals"]["opened"], report["totals"]["clicked"]) == (2, 1)
    assert (report["opens"], report["clicks"]) == (1, 1)
    assert report["links"][0] == {
        "url": "https://shop.example/sale?utm=mail&x=1",
        "clicks": 1,
        "unique_clicks": 1,
    }
    assert report["rates"]["open"] == 1.0 and report["rates"]["click"] == 0.5
    opened_events = await events_of(db, ws.workspace_id, "email.opened")
    assert sorted(e.data["recipient"]["email"] for e in opened_events) == [clicker, opener]
    [click_event] = await events_of(db, ws.workspace_id, "email.clicked")
    assert click_event.data["recipient"]["email"] == clicker
    async with db.session() as session:
        hits = (await session.scalars(select(TrackingHit))).all()
    assert len(hits) == 2 and not any(h.automated for h in hits)
    assert {h.user_agent for h in hits} == {agent}


async def test_browsers_count_and_scanners_do_not_in_one_campaign(
    app, client, db, ws, sink, driver
):
    people = {name: f"{name}@mail.example" for name in ("firefox", "safari", "edge", "scanned")}
    campaign, got = await sent_campaign(client, db, ws, driver, sink, list(people.values()))
    links = {name: _links(got[email]) for name, email in people.items()}

    async def hit(path, agent, expected):
        answer = await client.get(path, headers={"user-agent": agent})
        assert answer.status_code == expected

    await hit(links["firefox"][0], FIREFOX, 302)  # Firefox clicks (twice)
    await hit(links["firefox"][0], FIREFOX, 302)
    await hit(links["safari"][1], SAFARI, 200)  # Safari only opens
    await hit(links["edge"][1], EDGE, 200)  # Edge opens and clicks
    await hit(links["edge"][0], EDGE, 302)
    for agent in SCANNERS:  # every scanner opens and follows the link: nobody counted
        await hit(links["scanned"][1], agent, 200)
        await hit(links["scanned"][0], agent, 302)

    await app.state.hits.flush()
    stats = (await get_campaign(client, ws, campaign["id"]))["stats"]
    assert (stats["opened"], stats["clicked"]) == (3, 2)
    report = await _report(client, ws, campaign["id"])
    assert (report["totals"]["opened"], report["totals"]["clicked"]) == (3, 2)
    assert (report["opens"], report["clicks"]) == (2, 3)
    assert report["rates"]["open"] == 0.75 and report["rates"]["click"] == 0.5
    assert report["links"][0]["clicks"] == 3 and report["links"][0]["unique_clicks"] == 2
    [hour] = report["hourly"]
    assert (hour["opens"], hour["clicks"]) == (2, 3)
    opened = await events_of(db, ws.workspace_id, "email.opened")
    assert sorted(e.data["recipient"]["email"] for e in opened) == sorted(
        [people["firefox"], people["safari"], people["edge"]]
    )
    clicked = await events_of(db, ws.workspace_id, "email.clicked")
    assert sorted(e.data["recipient"]["email"] for e in clicked) == sorted(
        [people["firefox"], people["edge"]]
    )
    async with db.session() as session:
        hits = (await session.scalars(select(TrackingHit))).all()
    flagged = sorted((h.user_agent, h.kind) for h in hits if h.automated)
    assert flagged == sorted((agent, kind) for agent in SCANNERS for kind in ("click", "open"))
    people_hits = [h for h in hits if not h.automated]
    assert len(people_hits) == 5
    assert {h.user_agent for h in people_hits} == {FIREFOX, SAFARI, EDGE}


@pytest.mark.parametrize("agent", SCANNERS, ids=["barracuda", "headless-chrome", "googlebot"])
async def test_a_scanner_alone_counts_nobody(app, client, db, ws, sink, driver, agent):
    person = "jane@mail.example"
    campaign, got = await sent_campaign(client, db, ws, driver, sink, [person])
    sale, opened = _links(got[person])
    assert (await client.get(opened, headers={"user-agent": agent})).status_code == 200
    assert (await client.get(sale, headers={"user-agent": agent})).status_code == 302
    await app.state.hits.flush()
    stats = (await get_campaign(client, ws, campaign["id"]))["stats"]
    assert (stats["opened"], stats["clicked"]) == (0, 0)
    report = await _report(client, ws, campaign["id"])
    assert (report["totals"]["opened"], report["totals"]["clicked"]) == (0, 0)
    assert (report["opens"], report["clicks"]) == (0, 0)
    assert await events_of(db, ws.workspace_id, "email.opened", "email.clicked") == []
    async with db.session() as session:
        hits = (await session.scalars(select(TrackingHit))).all()
    assert len(hits) == 2 and all(h.automated for h in hits)
