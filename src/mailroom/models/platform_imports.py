"""Imports from other email platforms: one row per job (`POST /api/v1/imports`).

The row is the job: the worker claims it (`DueWork`: `status` stays `pending` while it is
queued or running, `started_at` tells the two apart), reads the upload or pulls the platform's
API, then writes the contacts in chunks; each chunk's transaction also advances `done` and the
running `result`, so a restarted job resumes at the first unwritten chunk.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, deferred, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.core.ids import new_id
from mailroom.core.logs import current_request_id
from mailroom.db import Base, DueWork


class PlatformImport(DueWork, Base):
    __tablename__ = "platform_imports"
    __table_args__ = (
        Index("ix_platform_imports_due", "status", "run_at"),
        Index("ix_platform_imports_workspace", "workspace_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    platform: Mapped[str] = mapped_column(String(20))
    # "file" (the upload below) or "api" (credentials sealed in `options`).
    origin: Mapped[str] = mapped_column(String(10))
    filename: Mapped[str] = mapped_column(String(255), default="")
    # {list_id?, dry_run, check_domains, api?: {...}}; secrets sealed (see service.seal_api)
    options: Mapped[dict[str, Any]] = mapped_column(JSONValue, default=dict)
    # The export as read from the upload (at the POST) or pulled from the API (by the job's
    # first run), normalised and compressed (platform_imports/stored.py), so the job never
    # parses the file twice and a resumed job writes exactly what its first run read.
    # Cleared when the job ends.
    upload: Mapped[bytes | None] = deferred(mapped_column(LargeBinary, default=None))
    # Where a run stands: {prepared: bool, tag_ids, list_ids, ...} (see writer.py).
    state: Mapped[dict[str, Any]] = mapped_column(JSONValue, default=dict)
    progress_done: Mapped[int] = mapped_column(Integer, default=0)
    progress_total: Mapped[int] = mapped_column(Integer, default=0)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONValue, default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # The request that started it (`X-Request-ID`): on the worker's log lines about it.
    request_id: Mapped[str | None] = mapped_column(String(128), default=current_request_id)
