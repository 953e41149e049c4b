"""`/app/feeds` as a person uses it: a feed added from the form (a refused URL keeps what was
typed), checked (its items and the next issue's subject, its HTML only in a sandboxed frame),
activated, run now (the issue in its history), paused, resumed, changed, deleted after a
confirmation; errors said on the page; and both pages in Chromium at both widths."""

from __future__ import annotations

import re
from contextlib import aclosing
from html import unescape

from playwright.async_api import expect

from tests.dashboard.browsing import checked, choose_password, flashes, submit
from tests.dashboard.helpers import csrf_of, form_values, make_person, signed_in
from tests.rss.conftest import blog, feed_settings  # noqa: F401
from tests.rss.helpers import API, due_now, make_feed, ready_workspace, worker_tick
from tests.sending.helpers import ok

ISSUE = re.compile(r"Blog digest - \d{4}-\d{2}-\d{2}")


def text_of(html: str) -> str:
    """The page as read: tags out, entities decoded, blanks folded."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


async def follow(browser, answer):
    assert answer.status_code == 303, answer.text
    return await browser.get(answer.headers["location"])


async def stored(client, ws, feed_id: str) -> dict:
    return (await ok(await client.get(f"{API}/{feed_id}", headers=ws.headers)))["rss_feed"]


async def test_add_check_activate_run_pause_and_delete_a_feed(
    app,
    client,
    db,
    settings,
    ws,
    blog,  # noqa: F811
):
    parts = await ready_workspace(client, db, ws)
    blog.add("Old post 1", "<p>First</p>")
    blog.add("Old post 2", "<p>Second</p>")
    member = await signed_in(app, db, settings, ws, "mo@blog.example", role="member")
    async with aclosing(member):
        listing = await member.get("/app/feeds")
        assert listing.status_code == 200 and "No feeds yet." in listing.text
        assert 'href="/app/feeds" aria-current="page"' in listing.text
        shown = form_values(listing.text, "feed-form")
        assert shown["subject"] == "{{ items[0].title }}"
        assert (shown["mode"], shown["frequency"], shown["time"], shown["timezone"]) == (
            "digest",
            "daily",
            "09:00",
            "UTC",
        )
        typed = {
            **shown,
            "name": "Blog digest",
            "url": blog.url,
            "template_id": parts["template_id"],
            "list_ids": [parts["list_id"]],
            "frequency": "weekly",
            "weekday": "friday",
            "time": "08:30",
            "timezone": "Europe/Paris",
            "max_items": "5",
        }

        # A URL the guard refuses: said, nothing made, what was typed kept.
        refused = await member.post("/app/feeds", data={**typed, "url": "http://10.0.0.7/feed"})
        assert refused.status_code == 400
        assert "url is not allowed: 10.0.0.7" in text_of(refused.text)
        kept = form_values(refused.text, "feed-form")
        assert (kept["name"], kept["url"], kept["weekday"], kept["timezone"]) == (
            "Blog digest",
            "http://10.0.0.7/feed",
            "friday",
            "Europe/Paris",
        )
        assert kept["list_ids"] == parts["list_id"] and kept["template_id"] == parts["template_id"]
        assert (await ok(await client.get(API, headers=ws.headers)))["rss_feeds"] == []
        forged = await member.post("/app/feeds", data={**typed, "csrf": "forged"})
        assert forged.status_code == 403

        page = await follow(member, await member.post("/app/feeds", data=typed))
        feed_id = str(page.url).rsplit("/", 1)[1]
        assert "Feed “Blog digest” added as a draft" in page.text
        feed = await stored(client, ws, feed_id)
        assert feed["schedule"] == {
            "mode": "digest",
            "frequency": "weekly",
            "time": "08:30",
            "timezone": "Europe/Paris",
            "weekday": "friday",
        }
        assert feed["audience"]["list_ids"] == [parts["list_id"]]
        assert (feed["status"], feed["max_items"], feed["subject"]) == (
            "draft",
            5,
            "{{ items[0].title }}",
        )
        assert feed["from_email"] is None  # left empty: the workspace's sender
        listed = text_of((await member.get("/app/feeds")).text)
        assert "Blog digest draft a digest every Friday at 08:30 (Europe/Paris) never —" in listed

        # Check: the items and the subject on the page, the email only in its frame.
        checked_page = await member.post(
            f"/app/feeds/{feed_id}/check", data={"csrf": csrf_of(page.text)}
        )
        assert checked_page.status_code == 200, checked_page.text
        assert 'id="feed-check-subject">Old post 2</strong>' in checked_page.text
        assert (
            '<a href="https://blog.example.com/2/" rel="noopener noreferrer">Old post 2</a>'
            in checked_page.text
        )
        items = text_of(checked_page.text)
        assert "Old post 2 2026-11-01 10:00 UTC Summary of Old post 2" in items
        assert "Old post 1 2026-11-01 09:00 UTC Summary of Old post 1" in items
        frame = re.search(r"<iframe [^>]*>", checked_page.text).group(0)
        assert " sandbox " in frame and f'src="/app/feeds/{feed_id}/preview"' in frame
        assert "<h1>The Example Blog</h1>" not in checked_page.text
        preview = await member.get(f"/app/feeds/{feed_id}/preview")
        assert preview.status_code == 200
        assert "<h1>The Example Blog</h1>" in preview.text and "<p>Second</p>" in preview.text
        policy = preview.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src" not in policy
        assert await stored(client, ws, feed_id) == feed  # a check changes nothing

        # Activate: the posts there now are never mailed.
        page = await follow(
            member,
            await member.post(f"/app/feeds/{feed_id}/activate", data={"csrf": csrf_of(page.text)}),
        )
        assert "Feed “Blog digest” is active" in page.text
        assert '<span class="badge ok">active</span>' in page.text
        feed = await stored(client, ws, feed_id)
        assert feed["status"] == "active" and feed["next_run_at"] is not None
        token = csrf_of(page.text)
        page = await follow(
            member, await member.post(f"/app/feeds/{feed_id}/run", data={"csrf": token})
        )
        assert "No new items: nothing was sent." in page.text
        assert "None yet: each issue is a campaign" in page.text

        # A new post, run now: the issue made and listed in the feed's history.
        blog.add("Fresh post", "<p>New</p>")
        page = await follow(
            member, await member.post(f"/app/feeds/{feed_id}/run", data={"csrf": token})
        )
        made = re.search(r"1 issue made: “(" + ISSUE.pattern + r")”", unescape(page.text))
        assert made, page.text
        issues = await ok(await client.get(f"{API}/{feed_id}/issues", headers=ws.headers))
        [issue] = issues["campaigns"]
        assert issue["name"] == made.group(1)
        row = re.search(r'<tr><td data-label="Campaign">.*?</tr>', page.text, re.S).group(0)
        assert f'<a href="/app/campaigns/{issue["id"]}">{issue["name"]}</a>' in row
        assert re.search(r'data-label="Status"><span class="badge[^"]*">(sending|sent)<', row)
        assert 'data-label="Sent">' in row and 'data-label="Opened">' in row

        # Pause, then resume.
        page = await follow(
            member, await member.post(f"/app/feeds/{feed_id}/pause", data={"csrf": token})
        )
        assert "Feed “Blog digest” is paused" in page.text and ">Resume</button>" in page.text
        assert (await stored(client, ws, feed_id))["status"] == "paused"
        page = await follow(
            member, await member.post(f"/app/feeds/{feed_id}/activate", data={"csrf": token})
        )
        assert "Feed “Blog digest” resumed" in page.text
        assert (await stored(client, ws, feed_id))["status"] == "active"

        # Delete, after a question; the issue stays.
        question = await member.get(f"/app/feeds/{feed_id}/delete")
        assert question.status_code == 200 and "Delete “Blog digest”?" in question.text
        assert (await stored(client, ws, feed_id))["status"] == "active"  # asking deletes nothing
        listing = await follow(
            member, await member.post(f"/app/feeds/{feed_id}/delete", data={"csrf": token})
        )
        assert str(listing.url).endswith("/app/feeds")
        assert "Feed “Blog digest” deleted; the campaigns it made stay." in listing.text
        assert "No feeds yet." in listing.text
        gone = await client.get(f"{API}/{feed_id}", headers=ws.headers)
        assert gone.status_code == 404
        kept = await client.get(f"/api/v1/campaigns/{issue['id']}", headers=ws.headers)
        assert kept.status_code == 200

    audit = (await client.get("/api/v1/account/audit-log", headers=ws.headers)).json()
    done = [(e["operation"], e["target_id"]) for e in audit["entries"]]
    for operation in (
        "create_rss_feed",
        "activate_rss_feed",
        "run_rss_feed",
        "pause_rss_feed",
        "delete_rss_feed",
    ):
        assert (operation, feed_id) in done, (operation, done)


async def test_change_a_feed_and_what_the_page_says_when_refused(
    app,
    client,
    db,
    factory,
    settings,
    ws,
    blog,  # noqa: F811
):
    parts = await ready_workspace(client, db, ws)
    feed = await make_feed(client, ws, blog.url, parts, name="Blog digest")
    admin = await signed_in(app, db, settings, ws, "ada@blog.example")
    async with aclosing(admin):
        page = await admin.get(f"/app/feeds/{feed['id']}")
        assert page.status_code == 200 and "a daily digest at 09:00 (UTC)" in page.text
        shown = form_values(page.text, "feed-form")
        assert (shown["name"], shown["url"], shown["list_ids"]) == (
            "Blog digest",
            blog.url,
            parts["list_id"],
        )
        changed = {**shown, "mode": "each_item", "check_every_minutes": "30", "from_name": "Ada"}
        page = await follow(admin, await admin.post(f"/app/feeds/{feed['id']}", data=changed))
        assert "Feed “Blog digest” saved." in page.text
        assert "each new item, checked every 30 minutes" in page.text
        now = await stored(client, ws, feed["id"])
        assert now["schedule"] == {"mode": "each_item", "check_every_minutes": 30}
        assert now["from_name"] == "Ada"

        # Refused: the page says why, shows what was typed, and nothing changed.
        bad = {**changed, "check_every_minutes": "4", "subject": "Hello {{ items[0].title }}"}
        refused = await admin.post(f"/app/feeds/{feed['id']}", data=bad)
        assert refused.status_code == 400
        assert "schedule.check_every_minutes must be between 5 and 1,440" in text_of(refused.text)
        kept = form_values(refused.text, "feed-form")
        assert (kept["check_every_minutes"], kept["subject"]) == ("4", "Hello {{ items[0].title }}")
        assert await stored(client, ws, feed["id"]) == now
        other = await make_feed(client, ws, blog.url, parts, name="Other")
        taken = await admin.post(
            f"/app/feeds/{other['id']}", data={**changed, "name": "blog DIGEST"}
        )
        assert taken.status_code == 409 and "A feed with this name already exists" in taken.text

        # A feed that cannot be read: checking, activating and the worker's runs say so.
        token = csrf_of(page.text)
        await follow(
            admin, await admin.post(f"/app/feeds/{feed['id']}/activate", data={"csrf": token})
        )
        blog.status = 404
        unreadable = await admin.post(f"/app/feeds/{feed['id']}/check", data={"csrf": token})
        assert unreadable.status_code == 422
        assert "Feed could not be read: HTTP 404" in unreadable.text
        assert 'id="feed-settings"' in unreadable.text
        preview = await admin.get(f"/app/feeds/{feed['id']}/preview")
        assert preview.status_code == 422 and "Feed could not be read: HTTP 404" in preview.text
        await due_now(db, feed["id"])
        assert await worker_tick(db, settings) == 1
        shown = text_of((await admin.get(f"/app/feeds/{feed['id']}")).text)
        assert re.search(r"Last error Feed could not be read: HTTP 404 \(\d{4}-\d\d-\d\d ", shown)
        listed = text_of((await admin.get("/app/feeds")).text)
        assert "Blog digest active Feed could not be read: HTTP 404 (" in listed
        refused = await follow(
            admin, await admin.post(f"/app/feeds/{other['id']}/activate", data={"csrf": token})
        )
        assert "Feed could not be read: HTTP 404" in refused.text
        assert (await stored(client, ws, other["id"]))["status"] == "draft"
        not_active = await follow(
            admin, await admin.post(f"/app/feeds/{other['id']}/run", data={"csrf": token})
        )
        assert "Feed is not active" in not_active.text

        # Another workspace's feed is not found here.
        theirs_ws = await factory.workspace("pro")
        theirs = await make_feed(
            client,
            theirs_ws,
            blog.url,
            await ready_workspace(client, db, theirs_ws, 1),
            name="Theirs",
        )
        missing = await admin.get(f"/app/feeds/{theirs['id']}")
        assert missing.status_code == 404 and "Theirs" not in missing.text
        deleted = await admin.post(f"/app/feeds/{theirs['id']}/delete", data={"csrf": token})
        assert deleted.status_code == 404
        assert (await stored(client, theirs_ws, theirs["id"]))["name"] == "Theirs"


async def test_the_feed_pages_in_a_browser(
    live_server,
    page,
    client,
    db,
    settings,
    ws,
    blog,  # noqa: F811
):
    parts = await ready_workspace(client, db, ws)
    for n in range(1, 4):
        blog.add(f"A rather long post title number {n} about feeds", f"<p>Body {n}</p>")
    feed = await make_feed(client, ws, blog.url, parts, name="Blog digest")
    await make_feed(
        client,
        ws,
        blog.url,
        parts,
        name="Every post",
        schedule={"mode": "each_item", "check_every_minutes": 15},
    )
    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@blog.example")
    )

    await page.goto(f"{live_server}/app/feeds")
    rows = page.locator("table.stack tbody tr")
    await expect(rows).to_have_count(2)
    assert "each new item, checked every 15 minutes" in await rows.first.inner_text()
    await checked(page, "feeds")

    await page.get_by_role("link", name="Blog digest").click()
    await page.wait_for_url(f"**/app/feeds/{feed['id']}")
    answer = await submit(page, "Check feed")
    assert answer.status == 200
    assert await page.locator("#feed-check-subject").inner_text() == (
        "A rather long post title number 3 about feeds"
    )
    frame = page.frame_locator("iframe.preview")
    await expect(frame.locator("h1")).to_have_text("The Example Blog")
    await checked(page, "feed-checked")
    await submit(page, "Activate")
    assert "is active" in (await flashes(page))[0]
    await checked(page, "feed-active")
    blog.add("A fresh post")
    await submit(page, "Run now")
    assert ISSUE.search((await flashes(page))[0])
    history = page.locator("#feed-issues table.stack tbody tr")
    await expect(history).to_have_count(1)
    assert ISSUE.search(await history.first.inner_text())
    await checked(page, "feed-issue")
