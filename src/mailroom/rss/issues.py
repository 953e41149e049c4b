"""A feed's issues: fetched, checked (what the next issue would hold), activated (the current
items marked seen: activating never mails the archive), run now, and run by the worker when
due.

Network I/O and parsing happen with no transaction open. Then one transaction, with the feed's
row locked, picks the items no issue has had (by the SHA-256 of their guid, else link), marks
them seen, creates the issue's campaign(s) and starts them: a crash before its commit leaves
the items new (the next run makes the issue), after it the issue exists once. A worker holds
a due feed by `locked_until` while it fetches, so two workers never fetch it at once; the
row lock settles any overlap.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import or_, select, update

from mailroom.campaigns import actions as campaign_actions
from mailroom.campaigns.service import CAMPAIGNS, clear_approval, held, hold
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.db import insert_ignoring_conflicts
from mailroom.models import AuditEntry, Campaign, RssFeed, RssSeenItem
from mailroom.rss import fetch as fetching
from mailroom.rss import parse as parsing
from mailroom.rss import schedule as schedules
from mailroom.rss.service import FEEDS, locked
from mailroom.templates import service as templates
from mailroom.templates.render import issue_variables
from mailroom.webhooks.service import allowed_networks

log = logging.getLogger(__name__)

NO_NEW_ITEMS = "no new items"
NOT_ACTIVE = "Feed is not active"
TEMPLATE_GONE = "The feed's template was deleted: choose another template_id"
PAUSE_AFTER = timedelta(days=3)
HOLD = timedelta(minutes=2)  # how long a worker holds a due feed while it fetches


def unreadable(reason: str) -> ApiError:
    return ApiError(422, f"Feed could not be read: {reason}")


async def template_of(ctx: Context, feed: RssFeed) -> Any:
    """The feed's template, or 422 when it was deleted since (the feed keeps its id)."""
    try:
        return await templates.get_template(ctx, feed.template_id)
    except ApiError as problem:
        if problem.status == 404:
            raise ApiError(422, TEMPLATE_GONE) from None
        raise


def guid_hash(guid: str) -> str:
    return hashlib.sha256(guid.encode("utf-8")).hexdigest()


def item_dict(item: parsing.FeedItem) -> dict[str, Any]:
    """An item as the API answers it and a template sees it."""
    return {
        "guid": item.guid,
        "title": item.title,
        "link": item.link,
        "published_at": item.published_at.isoformat() if item.published_at else None,
        "summary": item.summary,
        "content": item.content,
        "author": item.author,
        "image": item.image,
    }


@dataclass
class Read:
    """One fetch: `parsed` is None when the server said 304 (unchanged)."""

    fetched: fetching.Fetched
    parsed: parsing.ParsedFeed | None


async def read(ctx: Context, feed: RssFeed, *, conditional: bool) -> Read:
    """Fetch and parse the feed (FeedUnreadable on failure). No transaction may be open."""
    fetched = await fetching.fetch(
        feed.url,
        allowed=allowed_networks(ctx),
        etag=feed.etag if conditional else None,
        last_modified=feed.last_modified if conditional else None,
        resolve=_resolver(),
    )
    if fetched.status == 304 or fetched.body is None:
        return Read(fetched, None)
    # CPU work (a 2 MB feed takes a good part of a second): off the event loop.
    parsed = await asyncio.to_thread(parsing.parse_feed, fetched.body, fetched.url)
    return Read(fetched, parsed)


async def _release(ctx: Context, feed: RssFeed) -> RssFeed:
    """End the read transaction before the feed is fetched (no connection held while a
    server answers); the feed read stays usable, detached."""
    ctx.session.expunge(feed)
    await ctx.session.rollback()
    return feed


def _resolver() -> Any:
    from mailroom.webhooks import client  # read at each call: tests replace it

    return client.resolve_host


async def _seen(ctx: Context, feed_id: str, hashes: list[str]) -> set[str]:
    if not hashes:
        return set()
    rows = await ctx.session.scalars(
        select(RssSeenItem.guid_hash).where(
            RssSeenItem.feed_id == feed_id, RssSeenItem.guid_hash.in_(hashes)
        )
    )
    return set(rows.all())


async def _new_items(ctx: Context, feed: RssFeed, parsed: parsing.ParsedFeed) -> list[Any]:
    """The feed's items no issue had, newest first, once each."""
    unique: dict[str, parsing.FeedItem] = {}
    for item in parsed.items:
        unique.setdefault(guid_hash(item.guid), item)
    seen = await _seen(ctx, feed.id, list(unique))
    return [item for digest, item in unique.items() if digest not in seen]


def _issues_of(feed: RssFeed, new: list[Any]) -> list[list[Any]]:
    """The items of each issue to make from the new items (newest first): a digest is one
    issue of the newest `max_items`; each-item mode one issue per item, oldest first."""
    chosen = new[: feed.max_items]
    if feed.schedule.get("mode") == "each_item":
        return [[item] for item in reversed(chosen)]
    return [chosen] if chosen else []


def _variables(feed: RssFeed, parsed: parsing.ParsedFeed, items: list[Any]) -> dict[str, Any]:
    return {
        "feed": {"title": parsed.title or feed.name, "link": parsed.link},
        "items": [item_dict(item) for item in items],
    }


# ---------------------------------------------------------------- check


async def check(ctx: Context, feed_id: str) -> dict[str, Any]:
    """What the next issue would hold, fetched now; nothing is sent, marked or changed. A
    feed never activated treats its current items as new."""
    feed = await _release(ctx, await FEEDS.get(ctx, feed_id))
    try:
        got = await read(ctx, feed, conditional=False)
    except fetching.FeedUnreadable as problem:
        raise unreadable(str(problem)) from None
    parsed = got.parsed
    assert parsed is not None  # an unconditional GET is never answered 304
    new = await _new_items(ctx, feed, parsed)
    planned = _issues_of(feed, new)
    items = planned[0] if planned else []
    template = await template_of(ctx, feed)
    variables = _variables(feed, parsed, items)
    parts = (feed.subject, template.preheader, template.html_content, template.text_content)
    try:
        rendered = await templates.preview_parts(
            ctx, parts, None, None, variables=issue_variables(variables)
        )
        subject, html = rendered.subject, rendered.html
    except ApiError:
        if items:
            raise
        subject, html = "", ""  # a template that needs items renders nothing without them
    return {"items": [_listed(item) for item in items], "subject": subject, "html": html}


def _listed(item: Any) -> dict[str, Any]:
    found = item_dict(item)
    return {k: found[k] for k in ("guid", "title", "link", "published_at", "summary")}


# ---------------------------------------------------------------- activate, pause


async def activate(ctx: Context, feed_id: str) -> RssFeed:
    """Active from now: the items the feed holds now are marked seen (never mailed), and the
    next run is scheduled. Resuming a paused feed is the same."""
    feed = await FEEDS.get(ctx, feed_id)
    await template_of(ctx, feed)
    feed = await _release(ctx, feed)
    try:
        got = await read(ctx, feed, conditional=False)
    except fetching.FeedUnreadable as problem:
        raise unreadable(str(problem)) from None
    feed = await locked(ctx, feed_id)
    now = utcnow()
    assert got.parsed is not None
    await _mark_seen(ctx, feed, [guid_hash(item.guid) for item in got.parsed.items], None, now)
    feed.status = "active"
    feed.etag, feed.last_modified = got.fetched.etag, got.fetched.last_modified
    feed.last_checked_at = now
    feed.last_error = feed.last_error_at = feed.failing_since = None
    feed.next_run_at = schedules.next_run(feed.schedule, now)
    feed.locked_until = None
    FEEDS.touch(feed)
    return feed


async def pause(ctx: Context, feed_id: str) -> RssFeed:
    feed = await locked(ctx, feed_id)
    if feed.status == "active":
        feed.status = "paused"
        feed.next_run_at = None
        FEEDS.touch(feed)
    return feed


async def _mark_seen(
    ctx: Context, feed: RssFeed, hashes: list[str], campaign_id: str | None, now: datetime
) -> None:
    rows = [
        {"feed_id": feed.id, "guid_hash": digest, "seen_at": now, "campaign_id": campaign_id}
        for digest in dict.fromkeys(hashes)
    ]
    if rows:
        table = RssSeenItem.__table__
        await ctx.session.execute(insert_ignoring_conflicts(ctx.session, table), rows)


# ---------------------------------------------------------------- issues


async def run(ctx: Context, feed_id: str) -> list[str]:
    """Send an issue now if the feed has new items (any number: `min_items` is for the
    schedule). Returns the campaigns made, none when nothing is new."""
    feed = await FEEDS.get(ctx, feed_id)
    if feed.status != "active":
        raise ApiError(409, NOT_ACTIVE)
    feed = await _release(ctx, feed)
    try:
        # Unconditional: new items a digest left waiting for `min_items` count now, though
        # the feed has not changed since.
        got = await read(ctx, feed, conditional=False)
    except fetching.FeedUnreadable as problem:
        raise unreadable(str(problem)) from None
    feed = await locked(ctx, feed_id)
    if feed.status != "active":
        raise ApiError(409, NOT_ACTIVE)
    now = utcnow()
    _fetched(feed, got, now)
    if got.parsed is None:
        return []
    return await make_issues(ctx, feed, got.parsed, now, least=1)


def _fetched(feed: RssFeed, got: Read, now: datetime) -> None:
    feed.last_checked_at = now
    feed.last_error = feed.last_error_at = feed.failing_since = None
    if got.fetched.status != 304:
        feed.etag, feed.last_modified = got.fetched.etag, got.fetched.last_modified


async def make_issues(
    ctx: Context, feed: RssFeed, parsed: parsing.ParsedFeed, now: datetime, *, least: int
) -> list[str]:
    """In the caller's transaction, the feed's row locked: the issue(s) of its new items
    (at least `least` of them), the new items marked seen. Returns the campaign ids."""
    new = await _new_items(ctx, feed, parsed)
    if len(new) < least:
        return []
    made: list[str] = []
    for items in _issues_of(feed, new):
        campaign = await _campaign(ctx, feed, parsed, items, now)
        made.append(campaign.id)
        await _mark_seen(ctx, feed, [guid_hash(i.guid) for i in items], campaign.id, now)
    # Beyond max_items: the oldest, never carried over to a later issue.
    await _mark_seen(ctx, feed, [guid_hash(i.guid) for i in new], None, now)
    feed.last_issue_at = now
    FEEDS.touch(feed)
    return made


async def _issue_name(ctx: Context, feed: RssFeed, now: datetime) -> str:
    zone = ZoneInfo(feed.schedule.get("timezone") or "UTC")
    stem = f"{feed.name[:80]} - {now.astimezone(zone).date().isoformat()}"
    name, n = stem, 1
    while await CAMPAIGNS.find_by_name(ctx, name) is not None:
        n += 1
        name = f"{stem} ({n})"
    return name


async def _campaign(
    ctx: Context, feed: RssFeed, parsed: parsing.ParsedFeed, items: list[Any], now: datetime
) -> Campaign:
    """The issue: a campaign from the feed's template and audience, started (or held for an
    admin, or left a draft with the reason when it cannot start)."""
    template = await template_of(ctx, feed)
    name = await _issue_name(ctx, feed, now)
    campaign: Campaign = await CAMPAIGNS.create(
        ctx,
        name,
        status="draft",
        subject=feed.subject,
        preheader=template.preheader,
        html_content=template.html_content,
        text_content=template.text_content,
        template_id=template.id,
        audience=dict(feed.audience or {}),
        from_email=feed.from_email,
        from_name=feed.from_name,
        reply_to=feed.reply_to,
        track_opens=True,
        track_clicks=True,
        rss_feed_id=feed.id,
        variables=_variables(feed, parsed, items),
    )
    if held(ctx.principal):
        hold(ctx, campaign, "send", None)
        return campaign
    try:
        async with ctx.session.begin_nested():
            await campaign_actions.start(ctx, campaign)
            clear_approval(campaign)
    except ApiError as refused:
        campaign.status, campaign.error = "draft", refused.message
        feed.last_error = f"Issue “{campaign.name}” could not start: {refused.message}"
        feed.last_error_at = now
    return campaign


# ---------------------------------------------------------------- the worker


async def run_due(db: Any, context_for: Any, limit: int = 10) -> int:
    """The worker's part: each active feed whose next run has come is held, fetched (no
    transaction open), then settled in one transaction. Returns the feeds run."""
    now = utcnow()
    async with db.session(write=False) as session:
        due = list(
            (
                await session.execute(
                    select(RssFeed.id, RssFeed.workspace_id)
                    .where(
                        RssFeed.status == "active",
                        RssFeed.next_run_at <= now,
                        or_(RssFeed.locked_until.is_(None), RssFeed.locked_until < now),
                    )
                    .order_by(RssFeed.next_run_at)
                    .limit(limit)
                )
            ).all()
        )
    ran = 0
    for feed_id, workspace_id in due:
        if await _run_one(db, context_for, feed_id, workspace_id):
            ran += 1
    return ran


async def _hold(db: Any, feed_id: str, now: datetime) -> RssFeed | None:
    async with db.transaction() as session:
        result: Any = await session.execute(
            update(RssFeed)
            .where(
                RssFeed.id == feed_id,
                RssFeed.status == "active",
                RssFeed.next_run_at <= now,
                or_(RssFeed.locked_until.is_(None), RssFeed.locked_until < now),
            )
            .values(locked_until=now + HOLD)
        )
        if not result.rowcount:
            return None
        feed: RssFeed | None = await session.get(RssFeed, feed_id)
        if feed is not None:
            session.expunge(feed)
        return feed


async def _run_one(db: Any, context_for: Any, feed_id: str, workspace_id: str) -> bool:
    now = utcnow()
    held_feed = await _hold(db, feed_id, now)
    if held_feed is None:
        return False
    got: Read | None = None
    failure: str | None = None
    async with db.session(write=False) as session:
        reader = await context_for(session, workspace_id)
        await session.rollback()
        try:
            got = await read(reader, held_feed, conditional=True)
        except fetching.FeedUnreadable as problem:
            failure = str(problem)
    async with db.transaction() as session:
        ctx = await context_for(session, workspace_id)
        feed = await locked(ctx, feed_id)
        feed.locked_until = None
        if feed.status != "active":
            return False
        now = utcnow()
        if got is None:
            _failed(ctx, feed, failure or "unknown error", now)
            return True
        _fetched(feed, got, now)
        if got.parsed is not None:
            try:
                await make_issues(ctx, feed, got.parsed, now, least=feed.min_items)
            except ApiError as problem:  # the template was deleted, ...
                feed.last_error, feed.last_error_at = problem.message, now
                # Nothing was marked: the next fetch reads the whole feed again.
                feed.etag = feed.last_modified = None
        feed.next_run_at = schedules.next_run(feed.schedule, now)
    return True


def _failed(ctx: Context, feed: RssFeed, reason: str, now: datetime) -> None:
    """A failed fetch: said on the feed; a digest tries again soon; after 3 days of failures
    the feed pauses itself (and the audit log says so)."""
    feed.last_error, feed.last_error_at = f"Feed could not be read: {reason}", now
    feed.failing_since = feed.failing_since or now
    regular = schedules.next_run(feed.schedule, now)
    feed.next_run_at = min(regular, now + schedules.RETRY_AFTER)
    if now - feed.failing_since >= PAUSE_AFTER:
        feed.status, feed.next_run_at = "paused", None
        feed.last_error = f"Paused after 3 days of failed fetches. Last error: {reason}"
        ctx.session.add(
            AuditEntry(
                workspace_id=feed.workspace_id,
                operation="rss_feed_paused",
                method="WORKER",
                path=f"/api/v1/rss-feeds/{feed.id}",
                target_id=feed.id,
                status=200,
                created_at=now,
            )
        )
        log.warning("rss feed %s paused after 3 days of failed fetches: %s", feed.id, reason)
    FEEDS.touch(feed)
