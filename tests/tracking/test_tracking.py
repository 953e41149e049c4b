"""Open and click tracking through the API and a real SMTP conversation: the links and pixel
in what was sent, the redirect, first-only events, stats, people versus scanners, altered
tokens, and campaigns that do not track."""

from __future__ import annotations

from sqlalchemy import select

from mailroom.models import TrackingHit
from tests.sending.helpers import events_of, get_campaign, ok
from tests.tracking.helpers import (
    CHROME,
    SCANNER,
    hrefs,
    html_of,
    path_of,
    pixel,
    sent_campaign,
    text_of,
)

JANE, TOM = "jane@mail.example", "tom@mail.example"


async def test_links_and_pixel_are_added_to_the_html_only(app, client, db, ws, sink, driver):
    _campaign, got = await sent_campaign(client, db, ws, driver, sink, [JANE])
    html = html_of(got[JANE])
    links = hrefs(html)
    tracked = [h for h in links if "/l/" in h]
    assert len(tracked) == 2 and all(h.startswith("http://testserver/l/") for h in tracked)
    assert "mailto:help@shop.example" in links and "#top" in links
    assert any(h.startswith("http://testserver/u/") for h in links)
    assert any(h.startswith("http://testserver/p/") for h in links)
    assert any(h.startswith("http://testserver/v/") for h in links)
    assert "shop.example/sale" not in html  # no readable copy of a tracked URL left behind
    assert pixel(html) is not None
    assert html.index("/o/") < html.lower().index("</body>")
    text = text_of(got[JANE])
    assert "/l/" not in text and "/o/" not in text
    assert "https://shop.example/sale?utm=mail&x=1" in text


async def test_a_click_redirects_and_counts_once_per_person(app, client, db, ws, sink, driver):
    campaign, got = await sent_campaign(client, db, ws, driver, sink, [JANE, TOM])
    sale = next(h for h in hrefs(html_of(got[JANE])) if "/l/" in h)

    first = await client.get(path_of(sale), headers={"user-agent": CHROME})
    assert first.status_code == 302
    assert first.headers["location"] == "https://shop.example/sale?utm=mail&x=1"
    assert "no-store" in first.headers["cache-control"]
    again = await client.get(path_of(sale), headers={"user-agent": CHROME})
    assert (again.status_code, again.headers["location"]) == (302, first.headers["location"])

    await app.state.hits.flush()
    stats = (await get_campaign(client, ws, campaign["id"]))["stats"]
    assert (stats["clicked"], stats["opened"]) == (1, 1)  # a click counts as an open
    clicked = await events_of(db, ws.workspace_id, "email.clicked")
    assert len(clicked) == 1
    assert clicked[0].campaign_id == campaign["id"]
    assert clicked[0].data["link"] == {"url": "https://shop.example/sale?utm=mail&x=1", "index": 0}
    assert clicked[0].data["recipient"]["email"] == JANE
    assert len(await events_of(db, ws.workspace_id, "email.opened")) == 1


async def test_the_pixel_counts_the_first_open_and_later_ones(app, client, db, ws, sink, driver):
    campaign, got = await sent_campaign(client, db, ws, driver, sink, [JANE, TOM])
    for who in (JANE, JANE, TOM):
        seen = await client.get(path_of(pixel(html_of(got[who]))), headers={"user-agent": CHROME})
        assert seen.status_code == 200
        assert seen.headers["content-type"] == "image/gif"
        assert seen.content.startswith(b"GIF89a") and len(seen.content) == 43
        assert "no-store" in seen.headers["cache-control"]
    await app.state.hits.flush()
    stats = (await get_campaign(client, ws, campaign["id"]))["stats"]
    assert (stats["opened"], stats["clicked"]) == (2, 0)
    opened = await events_of(db, ws.workspace_id, "email.opened")
    assert sorted(e.data["recipient"]["email"] for e in opened) == [JANE, TOM]
    await app.state.hits.flush()
    report = (
        await ok(await client.get(f"/api/v1/campaigns/{campaign['id']}/report", headers=ws.headers))
    )["report"]
    assert report["opens"] == 3 and report["totals"]["opened"] == 2


async def test_scanners_are_recorded_but_not_counted(app, client, db, ws, sink, driver):
    campaign, got = await sent_campaign(client, db, ws, driver, sink, [JANE])
    html = html_of(got[JANE])
    sale = next(h for h in hrefs(html) if "/l/" in h)
    for agent in (
        SCANNER,
        "",
        "curl/8.5.0",
        "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    ):
        followed = await client.get(path_of(sale), headers={"user-agent": agent})
        assert followed.status_code == 302  # a scanner still gets where the link goes
        await client.get(path_of(pixel(html)), headers={"user-agent": agent})
    await app.state.hits.flush()
    stats = (await get_campaign(client, ws, campaign["id"]))["stats"]
    assert (stats["opened"], stats["clicked"]) == (0, 0)
    assert await events_of(db, ws.workspace_id, "email.opened", "email.clicked") == []
    await app.state.hits.flush()
    async with db.session() as session:
        hits = (await session.scalars(select(TrackingHit))).all()
    assert len(hits) == 8 and all(h.automated for h in hits)


async def test_altered_tokens_record_nothing(app, client, db, ws, sink, driver):
    campaign, got = await sent_campaign(client, db, ws, driver, sink, [JANE])
    html = html_of(got[JANE])
    sale = path_of(next(h for h in hrefs(html) if "/l/" in h))
    opened = path_of(pixel(html))
    flip = {"A": "B", "B": "A"}
    for path in (sale, opened):
        for at in (len("/l/"), len(path) // 2, len(path) - 1):
            char = path[at]
            other = flip.get(char, "A")
            changed = path[:at] + other + path[at + 1 :]
            answer = await client.get(changed, headers={"user-agent": CHROME})
            if path is sale:
                assert answer.status_code == 404
                assert "location" not in answer.headers
            else:
                assert answer.status_code == 200 and answer.content.startswith(b"GIF89a")
    forged = await client.get("/l/aHR0cHM6Ly9ldmlsLmV4YW1wbGUv", headers={"user-agent": CHROME})
    assert forged.status_code == 404
    await app.state.hits.flush()
    stats = (await get_campaign(client, ws, campaign["id"]))["stats"]
    assert (stats["opened"], stats["clicked"]) == (0, 0)
    async with db.session() as session:
        assert (await session.scalars(select(TrackingHit))).all() == []


async def test_a_campaign_without_tracking_sends_plain_links(app, client, db, ws, sink, driver):
    _campaign, got = await sent_campaign(
        client, db, ws, driver, sink, [JANE], track_opens=False, track_clicks=False
    )
    html = html_of(got[JANE])
    assert pixel(html) is None and "/l/" not in html
    assert "https://shop.example/sale?utm=mail&x=1" in hrefs(html)


async def test_opens_only(app, client, db, ws, sink, driver):
    _campaign, got = await sent_campaign(
        client, db, ws, driver, sink, [JANE], track_opens=True, track_clicks=False
    )
    html = html_of(got[JANE])
    assert pixel(html) is not None and "/l/" not in html


async def test_hits_are_written_moments_later_by_themselves(app, client, db, ws, sink, driver):
    import asyncio
    import time

    campaign, got = await sent_campaign(client, db, ws, driver, sink, [JANE])
    sale = next(h for h in hrefs(html_of(got[JANE])) if "/l/" in h)
    answered = await client.get(path_of(sale), headers={"user-agent": CHROME})
    assert answered.status_code == 302  # answered before anything is written
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        stats = (await get_campaign(client, ws, campaign["id"]))["stats"]
        if stats["clicked"]:
            break
        await asyncio.sleep(0.02)
    assert (stats["clicked"], stats["opened"]) == (1, 1)
