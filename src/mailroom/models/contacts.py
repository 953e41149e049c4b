"""Contacts and what hangs off them: tags, tag memberships, custom-field definitions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, UniqueConstraint, event
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.core.ids import new_id
from mailroom.db import Base

CONTACT_STATUSES = ("subscribed", "unsubscribed", "bounced", "complained", "archived")


class Contact(Base):
    __tablename__ = "contacts"
    __table_args__ = (
        UniqueConstraint("workspace_id", "email"),
        Index("ix_contacts_workspace_created", "workspace_id", "created_at", "id"),
        # SQLite only: on PostgreSQL no index names `status`, so status changes are HOT
        # updates (see the migration 20261122_hot_status_updates).
        Index(
            "ix_contacts_workspace_status_created", "workspace_id", "status", "created_at"
        ).ddl_if(dialect="sqlite"),
        Index("ix_contacts_workspace_email_hash", "workspace_id", "email_hash"),
        Index("ix_contacts_workspace_source", "workspace_id", "source"),
        # Substring search (`q`). SQLite scans this narrow covering index instead of the wide
        # rows; PostgreSQL's trigram index serves LIKE '%term%' directly.
        Index("ix_contacts_search_cover", "workspace_id", "search_text", "status").ddl_if(
            dialect="sqlite"
        ),
        Index(
            "ix_contacts_search_trgm",
            "search_text",
            postgresql_using="gin",
            postgresql_ops={"search_text": "gin_trgm_ops"},
        ).ddl_if(dialect="postgresql"),
        # Room on each page for a new row version next to the old one (HOT updates).
        {"postgresql_with": {"fillfactor": 50}},
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    email: Mapped[str] = mapped_column(String(254))
    # HMAC of the address (see core.emails.email_hash): joins contacts to suppression rows.
    email_hash: Mapped[str] = mapped_column(String(64))
    first_name: Mapped[str] = mapped_column(String(100), default="")
    last_name: Mapped[str] = mapped_column(String(100), default="")
    status: Mapped[str] = mapped_column(String(20), default="subscribed")
    # The status an archived contact returns to when restored.
    previous_status: Mapped[str | None] = mapped_column(String(20), default=None)
    custom_fields: Mapped[dict[str, Any]] = mapped_column(JSONValue, default=dict)
    source: Mapped[str] = mapped_column(String(40), default="api")
    language: Mapped[str | None] = mapped_column(String(8), default=None)
    # Casefolded "email first last": what `q` searches, one column for one index.
    search_text: Mapped[str] = mapped_column(Text, default="")
    subscribed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    unsubscribed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


SEARCH_SEPARATOR = "\n"  # never in a search term (control characters are dropped from `q`)


def search_text(email: str, first_name: str | None, last_name: str | None) -> str:
    """What `q` matches: each field casefolded, joined by a separator no term can contain, so a
    term matches inside one field and never across two (`io jane` is not in `x@a.io`+`Jane`)."""
    return SEARCH_SEPARATOR.join((email, first_name or "", last_name or "")).casefold()


@event.listens_for(Contact, "before_insert")
@event.listens_for(Contact, "before_update")
def _refresh_search_text(_mapper: Any, _connection: Any, contact: Contact) -> None:
    contact.search_text = search_text(contact.email, contact.first_name, contact.last_name)


class ContactCounts(Base):
    """Contacts per status per workspace, kept by database triggers on `contacts` (see the
    migration): list totals and the contact cap read one row instead of counting rows."""

    __tablename__ = "contact_counts"

    workspace_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    subscribed: Mapped[int] = mapped_column(BigInteger, default=0)
    unsubscribed: Mapped[int] = mapped_column(BigInteger, default=0)
    bounced: Mapped[int] = mapped_column(BigInteger, default=0)
    complained: Mapped[int] = mapped_column(BigInteger, default=0)
    archived: Mapped[int] = mapped_column(BigInteger, default=0)


class Tag(Base):
    __tablename__ = "tags"
    __table_args__ = (UniqueConstraint("workspace_id", "name_key"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(60))
    # Lowercased name: tags are unique per workspace regardless of case.
    name_key: Mapped[str] = mapped_column(Text)  # casefolded name: may grow past 60
    color: Mapped[str] = mapped_column(String(7))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ContactTag(Base):
    __tablename__ = "contact_tags"
    __table_args__ = (Index("ix_contact_tags_tag_contact", "tag_id", "contact_id"),)

    contact_id: Mapped[str] = mapped_column(
        ForeignKey("contacts.id", ondelete="CASCADE"), primary_key=True
    )
    tag_id: Mapped[str] = mapped_column(ForeignKey("tags.id", ondelete="CASCADE"), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class CustomFieldDefinition(Base):
    __tablename__ = "custom_fields"
    __table_args__ = (UniqueConstraint("workspace_id", "key"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(64))
    label: Mapped[str] = mapped_column(String(80))
    type: Mapped[str] = mapped_column(String(10), default="text")
    options: Mapped[list[str] | None] = mapped_column(JSONValue, default=None)
    position: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
