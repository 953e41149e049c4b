"""assistants: OAuth clients, one-use grants, authorization codes, tokens; the audit log
names the assistant of a call

Revision ID: 20261127_03
Revises: 20261127_02
Create Date: 2026-11-27 05:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mailroom.core.dbtypes import JSONValue, UTCDateTime

revision: str = "20261127_03"
down_revision: str | None = "20261127_02"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "oauth_clients",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("client_name", sa.String(200), nullable=False),
        sa.Column("registration", JSONValue, nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_table(
        "assistants",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "workspace_id",
            sa.String(36),
            sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column(
            "client_id",
            sa.String(36),
            sa.ForeignKey("oauth_clients.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.Column("permissions", JSONValue, nullable=False),
        sa.Column("requires_approval", sa.Boolean(), nullable=False),
        sa.Column("daily_recipient_budget", sa.Integer(), nullable=True),
        sa.Column(
            "connected_by_person_id",
            sa.String(36),
            sa.ForeignKey("people.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.Column(
            "connected_by_key_id",
            sa.String(36),
            sa.ForeignKey("api_keys.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("last_used_at", UTCDateTime(), nullable=True),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
    )
    op.create_index("ix_assistants_workspace_id", "assistants", ["workspace_id"])
    op.create_table(
        "assistant_grants",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "workspace_id",
            sa.String(36),
            sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("code_hash", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("permissions", JSONValue, nullable=False),
        sa.Column("requires_approval", sa.Boolean(), nullable=False),
        sa.Column("daily_recipient_budget", sa.Integer(), nullable=True),
        sa.Column(
            "created_by_person_id",
            sa.String(36),
            sa.ForeignKey("people.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.Column(
            "created_by_key_id",
            sa.String(36),
            sa.ForeignKey("api_keys.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("used_at", UTCDateTime(), nullable=True),
        sa.Column("assistant_id", sa.String(36), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_assistant_grants_code_hash", "assistant_grants", ["code_hash"], unique=True)
    op.create_index("ix_assistant_grants_workspace_id", "assistant_grants", ["workspace_id"])
    op.create_table(
        "oauth_requests",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column(
            "client_id",
            sa.String(36),
            sa.ForeignKey("oauth_clients.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("params", JSONValue, nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_table(
        "oauth_codes",
        sa.Column("code_hash", sa.String(64), primary_key=True),
        sa.Column(
            "client_id",
            sa.String(36),
            sa.ForeignKey("oauth_clients.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "workspace_id",
            sa.String(36),
            sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "person_id",
            sa.String(36),
            sa.ForeignKey("people.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("permissions", JSONValue, nullable=False),
        sa.Column("requires_approval", sa.Boolean(), nullable=False),
        sa.Column("daily_recipient_budget", sa.Integer(), nullable=True),
        sa.Column("code_challenge", sa.String(128), nullable=False),
        sa.Column("redirect_uri", sa.String(2000), nullable=False),
        sa.Column("redirect_uri_explicit", sa.Boolean(), nullable=False),
        sa.Column("resource", sa.String(2000), nullable=True),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("used_at", UTCDateTime(), nullable=True),
        sa.Column("assistant_id", sa.String(36), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_table(
        "assistant_tokens",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column(
            "assistant_id",
            sa.String(36),
            sa.ForeignKey("assistants.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("used_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_assistant_tokens_assistant_id", "assistant_tokens", ["assistant_id"])
    op.create_index("ix_assistant_tokens_expires_at", "assistant_tokens", ["expires_at"])
    with op.batch_alter_table("audit_log") as batch:
        batch.add_column(sa.Column("assistant_id", sa.String(36), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("audit_log") as batch:
        batch.drop_column("assistant_id")
    op.drop_table("assistant_tokens")
    op.drop_table("oauth_codes")
    op.drop_table("oauth_requests")
    op.drop_table("assistant_grants")
    op.drop_table("assistants")
    op.drop_table("oauth_clients")
