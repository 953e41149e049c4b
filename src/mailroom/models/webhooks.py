"""Webhook endpoints and their delivery log (the rows the delivery worker drives)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.core.ids import new_id
from mailroom.db import Base, DueWork


class WebhookEndpoint(Base):
    __tablename__ = "webhook_endpoints"
    __table_args__ = (Index("ix_webhook_endpoints_workspace", "workspace_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(Text)
    description: Mapped[str] = mapped_column(String(500), default="")
    # server (signed JSON), slack or teams (readable chat messages)
    channel: Mapped[str] = mapped_column(String(10), default="server")
    event_types: Mapped[list[str]] = mapped_column(JSONValue, default=list)
    filters: Mapped[dict[str, list[str]]] = mapped_column(JSONValue, default=dict)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    secret: Mapped[str] = mapped_column(String(100))
    consecutive_failures: Mapped[int] = mapped_column(Integer, default=0)
    last_success_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    last_failure_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    disabled_reason: Mapped[str | None] = mapped_column(String(500), default=None)
    disabled_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class WebhookDelivery(DueWork, Base):
    """One event for one endpoint: its id is the delivery id the receiver sees on every try.

    `status` pending -> delivered | failed | abandoned; `run_at` is the next attempt.
    """

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_due", "status", "run_at"),
        Index("ix_webhook_deliveries_endpoint", "endpoint_id", "created_at", "id"),
        Index("ix_webhook_deliveries_event", "event_id"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(String(36))
    endpoint_id: Mapped[str] = mapped_column(ForeignKey("webhook_endpoints.id", ondelete="CASCADE"))
    event_id: Mapped[str] = mapped_column(ForeignKey("events.id", ondelete="CASCADE"))
    event_type: Mapped[str] = mapped_column(String(50))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_status_code: Mapped[int | None] = mapped_column(Integer, default=None)
    last_error: Mapped[str | None] = mapped_column(String(500), default=None)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
