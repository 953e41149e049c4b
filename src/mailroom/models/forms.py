"""Signup forms and what people submit through them.

A form's `fields` are stored as `[{key, label, required}]`: the type and options of a custom
field are read from the registry when the form is shown, so a field's type change reaches
every form at once. A submission is kept (for counts, and as the pending state of a double
opt-in): what was sent, from which IP, and when it was confirmed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.core.ids import new_id
from mailroom.db import Base

SUBMISSION_STATES = ("pending", "confirmed")


class Form(Base):
    __tablename__ = "forms"
    __table_args__ = (
        UniqueConstraint("workspace_id", "name_key"),
        Index("ix_forms_workspace_created", "workspace_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    name_key: Mapped[str] = mapped_column(Text)  # casefolded name (see mailroom.named)
    fields: Mapped[list[dict[str, Any]]] = mapped_column(JSONValue)
    list_ids: Mapped[list[str]] = mapped_column(JSONValue)
    double_opt_in: Mapped[bool] = mapped_column(Boolean, default=False)
    success_message: Mapped[str | None] = mapped_column(Text, default=None)
    redirect_url: Mapped[str | None] = mapped_column(Text, default=None)
    consent_text: Mapped[str | None] = mapped_column(Text, default=None)
    languages: Mapped[list[str]] = mapped_column(JSONValue)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class FormSubmission(Base):
    """One accepted submission. `pending` until its confirmation email is answered (double
    opt-in, or an address that had unsubscribed or been deleted), then `confirmed`."""

    __tablename__ = "form_submissions"
    __table_args__ = (
        Index("ix_form_submissions_form_created", "form_id", "created_at"),
        Index("ix_form_submissions_contact", "contact_id"),  # a contact's timeline
        # The hourly prune of pending submissions past their 7 days (forms.upkeep).
        Index(
            "ix_form_submissions_pending_created",
            "created_at",
            postgresql_where=text("status = 'pending'"),
            sqlite_where=text("status = 'pending'"),
        ),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    form_id: Mapped[str] = mapped_column(ForeignKey("forms.id", ondelete="CASCADE"))
    contact_id: Mapped[str | None] = mapped_column(
        ForeignKey("contacts.id", ondelete="SET NULL"), default=None
    )
    email: Mapped[str] = mapped_column(String(254))
    # {"first_name"?, "last_name"?, "custom_fields"?}: applied on confirmation when pending
    answers: Mapped[dict[str, Any]] = mapped_column(JSONValue)
    language: Mapped[str] = mapped_column(String(8))
    consent_ip: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(12))
    # Whether form.submitted was emitted at submission (else it is on confirmation).
    announced: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    confirmed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
