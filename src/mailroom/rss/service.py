"""RSS feeds: the named feed (CRUD, paged), its settings checked as a campaign's are (audience,
sender, template), and its state as the API shows it. Fetching, checking and making issues
are in `rss.issues`.

A feed URL may be http or https; it must pass the URL guard (no credentials, no private,
loopback or link-local address unless the operator's `MAILROOM_WEBHOOK_ALLOW_NETWORKS` allows
it). The guard resolves the name, so `check_url` runs before the request's transaction opens.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from mailroom.campaigns import audience as audiences
from mailroom.campaigns.service import CAMPAIGNS, clean_sender
from mailroom.core import urlguard
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.models import Campaign, RssFeed
from mailroom.named import Named
from mailroom.rss import schedule as schedules
from mailroom.templates import service as templates
from mailroom.webhooks import client
from mailroom.webhooks.service import allowed_networks

FEEDS = Named(RssFeed, "feed", 100, newest_first=True)
MAX_URL = 2000
MAX_SUBJECT = 200
MAX_ITEMS = 50
DEFAULT_SUBJECT = "{{ items[0].title }}"
CHANGEABLE = (
    "name",
    "url",
    "template_id",
    "subject",
    "audience",
    "schedule",
    "min_items",
    "max_items",
    "from_email",
    "from_name",
    "reply_to",
)


async def check_url(ctx: Context, url: Any) -> str:
    """The feed URL, cleaned, once the guard passes it (400 naming `url`)."""
    if url is None or (isinstance(url, str) and not url.strip()):
        raise ApiError(400, "url is required")
    if not isinstance(url, str):
        raise ApiError(400, "url must be a string")
    if len(url) > MAX_URL:
        raise ApiError(400, f"url must be {MAX_URL} characters or fewer")
    try:
        await urlguard.check_url(
            url.strip(), allowed_networks(ctx), client.resolve_host, https_only=False
        )
    except urlguard.UnsafeUrl as exc:
        raise ApiError(400, f"url is not allowed: {exc}") from None
    return url.strip()


def _count(value: Any, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, f"{field} must be an integer")
    if not low <= value <= high:
        raise ApiError(400, f"{field} must be between {low} and {high}")
    return value


async def _subject(value: Any) -> str:
    if value is None:
        return DEFAULT_SUBJECT
    if not isinstance(value, str):
        raise ApiError(400, "subject must be a string")
    subject = value.strip()
    if not subject:
        raise ApiError(400, "subject is required")
    if len(subject) > MAX_SUBJECT:
        raise ApiError(400, f"subject must be {MAX_SUBJECT} characters or fewer")
    await templates.check_syntax({"subject": subject})
    return subject


async def _template_id(ctx: Context, value: Any) -> str:
    if value is None or value == "":
        raise ApiError(400, "template_id is required")
    if not isinstance(value, str):
        raise ApiError(400, "template_id must be a string")
    try:
        template = await templates.get_template(ctx, value)
    except ApiError as problem:
        if problem.status == 404:
            raise ApiError(400, "template_id: no such template in this workspace") from None
        raise
    return template.id


async def _fields(ctx: Context, body: dict[str, Any], partial: bool) -> dict[str, Any]:
    """The settings given in `body`, cleaned (all of them when creating)."""
    fields: dict[str, Any] = {}
    if not partial or "template_id" in body:
        fields["template_id"] = await _template_id(ctx, body.get("template_id"))
    if not partial or "subject" in body:
        fields["subject"] = await _subject(body.get("subject"))
    if not partial or "audience" in body:
        fields["audience"] = await audiences.check(ctx, body.get("audience"))
    if not partial or "schedule" in body:
        fields["schedule"] = schedules.clean(body.get("schedule"))
    for name, default, high in (("min_items", 1, MAX_ITEMS), ("max_items", 10, MAX_ITEMS)):
        if not partial or name in body:
            value = body.get(name)
            fields[name] = default if value is None else _count(value, name, 1, high)
    fields.update(clean_sender(body))  # null or "" clears: the workspace sender applies
    return fields


def _check_counts(min_items: int, max_items: int) -> None:
    if min_items > max_items:
        raise ApiError(400, "min_items must not be more than max_items")


async def create_feed(ctx: Context, body: dict[str, Any]) -> RssFeed:
    url = await check_url(ctx, body.get("url"))  # first: before any transaction opens
    FEEDS.clean_name(body.get("name"))
    fields = await _fields(ctx, body, partial=False)
    _check_counts(fields["min_items"], fields["max_items"])
    name = await FEEDS.claim_name(ctx, body.get("name"))
    return await FEEDS.create(ctx, name, url=url, status="draft", **fields)


async def get_feed(ctx: Context, feed_id: Any) -> RssFeed:
    return await FEEDS.get(ctx, feed_id)


async def locked(ctx: Context, feed_id: Any) -> RssFeed:
    """The workspace's feed, its row locked until the transaction ends and read afresh."""
    found: RssFeed | None = None
    if isinstance(feed_id, str) and feed_id:
        found = await ctx.session.scalar(
            select(RssFeed)
            .where(RssFeed.id == feed_id, RssFeed.workspace_id == ctx.workspace_id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
    if found is None:
        raise ApiError(404, FEEDS.not_found)
    return found


async def update_feed(ctx: Context, feed_id: str, body: dict[str, Any]) -> RssFeed:
    url = await check_url(ctx, body["url"]) if "url" in body else None
    feed = await locked(ctx, feed_id)
    if "name" in body:
        await FEEDS.rename(ctx, feed, body["name"])
    fields = await _fields(ctx, body, partial=True)
    _check_counts(fields.get("min_items", feed.min_items), fields.get("max_items", feed.max_items))
    if url is not None and url != feed.url:
        feed.url, feed.etag, feed.last_modified = url, None, None
    for name, value in fields.items():
        setattr(feed, name, value)
    if "schedule" in fields and feed.status == "active":
        feed.next_run_at = schedules.next_run(feed.schedule, utcnow())
    FEEDS.touch(feed)
    await FEEDS.flush(ctx)
    return feed


async def delete_feed(ctx: Context, feed_id: str) -> None:
    """The feed and what it saw; its issues stay (campaigns naming it)."""
    await FEEDS.delete(ctx, await get_feed(ctx, feed_id))


async def list_feeds(ctx: Context, page: PageParams, q: str | None) -> tuple[list[RssFeed], int]:
    return await FEEDS.page(ctx, page, q=q)


async def issues(ctx: Context, feed_id: str, page: PageParams) -> tuple[list[Campaign], int]:
    """The campaigns the feed made, newest first."""
    feed = await get_feed(ctx, feed_id)
    return await CAMPAIGNS.page(ctx, page, where=[Campaign.rss_feed_id == feed.id])


def as_dict(feed: RssFeed) -> dict[str, Any]:
    return {
        "id": feed.id,
        "name": feed.name,
        "url": feed.url,
        "template_id": feed.template_id,
        "subject": feed.subject,
        "audience": {**audiences.empty(), **(feed.audience or {})},
        "from_email": feed.from_email or None,
        "from_name": feed.from_name or None,
        "reply_to": feed.reply_to or None,
        "schedule": feed.schedule,
        "min_items": feed.min_items,
        "max_items": feed.max_items,
        "status": feed.status,
        "last_checked_at": feed.last_checked_at,
        "last_error": feed.last_error,
        "last_error_at": feed.last_error_at,
        "last_issue_at": feed.last_issue_at,
        "next_run_at": feed.next_run_at,
        "created_at": feed.created_at,
        "updated_at": feed.updated_at,
    }
