"""Idempotency keys: a POST sent again with the same `Idempotency-Key` answers the first
response instead of doing the work twice (24 hours, per workspace)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import UTCDateTime
from mailroom.db import Base


class IdempotencyKey(Base):
    __tablename__ = "idempotency_keys"
    __table_args__ = (Index("ix_idempotency_keys_created_at", "created_at"),)

    workspace_id: Mapped[str] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    # sha256 of method, path, query and body: the same key with another request is a 409
    fingerprint: Mapped[str] = mapped_column(String(64))
    # The first answer, once known (written in the same transaction as the work is reserved)
    status_code: Mapped[int | None] = mapped_column(Integer, default=None)
    content_type: Mapped[str | None] = mapped_column(String(100), default=None)
    body: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
