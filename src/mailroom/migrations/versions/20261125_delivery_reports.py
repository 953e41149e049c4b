"""delivery_reports; sending_settings.resumed_at and health_warned_at

Revision ID: 20261125_02
Revises: 20261125_01
Create Date: 2026-11-25 16:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailroom.core.dbtypes

revision: str = "20261125_02"
down_revision: str | None = "20261125_01"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "delivery_reports",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("send_log_id", sa.String(length=36), nullable=False),
        sa.Column("contact_id", sa.String(length=36), nullable=True),
        sa.Column("kind", sa.String(length=12), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("diagnostic", sa.Text(), nullable=False),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["contact_id"],
            ["contacts.id"],
            name=op.f("fk_delivery_reports_contact_id_contacts"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["send_log_id"],
            ["send_log.id"],
            name=op.f("fk_delivery_reports_send_log_id_send_log"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_delivery_reports_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_delivery_reports")),
    )
    op.create_index(
        "ix_delivery_reports_contact_kind",
        "delivery_reports",
        ["contact_id", "kind", "created_at"],
        unique=False,
    )
    with op.batch_alter_table("sending_settings") as batch:
        batch.add_column(
            sa.Column("resumed_at", mailroom.core.dbtypes.UTCDateTime(), nullable=True)
        )
        batch.add_column(
            sa.Column("health_warned_at", mailroom.core.dbtypes.UTCDateTime(), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("sending_settings") as batch:
        batch.drop_column("health_warned_at")
        batch.drop_column("resumed_at")
    op.drop_index("ix_delivery_reports_contact_kind", table_name="delivery_reports")
    op.drop_table("delivery_reports")
