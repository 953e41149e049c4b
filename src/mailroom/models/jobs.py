from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.core.ids import new_id
from mailroom.core.logs import current_request_id
from mailroom.db import Base, DueWork


class Job(DueWork, Base):
    """A one-off piece of background work with no domain row of its own to drive it.

    Domains with their own rows (webhook deliveries, campaign recipients) carry `DueWork`
    columns themselves; this table is for the rest. Handlers are registered by `kind`.
    """

    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_due", "status", "run_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    kind: Mapped[str] = mapped_column(String(60))
    workspace_id: Mapped[str | None] = mapped_column(String(36), default=None, index=True)
    payload: Mapped[dict[str, Any]] = mapped_column(JSONValue, default=dict)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # The request that queued it (`X-Request-ID`): on the worker's log lines about it.
    request_id: Mapped[str | None] = mapped_column(String(128), default=current_request_id)
