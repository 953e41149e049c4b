"""Accounts (the plan holder), their workspaces, people with a role per workspace, API keys."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.core.ids import new_id
from mailroom.db import Base


class Account(Base):
    __tablename__ = "accounts"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(200), default="")
    plan: Mapped[str] = mapped_column(String(20), default="free")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Workspace(Base):
    __tablename__ = "workspaces"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    account_id: Mapped[str] = mapped_column(
        ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Person(Base):
    """Someone who signs in to the dashboard; keys are not people. A sign-in identity, one per
    address across the installation, with a role in workspaces of any number of accounts
    (`WorkspaceMember`): no account owns a person, so none can claim an address from another."""

    __tablename__ = "people"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    password_hash: Mapped[str | None] = mapped_column(String(255), default=None)
    # Changes whenever a sign-in link is used or the password changes: a link made before
    # names an older value and no longer works (one-time links).
    link_nonce: Mapped[str] = mapped_column(String(32), default="")
    # The second factor, when set up: the TOTP secret sealed (people.totp), the last time
    # step used (a code works once), and the SHA-256 of each unused recovery code.
    totp_sealed: Mapped[str | None] = mapped_column(String(200), default=None)
    totp_last_step: Mapped[int] = mapped_column(BigInteger, default=-1)
    recovery_hashes: Mapped[list[str]] = mapped_column(JSONValue, default=list)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DashboardSession(Base):
    """A signed-in browser. The cookie holds a random token; only its SHA-256 is kept here.
    Idle sessions end (`last_seen_at`); signing out everywhere deletes a person's rows."""

    __tablename__ = "dashboard_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # sha256 of the token
    person_id: Mapped[str] = mapped_column(ForeignKey("people.id", ondelete="CASCADE"), index=True)
    workspace_id: Mapped[str | None] = mapped_column(
        ForeignKey("workspaces.id", ondelete="SET NULL"), default=None
    )
    csrf_token: Mapped[str] = mapped_column(String(64))
    # Signed in with the password, the second factor still to come: no page but its form.
    needs_second_factor: Mapped[bool] = mapped_column(Boolean, default=False)
    flash: Mapped[list[dict[str, str]]] = mapped_column(JSONValue, default=list)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class WorkspaceMember(Base):
    __tablename__ = "workspace_members"

    workspace_id: Mapped[str] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    )
    person_id: Mapped[str] = mapped_column(
        ForeignKey("people.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    role: Mapped[str] = mapped_column(String(20), default="member")  # admin | member
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # When the person first entered this workspace after signing in; until then its people
    # page says "invited" (and nothing about the person's sign-in elsewhere).
    joined_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class ApiKey(Base):
    """Only the SHA-256 of a key is kept; `lookup` (its 8 public characters) finds the row."""

    __tablename__ = "api_keys"
    __table_args__ = (Index("ix_api_keys_lookup", "lookup", unique=True),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(100), default="")
    lookup: Mapped[str] = mapped_column(String(8))
    key_hash: Mapped[str] = mapped_column(String(64))
    permissions: Mapped[list[str]] = mapped_column(JSONValue, default=list)
    created_by_person_id: Mapped[str | None] = mapped_column(
        ForeignKey("people.id", ondelete="SET NULL"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
