from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import UTCDateTime
from mailroom.core.ids import new_id
from mailroom.db import Base


class AuditEntry(Base):
    """One authenticated write: who (key, person or assistant), what (operation, target), outcome (status).

    No foreign keys: the trail must outlive the keys and rows it names.
    """

    __tablename__ = "audit_log"
    __table_args__ = (
        Index("ix_audit_log_workspace_created", "workspace_id", "created_at", "id"),
        Index("ix_audit_log_created_at", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(String(36))
    key_id: Mapped[str | None] = mapped_column(String(36), default=None)
    person_id: Mapped[str | None] = mapped_column(String(36), default=None)
    # An assistant's call: `person_id` is the person who connected it (on whose behalf).
    assistant_id: Mapped[str | None] = mapped_column(String(36), default=None)
    operation: Mapped[str] = mapped_column(String(100))
    method: Mapped[str] = mapped_column(String(10))
    path: Mapped[str] = mapped_column(String(500))
    target_id: Mapped[str | None] = mapped_column(String(200), default=None)
    status: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
