"""Sending domains: a domain a workspace sends from, its DKIM key and DNS verification state;
the DMARC aggregate reports mailbox providers sent about it."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Date,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
)
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
    # Campaign and automation links use this host (a CNAME to the installation's) once its
    # record verifies (record_status["link_host"]); None: the public URL's.
    link_host: Mapped[str | None] = mapped_column(String(253), default=None)
    # Warm-up (sending.warmup): the stage (from 1) sets the campaign mail a UTC day may carry;
    # `warmup_sent` counts what was taken on `warmup_day` (YYYY-MM-DD). Skipped: no limit.
    warmup_stage: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    warmup_skipped: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    warmup_day: Mapped[str | None] = mapped_column(String(10), default=None)
    warmup_sent: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    verified_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    last_checked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DmarcReport(Base):
    """One aggregate report (RFC 7489) about a sending domain, as a reporter sent it. Stored
    once per (domain, reporter, report id): a report sent again counts once."""

    __tablename__ = "dmarc_reports"
    __table_args__ = (UniqueConstraint("domain_id", "reporter", "report_id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    domain_id: Mapped[str] = mapped_column(ForeignKey("sending_domains.id", ondelete="CASCADE"))
    reporter: Mapped[str] = mapped_column(String(200))  # org_name: google.com, Outlook.com
    reporter_email: Mapped[str] = mapped_column(String(320), default="")
    report_id: Mapped[str] = mapped_column(String(200))
    begin_at: Mapped[datetime] = mapped_column(UTCDateTime)
    end_at: Mapped[datetime] = mapped_column(UTCDateTime)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DmarcRecord(Base):
    """A report's row: messages from one source IP with one outcome, on the report's day
    (its range's first UTC day). Pass counts are of messages, aligned as DMARC evaluates."""

    __tablename__ = "dmarc_records"
    __table_args__ = (Index("ix_dmarc_records_domain_day", "domain_id", "day"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    domain_id: Mapped[str] = mapped_column(ForeignKey("sending_domains.id", ondelete="CASCADE"))
    report_id: Mapped[str] = mapped_column(
        ForeignKey("dmarc_reports.id", ondelete="CASCADE"), index=True
    )
    day: Mapped[date] = mapped_column(Date)
    source_ip: Mapped[str] = mapped_column(String(45))
    count: Mapped[int] = mapped_column(Integer)
    spf_pass: Mapped[int] = mapped_column(Integer)
    dkim_pass: Mapped[int] = mapped_column(Integer)
    dmarc_pass: Mapped[int] = mapped_column(Integer)
    disposition: Mapped[str] = mapped_column(String(16), default="")
