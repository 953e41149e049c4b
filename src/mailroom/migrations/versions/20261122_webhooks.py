"""webhooks: endpoints and their delivery log

Revision ID: 20261122_04
Revises: 20261122_03
Create Date: 2026-11-22 02:54:21.667888
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import mailroom.core.dbtypes

revision: str = "20261122_04"
down_revision: str | None = "20261122_03"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "webhook_endpoints",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("description", sa.String(length=500), nullable=False),
        sa.Column("channel", sa.String(length=10), nullable=False),
        sa.Column(
            "event_types",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "filters",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("secret", sa.String(length=100), nullable=False),
        sa.Column("consecutive_failures", sa.Integer(), nullable=False),
        sa.Column("last_success_at", mailroom.core.dbtypes.UTCDateTime(), nullable=True),
        sa.Column("last_failure_at", mailroom.core.dbtypes.UTCDateTime(), nullable=True),
        sa.Column("disabled_reason", sa.String(length=500), nullable=True),
        sa.Column("disabled_at", mailroom.core.dbtypes.UTCDateTime(), nullable=True),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("updated_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_webhook_endpoints_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_endpoints")),
    )
    with op.batch_alter_table("webhook_endpoints", schema=None) as batch_op:
        batch_op.create_index(
            "ix_webhook_endpoints_workspace", ["workspace_id", "created_at"], unique=False
        )

    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("endpoint_id", sa.String(length=36), nullable=False),
        sa.Column("event_id", sa.String(length=36), nullable=False),
        sa.Column("event_type", sa.String(length=50), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.String(length=500), nullable=True),
        sa.Column("delivered_at", mailroom.core.dbtypes.UTCDateTime(), nullable=True),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("updated_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("run_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("locked_until", mailroom.core.dbtypes.UTCDateTime(), nullable=True),
        sa.Column("locked_by", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(
            ["endpoint_id"],
            ["webhook_endpoints.id"],
            name=op.f("fk_webhook_deliveries_endpoint_id_webhook_endpoints"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["events.id"],
            name=op.f("fk_webhook_deliveries_event_id_events"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
    )
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.create_index("ix_webhook_deliveries_due", ["status", "run_at"], unique=False)
        batch_op.create_index(
            "ix_webhook_deliveries_endpoint", ["endpoint_id", "created_at", "id"], unique=False
        )
        batch_op.create_index("ix_webhook_deliveries_event", ["event_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_deliveries_event")
        batch_op.drop_index("ix_webhook_deliveries_endpoint")
        batch_op.drop_index("ix_webhook_deliveries_due")

    op.drop_table("webhook_deliveries")
    with op.batch_alter_table("webhook_endpoints", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_endpoints_workspace")

    op.drop_table("webhook_endpoints")
