from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import UTCDateTime
from mailroom.db import Base


class MediaFile(Base):
    """A hosted image. `id` is also its public name (`<random>.<ext>`), so URLs stay short and
    unguessable; the bytes live in the configured store under `storage_key`."""

    __tablename__ = "media_files"
    __table_args__ = (Index("ix_media_files_workspace_created", "workspace_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(45), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(255), default="")
    size: Mapped[int] = mapped_column(BigInteger)
    type: Mapped[str] = mapped_column(String(40))
    storage_key: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
