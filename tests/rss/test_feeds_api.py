"""RSS feeds through the API as a client uses them: made, checked (what the next issue would
hold, nothing changed), activated (the archive is never mailed), run now and by the worker's
loop, each issue an ordinary campaign that reaches the readers' mailboxes."""

from __future__ import annotations

import re

from sqlalchemy import func, select

from mailroom.models import AuditEntry, Campaign, RssFeed
from tests.rss.helpers import API, due_now, make_feed, ready_workspace, worker_tick
from tests.sending.conftest import driver, sink  # noqa: F401
from tests.sending.helpers import ok


async def test_made_with_defaults_and_refused_settings(client, db, ws, factory, blog):
    parts = await ready_workspace(client, db, ws)
    feed = await make_feed(client, ws, blog.url, parts)
    assert feed["status"] == "draft"
    assert feed["schedule"] == {
        "mode": "digest",
        "frequency": "daily",
        "time": "09:00",
        "timezone": "UTC",
    }
    assert (feed["min_items"], feed["max_items"]) == (1, 10)
    assert feed["subject"] == "{{ items[0].title }}"
    assert feed["audience"]["list_ids"] == [parts["list_id"]]
    assert feed["next_run_at"] is None and feed["last_error"] is None
    h = ws.headers
    base = {"name": "Other", "url": blog.url, "template_id": parts["template_id"]}
    refusals = [
        ({"url": "http://10.0.0.7/feed"}, "url is not allowed: 10.0.0.7"),
        ({"url": "https://user:pw@blog.example.com/feed"}, "url is not allowed: URLs must not"),
        ({"url": "ftp://blog.example.com/feed"}, "url is not allowed: not a valid"),
        ({"max_items": 51}, "max_items must be between 1 and 50"),
        ({"min_items": 5, "max_items": 2}, "min_items must not be more than max_items"),
        ({"template_id": "nope"}, "template_id: no such template in this workspace"),
        ({"schedule": {"mode": "hourly"}}, "schedule.mode must be one of: digest, each_item"),
        (
            {"schedule": {"mode": "each_item", "check_every_minutes": 4}},
            "schedule.check_every_minutes must be between 5 and 1,440",
        ),
        (
            {"schedule": {"mode": "digest", "frequency": "weekly", "weekday": "funday"}},
            "schedule.weekday must be one of: monday",
        ),
        ({"schedule": {"mode": "digest", "time": "25:00"}}, "schedule.time must be HH:MM"),
        (
            {"schedule": {"mode": "digest", "timezone": "Mars/Base"}},
            "schedule.timezone must be an IANA time zone",
        ),
    ]
    for change, message in refusals:
        answer = await client.post(API, json={**base, **change}, headers=h)
        assert answer.status_code == 400, (change, answer.text)
        assert answer.json()["error"].startswith(message), (change, answer.json())
    taken = await client.post(API, json={**base, "name": "blog"}, headers=h)
    assert (taken.status_code, taken.json()["error"]) == (
        409,
        "A feed with this name already exists",
    )
    listed = await ok(await client.get(API, headers=h))
    assert [f["name"] for f in listed["rss_feeds"]] == ["Blog"]
    assert listed["pagination"]["total"] == 1

    changed = await ok(
        await client.patch(
            f"{API}/{feed['id']}",
            json={"schedule": {"mode": "each_item", "check_every_minutes": 30}, "max_items": 3},
            headers=h,
        )
    )
    assert changed["rss_feed"]["schedule"] == {"mode": "each_item", "check_every_minutes": 30}
    assert (await ok(await client.get(f"{API}/{feed['id']}", headers=h)))["rss_feed"][
        "max_items"
    ] == 3
    # Another workspace sees nothing of it.
    other = await factory.workspace("pro")
    for method in ("get", "delete"):
        answer = await getattr(client, method)(f"{API}/{feed['id']}", headers=other.headers)
        assert (answer.status_code, answer.json()) == (404, {"error": "Feed not found"})
    gone = await ok(await client.delete(f"{API}/{feed['id']}", headers=h))
    assert gone == {"success": True, "id": feed["id"]}
    assert (await client.get(f"{API}/{feed['id']}", headers=h)).status_code == 404


async def test_permissions(client, db, ws, factory, blog):
    parts = await ready_workspace(client, db, ws)
    feed = await make_feed(client, ws, blog.url, parts)
    writer = await factory.key(ws, ["campaigns:read", "campaigns:write"])
    reader = await factory.key(ws, ["campaigns:read"])
    for action in ("activate", "run"):
        answer = await client.post(f"{API}/{feed['id']}/{action}", headers=writer)
        assert answer.status_code == 403, answer.text
        assert answer.json() == {"error": "Forbidden: campaigns:send permission required"}
    for action in ("check", "pause"):
        answer = await client.post(f"{API}/{feed['id']}/{action}", headers=reader)
        assert answer.json() == {"error": "Forbidden: campaigns:write permission required"}
    assert (await client.post(f"{API}/{feed['id']}/check", headers=writer)).status_code == 200
    assert (await client.get(f"{API}/{feed['id']}", headers=reader)).status_code == 200
    stored = await ok(await client.get(f"{API}/{feed['id']}", headers=reader))
    assert stored["rss_feed"]["status"] == "draft"  # the refused activation changed nothing


async def test_check_shows_the_next_issue_and_changes_nothing(client, db, ws, blog):
    parts = await ready_workspace(client, db, ws)
    for n in range(1, 4):
        blog.add(f"Post {n}", f'<p>Body {n}<script>alert(1)</script><a onclick="x()">x</a></p>')
    feed = await make_feed(client, ws, blog.url, parts, max_items=2)
    before = await ok(await client.get(f"{API}/{feed['id']}", headers=ws.headers))
    checked = await ok(await client.post(f"{API}/{feed['id']}/check", headers=ws.headers))
    # Never activated: the current items are new, newest first, up to max_items.
    assert [i["title"] for i in checked["items"]] == ["Post 3", "Post 2"]
    assert checked["items"][0] == {
        "guid": "https://blog.example.com/?p=3",
        "title": "Post 3",
        "link": "https://blog.example.com/3/",
        "published_at": "2026-11-01T11:00:00Z",
        "summary": "Summary of Post 3",
    }
    assert checked["subject"] == "Post 3"
    html = checked["html"]
    assert "<h1>The Example Blog</h1>" in html and "<p>Body 3" in html
    assert "<script" not in html and "onclick" not in html and "alert(1)" not in html
    after = await ok(await client.get(f"{API}/{feed['id']}", headers=ws.headers))
    assert after == before
    async with db.session() as session:
        assert await session.scalar(select(func.count()).select_from(Campaign)) == 0

    blog.status = 404
    refused = await client.post(f"{API}/{feed['id']}/check", headers=ws.headers)
    assert (refused.status_code, refused.json()) == (
        422,
        {"error": "Feed could not be read: HTTP 404"},
    )
    blog.status, blog.redirect_to = 200, "http://10.1.2.3/feed"
    refused = await client.post(f"{API}/{feed['id']}/check", headers=ws.headers)
    assert refused.status_code == 422
    assert refused.json()["error"].startswith("Feed could not be read: redirect to a refused")


async def test_activation_never_mails_the_archive_and_each_new_post_goes_once(
    client,
    db,
    ws,
    blog,
    sink,  # noqa: F811
    driver,  # noqa: F811
):
    parts = await ready_workspace(client, db, ws)
    for n in range(1, 6):
        blog.add(f"Old post {n}")
    feed = await make_feed(client, ws, blog.url, parts)
    h = ws.headers
    not_yet = await client.post(f"{API}/{feed['id']}/run", headers=h)
    assert (not_yet.status_code, not_yet.json()) == (409, {"error": "Feed is not active"})
    active = (await ok(await client.post(f"{API}/{feed['id']}/activate", headers=h)))["rss_feed"]
    assert active["status"] == "active" and active["next_run_at"] is not None
    nothing = await client.post(f"{API}/{feed['id']}/run", headers=h)
    assert (nothing.status_code, nothing.json()) == (
        200,
        {"campaign_id": None, "campaign_ids": [], "reason": "no new items"},
    )

    blog.add("Fresh post", '<p>New <a href="https://shop.example/x">thing</a></p>')
    sent = await client.post(f"{API}/{feed['id']}/run", headers=h)
    assert sent.status_code == 202, sent.text
    campaign_id = sent.json()["campaign_id"]
    assert sent.json()["campaign_ids"] == [campaign_id]
    again = await client.post(f"{API}/{feed['id']}/run", headers=h)
    assert again.json()["reason"] == "no new items"

    issues = await ok(await client.get(f"{API}/{feed['id']}/issues", headers=h))
    assert [c["id"] for c in issues["campaigns"]] == [campaign_id]
    issue = issues["campaigns"][0]
    assert re.fullmatch(r"Blog - \d{4}-\d{2}-\d{2}", issue["name"])
    assert issue["status"] in ("sending", "sent")
    await driver.drain()
    assert len(sink.received) == 2
    mail = sink.received[0].parsed()
    assert mail["Subject"] == "Fresh post"
    body = mail.get_body(("html",)).get_content()
    assert "Fresh post" in body and "Old post" not in body
    assert "/l/" in body and "https://shop.example/x" not in body  # links tracked
    assert "List-Unsubscribe" in mail


async def test_each_item_mode_sends_one_issue_per_post_oldest_first(client, db, ws, blog):
    parts = await ready_workspace(client, db, ws)
    blog.add("Archive")
    feed = await make_feed(
        client,
        ws,
        blog.url,
        parts,
        schedule={"mode": "each_item", "check_every_minutes": 5},
        max_items=2,
    )
    h = ws.headers
    await ok(await client.post(f"{API}/{feed['id']}/activate", headers=h))
    for title in ("First", "Second", "Third"):
        blog.add(title)
    sent = await ok(await client.post(f"{API}/{feed['id']}/run", headers=h), 202)
    assert len(sent["campaign_ids"]) == 2 and sent["campaign_id"] == sent["campaign_ids"][0]
    async with db.session() as session:
        subjects = [
            (await session.get(Campaign, campaign_id)).subject
            for campaign_id in sent["campaign_ids"]
        ]
        variables = [
            (await session.get(Campaign, campaign_id)).variables["items"][0]["title"]
            for campaign_id in sent["campaign_ids"]
        ]
    assert subjects == ["{{ items[0].title }}"] * 2
    # The newest two, oldest first; "First" was beyond max_items: skipped, never carried over.
    assert variables == ["Second", "Third"]
    assert (await ok(await client.post(f"{API}/{feed['id']}/run", headers=h)))[
        "reason"
    ] == "no new items"


async def test_the_worker_runs_a_due_digest_when_enough_items_came(
    client, db, ws, blog, feed_settings
):
    parts = await ready_workspace(client, db, ws)
    feed = await make_feed(client, ws, blog.url, parts, min_items=2, max_items=3)
    h = ws.headers
    await ok(await client.post(f"{API}/{feed['id']}/activate", headers=h))
    assert await worker_tick(db, feed_settings) == 0  # not due yet

    blog.add("One")
    await due_now(db, feed["id"])
    assert await worker_tick(db, feed_settings) == 1
    stored = (await ok(await client.get(f"{API}/{feed['id']}", headers=h)))["rss_feed"]
    assert stored["last_checked_at"] is not None and stored["last_issue_at"] is None
    assert stored["next_run_at"] > stored["last_checked_at"]  # the next regular digest

    for title in ("Two", "Three", "Four"):
        blog.add(title)
    await due_now(db, feed["id"])
    requests = len(blog.requests)
    assert await worker_tick(db, feed_settings) == 1
    assert len(blog.requests) == requests + 1
    issues = (await ok(await client.get(f"{API}/{feed['id']}/issues", headers=h)))["campaigns"]
    assert len(issues) == 1
    async with db.session() as session:
        campaign = await session.get(Campaign, issues[0]["id"])
        titles = [item["title"] for item in campaign.variables["items"]]
    assert titles == ["Four", "Three", "Two"]  # "One" was beyond max_items
    # Unchanged since: the conditional GET is a 304 and nothing goes out.
    await due_now(db, feed["id"])
    assert await worker_tick(db, feed_settings) == 1
    assert blog.requests[-1].get("If-None-Match") == blog.etag()
    assert (
        len((await ok(await client.get(f"{API}/{feed['id']}/issues", headers=h)))["campaigns"]) == 1
    )


async def test_failed_fetches_are_shown_and_three_days_of_them_pause_the_feed(
    client, db, ws, blog, feed_settings
):
    parts = await ready_workspace(client, db, ws)
    feed = await make_feed(client, ws, blog.url, parts)
    h = ws.headers
    await ok(await client.post(f"{API}/{feed['id']}/activate", headers=h))
    blog.status = 500
    await due_now(db, feed["id"])
    assert await worker_tick(db, feed_settings) == 1
    stored = (await ok(await client.get(f"{API}/{feed['id']}", headers=h)))["rss_feed"]
    assert stored["status"] == "active"
    assert stored["last_error"] == "Feed could not be read: HTTP 500"
    assert stored["last_error_at"] is not None

    from datetime import timedelta

    from sqlalchemy import update

    from mailroom.core.clock import utcnow

    async with db.transaction() as session:
        await session.execute(
            update(RssFeed)
            .where(RssFeed.id == feed["id"])
            .values(failing_since=utcnow() - timedelta(days=3), next_run_at=utcnow())
        )
    assert await worker_tick(db, feed_settings) == 1
    stored = (await ok(await client.get(f"{API}/{feed['id']}", headers=h)))["rss_feed"]
    assert stored["status"] == "paused" and stored["next_run_at"] is None
    assert stored["last_error"] == ("Paused after 3 days of failed fetches. Last error: HTTP 500")
    async with db.session() as session:
        entry = await session.scalar(
            select(AuditEntry).where(AuditEntry.operation == "rss_feed_paused")
        )
    assert entry is not None and entry.target_id == feed["id"]
    # Resuming is activating again (the feed reads again).
    blog.status = 200
    resumed = await ok(await client.post(f"{API}/{feed['id']}/activate", headers=h))
    assert resumed["rss_feed"]["status"] == "active" and resumed["rss_feed"]["last_error"] is None


async def test_an_atom_blog_end_to_end_with_every_item_variable(
    client,
    db,
    ws,
    blog,
    sink,  # noqa: F811
    driver,  # noqa: F811
):
    blog.kind = "atom"
    blog.add("Before")
    parts = await ready_workspace(client, db, ws, readers=1)
    template = await ok(
        await client.post(
            "/api/v1/templates",
            json={
                "name": "All fields",
                "html_content": "{% for i in items %}<p>[{{ i.title }}|{{ i.link }}|"
                "{{ i.author }}|{{ i.published_at }}|{{ i.summary }}|{{ i.image }}]</p>"
                "{{ i.content }}{% endfor %}<p>{{ feed.title }} {{ feed.link }}</p>",
                "text_content": "{{ items[0].title }}: {{ items[0].link }}",
            },
            headers=ws.headers,
        ),
        201,
    )
    feed = await make_feed(
        client,
        ws,
        blog.url,
        {**parts, "template_id": template["template"]["id"]},
        subject="{{ feed.title }}: {{ items[0].title }}",
    )
    h = ws.headers
    await ok(await client.post(f"{API}/{feed['id']}/activate", headers=h))
    blog.add(
        "Tips & tricks",
        '<p>Read <b>this</b> <img src="/img/cover.png" alt="c"><iframe src="https://x"></iframe></p>',
    )
    await ok(await client.post(f"{API}/{feed['id']}/run", headers=h), 202)
    await driver.drain()
    [received] = sink.received
    mail = received.parsed()
    assert mail["Subject"] == "The Example Blog: Tips & tricks"
    html = mail.get_body(("html",)).get_content()
    assert "[Tips &amp; tricks|" in html
    assert "|Ada|2026-11-01T10:00:00+00:00|Read this|" in html
    assert "https://blog.example.com/img/cover.png]" in html  # the first image, made absolute
    assert 'src="https://blog.example.com/img/cover.png"' in html
    assert "<iframe" not in html and "<b>this</b>" in html
    assert "The Example Blog https://blog.example.com/" in html
    text = mail.get_body(("plain",)).get_content()
    assert "Tips & tricks: " in text


async def test_a_deleted_template_is_said_and_loses_no_post(client, db, ws, blog, feed_settings):
    parts = await ready_workspace(client, db, ws)
    feed = await make_feed(client, ws, blog.url, parts)
    h = ws.headers
    await ok(await client.post(f"{API}/{feed['id']}/activate", headers=h))
    blog.add("Waiting post")
    await ok(await client.delete(f"/api/v1/templates/{parts['template_id']}", headers=h))
    gone = "The feed's template was deleted: choose another template_id"
    refused = await client.post(f"{API}/{feed['id']}/run", headers=h)
    assert (refused.status_code, refused.json()) == (422, {"error": gone})
    await due_now(db, feed["id"])
    assert await worker_tick(db, feed_settings) == 1
    stored = (await ok(await client.get(f"{API}/{feed['id']}", headers=h)))["rss_feed"]
    assert stored["last_error"] == gone
    # Another template chosen: the post still goes out, once.
    made = await client.post(
        "/api/v1/templates",
        json={"name": "New", "html_content": "<p>{{ items[0].title }}</p>"},
        headers=h,
    )
    template_id = (await ok(made, 201))["template"]["id"]
    await ok(
        await client.patch(f"{API}/{feed['id']}", json={"template_id": template_id}, headers=h)
    )
    await due_now(db, feed["id"])
    assert await worker_tick(db, feed_settings) == 1
    issues = (await ok(await client.get(f"{API}/{feed['id']}/issues", headers=h)))["campaigns"]
    assert len(issues) == 1
    async with db.session() as session:
        campaign = await session.get(Campaign, issues[0]["id"])
    assert [item["title"] for item in campaign.variables["items"]] == ["Waiting post"]
