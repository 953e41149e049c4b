"""RSS-to-email: a workspace's feeds, and which items of each were already sent (or skipped).

An issue of a feed is an ordinary campaign naming the feed (`campaigns.rss_feed_id`) whose
`variables` carry the feed and its items for the template.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.core.ids import new_id
from mailroom.db import Base

FEED_STATUSES = ("draft", "active", "paused")


class RssFeed(Base):
    __tablename__ = "rss_feeds"
    __table_args__ = (
        UniqueConstraint("workspace_id", "name_key"),
        # What the worker reads: active feeds whose next run has come.
        Index("ix_rss_feeds_status_next_run", "status", "next_run_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    name_key: Mapped[str] = mapped_column(Text)  # casefolded name (see mailroom.named)
    url: Mapped[str] = mapped_column(Text)
    # No foreign key: a deleted template leaves the feed, whose next issue then fails (and
    # says so in last_error) until another template is chosen.
    template_id: Mapped[str] = mapped_column(String(36))
    subject: Mapped[str] = mapped_column(String(200))  # a template string
    # {list_ids, segment_ids, tag_ids, exclude_list_ids, exclude_segment_ids, exclude_tag_ids}
    audience: Mapped[dict[str, Any]] = mapped_column(JSONValue, default=dict)
    from_name: Mapped[str] = mapped_column(String(100), default="")
    from_email: Mapped[str] = mapped_column(String(254), default="")
    reply_to: Mapped[str] = mapped_column(String(254), default="")
    # {mode: digest, frequency, time, weekday?, day_of_month?, timezone} or
    # {mode: each_item, check_every_minutes}
    schedule: Mapped[dict[str, Any]] = mapped_column(JSONValue, default=dict)
    min_items: Mapped[int] = mapped_column(Integer, default=1)
    max_items: Mapped[int] = mapped_column(Integer, default=10)
    status: Mapped[str] = mapped_column(String(10), default="draft")
    # Conditional GET: what the feed's server answered last time.
    etag: Mapped[str | None] = mapped_column(Text, default=None)
    last_modified: Mapped[str | None] = mapped_column(Text, default=None)
    next_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # A worker holds the feed while it fetches (no transaction open meanwhile).
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    last_checked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    last_error_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # The first failed fetch since the last good one: 3 days of failures pause the feed.
    failing_since: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    last_issue_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class RssSeenItem(Base):
    """An item of a feed that is no longer new: sent in an issue, skipped as older than the
    issue's `max_items`, or there when the feed was activated. Keyed by the SHA-256 of its
    guid (else its link)."""

    __tablename__ = "rss_seen_items"

    feed_id: Mapped[str] = mapped_column(
        ForeignKey("rss_feeds.id", ondelete="CASCADE"), primary_key=True
    )
    guid_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    campaign_id: Mapped[str | None] = mapped_column(String(36), default=None)
