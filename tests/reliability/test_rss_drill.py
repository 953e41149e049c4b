"""The RSS drill: a `mailroom worker` process is killed with SIGKILL while it fetches a due
feed (the blog holds its answer), between the fetch and the issue. No issue exists then; the
feed's hold runs out, two workers start at once, and exactly one issue goes out, to each
reader once: not zero, not two."""

from __future__ import annotations

import asyncio
import signal
import time

from sqlalchemy import func, select, update

from mailroom.core.clock import utcnow
from mailroom.models import Campaign, RssFeed, SendLog
from tests.reliability.campaign_run import start_worker, stop_worker
from tests.rss.feed_server import Blog
from tests.rss.helpers import API, due_now, make_feed, ready_workspace
from tests.sending.helpers import ok

READERS = 3


async def _issues(db, feed_id: str) -> list[str]:
    async with db.session(write=False) as session:
        return list(
            await session.scalars(select(Campaign.id).where(Campaign.rss_feed_id == feed_id))
        )


async def test_a_worker_killed_mid_fetch_leaves_one_issue_not_zero_not_two(
    client, db, ws, settings, cli_env
):
    settings.webhook_allow_networks = ["127.0.0.0/8"]
    env = {**cli_env, "MAILROOM_WEBHOOK_ALLOW_NETWORKS": "127.0.0.0/8"}
    async with Blog() as blog:
        blog.add("Archive post")
        parts = await ready_workspace(client, db, ws, readers=READERS)
        feed = await make_feed(client, ws, blog.url, parts)
        await ok(await client.post(f"{API}/{feed['id']}/activate", headers=ws.headers))
        blog.add("The new post")
        blog.stall = asyncio.Event()
        asked = len(blog.requests)
        await due_now(db, feed["id"])

        doomed = start_worker(env, "")
        try:
            deadline = time.monotonic() + 60
            while len(blog.requests) == asked:  # the worker is in the fetch now
                assert time.monotonic() < deadline, "the worker never fetched the feed"
                await asyncio.sleep(0.05)
            doomed.send_signal(signal.SIGKILL)
            doomed.wait(timeout=10)
        finally:
            stop_worker(doomed)
        assert await _issues(db, feed["id"]) == []  # killed before the issue: none yet
        blog.stall.set()
        blog.stall = None
        # Its hold on the feed runs out (2 minutes; here by editing the row).
        async with db.transaction() as session:
            await session.execute(
                update(RssFeed).where(RssFeed.id == feed["id"]).values(locked_until=utcnow())
            )

        workers = [start_worker(env, "") for _ in range(2)]
        try:
            deadline = time.monotonic() + 90
            while True:
                async with db.session(write=False) as session:
                    stored = await session.get(RssFeed, feed["id"])
                    queued = await session.scalar(
                        select(func.count()).where(SendLog.workspace_id == ws.workspace_id)
                    )
                if stored.last_issue_at is not None and stored.locked_until is None and queued:
                    break
                assert time.monotonic() < deadline, "no issue after the restart"
                await asyncio.sleep(0.1)
            await asyncio.sleep(1)  # the other worker's tick, had it fetched too
        finally:
            for worker in workers:
                stop_worker(worker)
        issues = await _issues(db, feed["id"])
        assert len(issues) == 1
        async with db.session(write=False) as session:
            per_reader = (
                await session.execute(
                    select(SendLog.contact_id, func.count())
                    .where(SendLog.campaign_id == issues[0])
                    .group_by(SendLog.contact_id)
                )
            ).all()
            campaign = await session.get(Campaign, issues[0])
        assert len(per_reader) == READERS and {n for _, n in per_reader} == {1}
        assert [item["title"] for item in campaign.variables["items"]] == ["The new post"]
        await due_now(db, feed["id"])  # and a later run finds nothing new
        made = await client.post(f"{API}/{feed['id']}/run", headers=ws.headers)
        assert made.json()["reason"] == "no new items"
