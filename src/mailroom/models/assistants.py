"""Assistants: AI agents connected to one workspace by OAuth or a one-use grant, never holding
a long-lived key. Only SHA-256 digests of codes, grants and tokens are kept."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.core.ids import new_id
from mailroom.db import Base

ASSISTANT_KINDS = ("oauth", "grant")
TOKEN_KINDS = ("access", "refresh")


class OAuthClient(Base):
    """A client that registered itself (RFC 7591): installation-wide, owned by no account,
    and able to do nothing until a person consents for one of their workspaces."""

    __tablename__ = "oauth_clients"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    client_name: Mapped[str] = mapped_column(String(200), default="")
    # The registration as the client sent it (redirect URIs, grant types, auth method).
    registration: Mapped[dict[str, object]] = mapped_column(JSONValue, default=dict)
    secret_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Assistant(Base):
    __tablename__ = "assistants"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200), default="")
    kind: Mapped[str] = mapped_column(String(10))  # oauth | grant
    client_id: Mapped[str | None] = mapped_column(
        ForeignKey("oauth_clients.id", ondelete="SET NULL"), default=None
    )
    permissions: Mapped[list[str]] = mapped_column(JSONValue, default=list)
    requires_approval: Mapped[bool] = mapped_column(Boolean, default=False)
    daily_recipient_budget: Mapped[int | None] = mapped_column(Integer, default=None)
    # Who connected it: a person (consent page, dashboard) or an admin key (grant by API).
    connected_by_person_id: Mapped[str | None] = mapped_column(
        ForeignKey("people.id", ondelete="SET NULL"), default=None
    )
    connected_by_key_id: Mapped[str | None] = mapped_column(
        ForeignKey("api_keys.id", ondelete="SET NULL"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # Revoked assistants stay as rows so the audit log can still name them; the API never
    # shows them again.
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class AssistantGrant(Base):
    """A one-use grant: exchanged once, without a key, for an assistant's first tokens."""

    __tablename__ = "assistant_grants"
    __table_args__ = (Index("ix_assistant_grants_code_hash", "code_hash", unique=True),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), index=True
    )
    code_hash: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(200))
    permissions: Mapped[list[str]] = mapped_column(JSONValue, default=list)
    requires_approval: Mapped[bool] = mapped_column(Boolean, default=False)
    daily_recipient_budget: Mapped[int | None] = mapped_column(Integer, default=None)
    created_by_person_id: Mapped[str | None] = mapped_column(
        ForeignKey("people.id", ondelete="SET NULL"), default=None
    )
    created_by_key_id: Mapped[str | None] = mapped_column(
        ForeignKey("api_keys.id", ondelete="SET NULL"), default=None
    )
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    assistant_id: Mapped[str | None] = mapped_column(String(36), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class OAuthRequest(Base):
    """An authorization request the SDK checked (client, redirect URI, PKCE), waiting for a
    person's consent page: the page's address names it, so nothing of it rides in the URL.
    Lives 15 minutes."""

    __tablename__ = "oauth_requests"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    client_id: Mapped[str] = mapped_column(ForeignKey("oauth_clients.id", ondelete="CASCADE"))
    # state, scopes, code_challenge, redirect_uri (+ whether sent), resource
    params: Mapped[dict[str, object]] = mapped_column(JSONValue, default=dict)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class OAuthCode(Base):
    """An authorization code a person's consent issued: what the assistant will be, until the
    client redeems it (once, within 60 s, with the PKCE verifier)."""

    __tablename__ = "oauth_codes"

    code_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    client_id: Mapped[str] = mapped_column(ForeignKey("oauth_clients.id", ondelete="CASCADE"))
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    person_id: Mapped[str] = mapped_column(ForeignKey("people.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200), default="")
    permissions: Mapped[list[str]] = mapped_column(JSONValue, default=list)
    requires_approval: Mapped[bool] = mapped_column(Boolean, default=False)
    daily_recipient_budget: Mapped[int | None] = mapped_column(Integer, default=None)
    code_challenge: Mapped[str] = mapped_column(String(128))
    redirect_uri: Mapped[str] = mapped_column(String(2000))
    redirect_uri_explicit: Mapped[bool] = mapped_column(Boolean, default=True)
    resource: Mapped[str | None] = mapped_column(String(2000), default=None)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    assistant_id: Mapped[str | None] = mapped_column(String(36), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class AssistantToken(Base):
    """An access (1 hour) or refresh (30 days, rotated on use) token of an assistant. A used
    refresh token stays (`used_at`) so presenting it again is seen as theft: the whole
    grant is revoked (RFC 6819 5.2.2.3)."""

    __tablename__ = "assistant_tokens"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    assistant_id: Mapped[str] = mapped_column(
        ForeignKey("assistants.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(10))  # access | refresh
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
