from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import UTCDateTime
from mailroom.core.ids import new_id
from mailroom.db import Base

# Strongest first; a row is never downgraded to a weaker reason.
REASON_STRENGTH = {"complained": 4, "bounced": 3, "unsubscribed": 2, "deleted": 1}


class Suppression(Base):
    """An address that must not be mailed, kept as a keyed hash (plus masked form and domain,
    except after an erasure)."""

    __tablename__ = "suppressions"
    __table_args__ = (
        UniqueConstraint("workspace_id", "email_hash"),
        Index("ix_suppressions_workspace_created", "workspace_id", "created_at", "id"),
        Index("ix_suppressions_workspace_reason", "workspace_id", "reason", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    email_hash: Mapped[str] = mapped_column(String(64))
    reason: Mapped[str] = mapped_column(String(20))
    source: Mapped[str] = mapped_column(String(40), default="api")
    email_masked: Mapped[str | None] = mapped_column(String(254), default=None)
    email_domain: Mapped[str | None] = mapped_column(String(253), default=None)
    # Written by an erasure: hash only, and never liftable.
    erased: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
