"""Workspace blueprints: an account's captured set-ups (platform-neutral documents that name
everything, never an id), applied to any workspace of the account."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.core.ids import new_id
from mailroom.db import Base


class Blueprint(Base):
    __tablename__ = "blueprints"
    __table_args__ = (Index("ix_blueprints_account", "account_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    description: Mapped[str] = mapped_column(Text, default="")
    # The document (`{"mailroom_blueprint": 1, "name", "parts": {...}}`), as captured or imported.
    document: Mapped[dict[str, Any]] = mapped_column(JSONValue, default=dict)
    # Where it was captured (None when imported); no foreign key: the workspace may go.
    source_workspace_id: Mapped[str | None] = mapped_column(String(36), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
