"""The send log: one row per (message, recipient), the row every send goes through.

Campaigns freeze their audience into it with one INSERT ... SELECT; transactional sends,
automation steps and test sends add one row each. Workers claim due rows (`DueWork`), and
stats, the recipients page, segment `activity` rules, bounces, opens and clicks all hang on it.
Message-ID and the VERP return path derive from the row id.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, SmallInteger, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.core.ids import new_id
from mailroom.core.logs import current_request_id
from mailroom.db import Base, DueWork

# `pending` rows are due (claimed by workers); the rest are where a message ended up.
SEND_STATUSES = ("pending", "sent", "failed", "skipped", "bounced", "complained")
SEND_KINDS = ("campaign", "transactional", "automation", "test", "system")
# Lower goes first: a transactional message overtakes a campaign's queue.
PRIORITY_TRANSACTIONAL = 0
PRIORITY_AUTOMATION = 3
PRIORITY_CAMPAIGN = 5


class SendLog(DueWork, Base):
    __tablename__ = "send_log"
    __table_args__ = (
        # A campaign's audience holds each contact once (the snapshot relies on it).
        UniqueConstraint("campaign_id", "contact_id"),
        # Workers take the most urgent due rows first (transactional before campaigns).
        Index("ix_send_log_due", "status", "priority", "run_at"),
        Index("ix_send_log_campaign_status", "campaign_id", "status"),
        # Segment `activity` rules and anonymising a deleted contact's rows.
        Index("ix_send_log_contact_sent", "contact_id", "sent_at"),
        Index("ix_send_log_workspace_created", "workspace_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    # No foreign keys on this table's workspace and contact: checking them was half of a
    # campaign snapshot's INSERT ... SELECT (50,000 rows) on PostgreSQL, and they guarded
    # nothing the code does not: rows are written only for contacts read in the same
    # transaction, workspaces are never deleted, and a contact's rows are anonymised
    # (contact_id set to null) before the contact goes (contacts.send_history). A row whose
    # contact went meanwhile is skipped by the engine ("contact deleted").
    workspace_id: Mapped[str] = mapped_column(String(36))
    kind: Mapped[str] = mapped_column(String(16))
    campaign_id: Mapped[str | None] = mapped_column(String(36), default=None)
    # Set to null when the contact is deleted or erased (the row and its counts stay; the
    # address is replaced by its masked form or its hash).
    contact_id: Mapped[str | None] = mapped_column(String(36), default=None)
    email: Mapped[str] = mapped_column(String(254))
    priority: Mapped[int] = mapped_column(SmallInteger, default=PRIORITY_CAMPAIGN)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    # What a message without a campaign says (transactional, automation and test sends).
    payload: Mapped[dict[str, Any] | None] = mapped_column(JSONValue, default=None)
    message_id: Mapped[str | None] = mapped_column(String(255), default=None)
    smtp_response: Mapped[str | None] = mapped_column(Text, default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    first_opened_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    first_clicked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    open_count: Mapped[int] = mapped_column(Integer, default=0)
    click_count: Mapped[int] = mapped_column(Integer, default=0)
    bounced_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    complained_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # The recipient unsubscribed through this message's link (a campaign's `unsubscribed` stat).
    unsubscribed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # The A/B test variant this row sends (campaigns.ab_test); null without a test.
    variant_id: Mapped[str | None] = mapped_column(String(16), default=None)
    # The recipient's mailbox provider (sending.providers: google, microsoft, yahoo, apple, an
    # MX host or other), set when it is first tried; `deferrals` counts its "try later" answers.
    provider: Mapped[str | None] = mapped_column(String(100), default=None)
    deferrals: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # The request that queued a one-off send (transactional, test), for the worker's log lines.
    request_id: Mapped[str | None] = mapped_column(String(128), default=current_request_id)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SendMeter(Base):
    """Messages counted against an account's plan per period: `h<YYYYMMDDHH>` messages sent
    that hour (the hourly ceiling), `m<YYYYMM>` messages reserved that month (the monthly
    allowance: reserved when queued, given back when skipped or failed). One row per account
    and period, updated in the transactions that queue or send, so it is never off after a
    crash and never needs a count over the send log."""

    __tablename__ = "send_meter"

    account_id: Mapped[str] = mapped_column(
        ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True
    )
    period: Mapped[str] = mapped_column(String(11), primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=0)
