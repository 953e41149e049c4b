"""tracking_hits: opens and clicks of sent messages

Revision ID: 20261125_01
Revises: 20261123_05
Create Date: 2026-11-25 16:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailroom.core.dbtypes

revision: str = "20261125_01"
down_revision: str | None = "20261123_05"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "tracking_hits",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("send_log_id", sa.String(length=36), nullable=False),
        sa.Column("campaign_id", sa.String(length=36), nullable=True),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("link_index", sa.Integer(), nullable=True),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("user_agent", sa.String(length=300), nullable=False),
        sa.Column("automated", sa.Boolean(), nullable=False),
        sa.Column("hour", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["send_log_id"],
            ["send_log.id"],
            name=op.f("fk_tracking_hits_send_log_id_send_log"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_tracking_hits_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tracking_hits")),
    )
    op.create_index(
        "ix_tracking_hits_campaign_kind_hour",
        "tracking_hits",
        ["campaign_id", "kind", "hour"],
        unique=False,
    )
    op.create_index("ix_tracking_hits_send_log", "tracking_hits", ["send_log_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_tracking_hits_send_log", table_name="tracking_hits")
    op.drop_index("ix_tracking_hits_campaign_kind_hour", table_name="tracking_hits")
    op.drop_table("tracking_hits")
