"""Opens and clicks: one row per request to a message's pixel or one of its links.

Every request is kept, including those from link scanners and prefetchers (`automated`), so a
report can say what was filtered; only people's requests count in the send log's
`open_count` / `click_count` / `first_*_at` and fire events. No address or IP is stored: a
hit names its send-log row, whose address is anonymised when the contact is deleted.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, true
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import UTCDateTime
from mailroom.core.ids import new_id
from mailroom.db import Base

HIT_KINDS = ("open", "click")


class TrackingHit(Base):
    __tablename__ = "tracking_hits"
    __table_args__ = (
        # A campaign's report: per kind, per hour, per link.
        Index("ix_tracking_hits_campaign_kind_hour", "campaign_id", "kind", "hour"),
        Index("ix_tracking_hits_send_log", "send_log_id"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    send_log_id: Mapped[str] = mapped_column(ForeignKey("send_log.id", ondelete="CASCADE"))
    campaign_id: Mapped[str | None] = mapped_column(String(36), default=None)
    kind: Mapped[str] = mapped_column(String(8))
    link_index: Mapped[int | None] = mapped_column(Integer, default=None)
    url: Mapped[str | None] = mapped_column(Text, default=None)
    user_agent: Mapped[str] = mapped_column(String(300), default="")
    automated: Mapped[bool] = mapped_column(Boolean, default=False)
    # The start of the hour it happened in (UTC): the report groups by it on both databases.
    hour: Mapped[datetime] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


REPORT_KINDS = ("hard", "soft", "delivered", "complaint")


class DeliveryReport(Base):
    """A delivery status notification or feedback report that came back for one message and
    was acted on (`hard`, `soft`, `delivered`, `complaint`). `signed`: it came back through
    the message's signed return path; one mapped by the Message-ID it quotes (anyone can write
    to the generic bounces@ address) is kept but never counted by delivery health
    (bounces.service, sending.health). Soft bounces are
    counted from these (three different messages within 15 days make a hard bounce), and they
    are what a support question about a contact's bounce is answered from."""

    __tablename__ = "delivery_reports"
    __table_args__ = (
        Index("ix_delivery_reports_contact_kind", "contact_id", "kind", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    send_log_id: Mapped[str] = mapped_column(ForeignKey("send_log.id", ondelete="CASCADE"))
    contact_id: Mapped[str | None] = mapped_column(
        ForeignKey("contacts.id", ondelete="SET NULL"), default=None
    )
    kind: Mapped[str] = mapped_column(String(12))
    signed: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    status: Mapped[str] = mapped_column(String(16), default="")  # enhanced code, e.g. 5.1.1
    diagnostic: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
