"""Campaigns (one message to an audience) and each workspace's sending identity and switch."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.core.ids import new_id
from mailroom.db import Base

CAMPAIGN_STATUSES = ("draft", "awaiting_approval", "scheduled", "sending", "sent", "cancelled")


class Campaign(Base):
    __tablename__ = "campaigns"
    __table_args__ = (
        UniqueConstraint("workspace_id", "name_key"),
        Index("ix_campaigns_workspace_created", "workspace_id", "created_at"),
        # The worker starts scheduled campaigns whose time has come.
        Index("ix_campaigns_status_scheduled", "status", "scheduled_at"),
        Index("ix_campaigns_rss_feed", "workspace_id", "rss_feed_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    name_key: Mapped[str] = mapped_column(Text)  # casefolded name (see mailroom.named)
    subject: Mapped[str] = mapped_column(String(200), default="")
    preheader: Mapped[str] = mapped_column(String(200), default="")
    from_name: Mapped[str] = mapped_column(String(100), default="")
    from_email: Mapped[str] = mapped_column(String(254), default="")
    reply_to: Mapped[str] = mapped_column(String(254), default="")
    html_content: Mapped[str] = mapped_column(Text, default="")
    text_content: Mapped[str] = mapped_column(Text, default="")
    # The template the content was copied from (kept for reference; no foreign key: the
    # template may be deleted, the campaign keeps its copy).
    template_id: Mapped[str | None] = mapped_column(String(36), default=None)
    # {list_ids, segment_ids, tag_ids, exclude_list_ids, exclude_segment_ids, exclude_tag_ids}
    audience: Mapped[dict[str, Any]] = mapped_column(JSONValue, default=dict)
    track_opens: Mapped[bool] = mapped_column(Boolean, default=True)
    track_clicks: Mapped[bool] = mapped_column(Boolean, default=True)
    status: Mapped[str] = mapped_column(String(20), default="draft")
    scheduled_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    recipients: Mapped[int] = mapped_column(Integer, default=0)  # frozen at the snapshot
    # An RSS feed's issue: the feed (no foreign key: its past issues outlive it) and what
    # its template sees besides the contact (`feed`, `items`).
    rss_feed_id: Mapped[str | None] = mapped_column(String(36), default=None)
    variables: Mapped[dict[str, Any] | None] = mapped_column(JSONValue, default=None)
    # An A/B test (campaigns.ab_test): its variants and rules, and once sending its state.
    ab_test: Mapped[dict[str, Any] | None] = mapped_column(JSONValue, default=None)
    # Why a scheduled campaign could not start when its time came (it went back to draft).
    error: Mapped[str | None] = mapped_column(Text, default=None)
    # An assistant's send or schedule held for a workspace admin (status awaiting_approval),
    # then how it was decided. Kept while the state it led to lasts (the draft a rejection
    # left, the campaign an approval started); cleared when a person or key sends, schedules
    # or cancels it back to draft. The assistant has no foreign key: revoked ones stay rows.
    # pending | approved | rejected
    approval_status: Mapped[str | None] = mapped_column(String(10), default=None)
    approval_action: Mapped[str | None] = mapped_column(String(10), default=None)  # send|schedule
    approval_send_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    approval_assistant_id: Mapped[str | None] = mapped_column(String(36), default=None)
    approval_requested_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    approval_decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # The deciding admin's address as it was then (the audit log names the person).
    approval_decided_by: Mapped[str | None] = mapped_column(String(254), default=None)
    approval_reason: Mapped[str | None] = mapped_column(Text, default=None)  # a rejection's
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SendingSettings(Base):
    """A workspace's sender identity (used when a send names none) and its pause switch."""

    __tablename__ = "sending_settings"

    workspace_id: Mapped[str] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    )
    from_email: Mapped[str] = mapped_column(String(254), default="")
    from_name: Mapped[str] = mapped_column(String(100), default="")
    reply_to: Mapped[str] = mapped_column(String(254), default="")
    paused: Mapped[bool] = mapped_column(Boolean, default=False)
    paused_by: Mapped[str | None] = mapped_column(
        String(12), default=None
    )  # workspace|operator|health
    pause_reason: Mapped[str | None] = mapped_column(String(20), default=None)
    pause_note: Mapped[str | None] = mapped_column(Text, default=None)
    paused_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # Delivery health counts messages sent since the last resume, and warns once a day.
    resumed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    health_warned_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # Mailbox providers that blocked this workspace's mail (a 5xx naming policy or spam):
    # provider -> {"until": ISO time, "reason": the answer}; its mail waits until then.
    provider_blocks: Mapped[dict[str, Any] | None] = mapped_column(JSONValue, default=None)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
