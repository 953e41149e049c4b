"""Worker processes that are alive (or were, until their heartbeat stopped)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.db import Base


class WorkerProcess(Base):
    """One running worker host (`mailroom worker`, or the loops inside `mailroom serve`).

    Not tenant data: no workspace. The host refreshes `heartbeat_at` every few seconds and
    deletes its row when it stops cleanly; a row whose heartbeat is stale belongs to a dead
    process, and `db.claim_due` hands that process's claimed rows to others at once instead of
    waiting for their lease.
    """

    __tablename__ = "workers"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # the rows' `locked_by`
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # "worker" claims and locks due rows; "server" (`serve --no-worker`) only shows that it
    # is running (a restore refuses while anything is) and never holds rows.
    role: Mapped[str] = mapped_column(String(16), default="worker", server_default="worker")
    # With several SMTP relays: each relay's state as this worker sees it (sending.relays).
    relays: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONValue, default=None)
