from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.core.ids import new_id
from mailroom.core.logs import current_request_id
from mailroom.db import Base


class Event(Base):
    """The outbox: one row per event, written in the transaction of the change it reports.

    `data` is a snapshot taken then (a deleted contact can still be described). The filter
    dimensions an endpoint may scope by are columns, so matching is a query, not a JSON scan.
    `dispatched_at` is set once the event has been turned into deliveries.
    """

    __tablename__ = "events"
    __table_args__ = (
        Index("ix_events_workspace_created", "workspace_id", "created_at"),
        Index("ix_events_undispatched", "dispatched_at", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(String(50))
    data: Mapped[dict[str, Any]] = mapped_column(JSONValue)
    list_id: Mapped[str | None] = mapped_column(String(36), default=None)
    tag_id: Mapped[str | None] = mapped_column(String(36), default=None)
    form_id: Mapped[str | None] = mapped_column(String(36), default=None)
    campaign_id: Mapped[str | None] = mapped_column(String(36), default=None)
    domain_id: Mapped[str | None] = mapped_column(String(36), default=None)
    # The request that caused the event, for the webhook worker's log lines.
    request_id: Mapped[str | None] = mapped_column(String(128), default=current_request_id)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    dispatched_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
