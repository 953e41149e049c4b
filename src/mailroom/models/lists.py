from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import UTCDateTime
from mailroom.core.ids import new_id
from mailroom.db import Base


class MailingList(Base):
    __tablename__ = "lists"
    __table_args__ = (UniqueConstraint("workspace_id", "name_key"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    name_key: Mapped[str] = mapped_column(Text)  # casefolded name: may grow past 100
    description: Mapped[str] = mapped_column(String(500), default="")
    double_opt_in: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ListMember(Base):
    """A contact on a list: `confirmed`, or `unconfirmed` until double opt-in confirmation."""

    __tablename__ = "list_members"
    __table_args__ = (
        Index("ix_list_members_contact", "contact_id"),
        Index("ix_list_members_list_created", "list_id", "created_at"),
    )

    list_id: Mapped[str] = mapped_column(
        ForeignKey("lists.id", ondelete="CASCADE"), primary_key=True
    )
    contact_id: Mapped[str] = mapped_column(
        ForeignKey("contacts.id", ondelete="CASCADE"), primary_key=True
    )
    workspace_id: Mapped[str] = mapped_column(String(36))
    status: Mapped[str] = mapped_column(String(12), default="confirmed")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    confirmed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
