"""campaigns and sending: campaigns, each workspace's sender identity and pause switch, the
plan meter (monthly allowance, hourly ceiling), idempotency keys; the send log learns which
message a recipient unsubscribed from.

Revision ID: 20261123_05
Revises: 20261123_03
Create Date: 2026-11-24 01:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import mailroom.core.dbtypes

revision: str = "20261123_05"
down_revision: str | None = "20261123_03"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "send_meter",
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("period", sa.String(length=11), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_send_meter_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("account_id", "period", name=op.f("pk_send_meter")),
    )
    op.create_table(
        "campaigns",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("name_key", sa.Text(), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column("preheader", sa.String(length=200), nullable=False),
        sa.Column("from_name", sa.String(length=100), nullable=False),
        sa.Column("from_email", sa.String(length=254), nullable=False),
        sa.Column("reply_to", sa.String(length=254), nullable=False),
        sa.Column("html_content", sa.Text(), nullable=False),
        sa.Column("text_content", sa.Text(), nullable=False),
        sa.Column("template_id", sa.String(length=36), nullable=True),
        sa.Column(
            "audience",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("track_opens", sa.Boolean(), nullable=False),
        sa.Column("track_clicks", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("scheduled_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=True),
        sa.Column("started_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=True),
        sa.Column("finished_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=True),
        sa.Column("recipients", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_campaigns_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_campaigns")),
        sa.UniqueConstraint(
            "workspace_id", "name_key", name=op.f("uq_campaigns_workspace_id_name_key")
        ),
    )
    with op.batch_alter_table("campaigns", schema=None) as batch_op:
        batch_op.create_index(
            "ix_campaigns_status_scheduled", ["status", "scheduled_at"], unique=False
        )
        batch_op.create_index(
            "ix_campaigns_workspace_created", ["workspace_id", "created_at"], unique=False
        )

    op.create_table(
        "idempotency_keys",
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("content_type", sa.String(length=100), nullable=True),
        sa.Column("body", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_idempotency_keys_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("workspace_id", "key", name=op.f("pk_idempotency_keys")),
    )
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.create_index("ix_idempotency_keys_created_at", ["created_at"], unique=False)

    op.create_table(
        "sending_settings",
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("from_email", sa.String(length=254), nullable=False),
        sa.Column("from_name", sa.String(length=100), nullable=False),
        sa.Column("reply_to", sa.String(length=254), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=False),
        sa.Column("paused_by", sa.String(length=12), nullable=True),
        sa.Column("pause_reason", sa.String(length=20), nullable=True),
        sa.Column("pause_note", sa.Text(), nullable=True),
        sa.Column("paused_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=True),
        sa.Column("updated_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_sending_settings_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("workspace_id", name=op.f("pk_sending_settings")),
    )
    with op.batch_alter_table("send_log", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "unsubscribed_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=True
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("send_log", schema=None) as batch_op:
        batch_op.drop_column("unsubscribed_at")

    op.drop_table("sending_settings")
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.drop_index("ix_idempotency_keys_created_at")

    op.drop_table("idempotency_keys")
    with op.batch_alter_table("campaigns", schema=None) as batch_op:
        batch_op.drop_index("ix_campaigns_workspace_created")
        batch_op.drop_index("ix_campaigns_status_scheduled")

    op.drop_table("campaigns")
    op.drop_table("send_meter")
