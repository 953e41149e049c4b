"""Sending domains: a domain a workspace sends from, its DKIM key and DNS verification state."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.core.ids import new_id
from mailroom.db import Base

DOMAIN_STATUSES = ("pending", "verified", "failed")


class SendingDomain(Base):
    __tablename__ = "sending_domains"
    __table_args__ = (
        UniqueConstraint("workspace_id", "domain"),
        # The daily re-check walks verified domains by when they were last looked at.
        Index("ix_sending_domains_status_checked", "status", "last_checked_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    domain: Mapped[str] = mapped_column(String(253))  # lowercased, IDNA (A-labels)
    status: Mapped[str] = mapped_column(String(10), default="pending")
    dkim_selector: Mapped[str] = mapped_column(String(63))
    # RSA-2048 private key (PKCS#8 DER), encrypted with a key derived from the secret key;
    # never returned by any route.
    dkim_private_key: Mapped[str] = mapped_column(Text)
    dkim_public_key: Mapped[str] = mapped_column(Text)  # base64 SubjectPublicKeyInfo (p=)
    # purpose -> "pending" | "verified" | "failed" (and why), from the last check
    record_status: Mapped[dict[str, Any]] = mapped_column(JSONValue, default=dict)
    failure_reason: Mapped[str | None] = mapped_column(Text, default=None)
    verified_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    last_checked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
