from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.db import Base


class BulkSelection(Base):
    """The contacts one bulk operation acts on, listed once so every statement of the
    operation sees the same set (a filter re-run after an UPDATE would not). Rows live only
    inside the operation's transaction: they are deleted before it commits, so on PostgreSQL
    the table is UNLOGGED (no WAL for 50,000-row fills)."""

    __tablename__ = "bulk_selection"
    __table_args__ = (Index("ix_bulk_selection_contact", "contact_id"),)

    run_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    contact_id: Mapped[str] = mapped_column(String(36), primary_key=True)


class ImportStaging(Base):
    """Final values for contacts an import updates, loaded in bulk (COPY on PostgreSQL) and
    applied with one UPDATE ... FROM, then deleted in the same transaction (UNLOGGED on
    PostgreSQL, like bulk_selection)."""

    __tablename__ = "import_staging"

    run_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    contact_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    first_name: Mapped[str] = mapped_column(String(100))
    last_name: Mapped[str] = mapped_column(String(100))
    source: Mapped[str] = mapped_column(String(40))
    status: Mapped[str] = mapped_column(String(20))
    unsubscribed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    custom_fields: Mapped[dict[str, Any]] = mapped_column(JSONValue)
    search_text: Mapped[str] = mapped_column(Text)
