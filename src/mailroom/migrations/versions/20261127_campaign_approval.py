"""campaigns: an assistant's send or schedule held for a workspace admin's approval (status
awaiting_approval, which needs a wider status column), what was asked and how it was decided

Revision ID: 20261127_04
Revises: 20261127_03
Create Date: 2026-11-27 08:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mailroom.core.dbtypes import UTCDateTime

revision: str = "20261127_04"
down_revision: str | None = "20261127_03"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("campaigns") as batch:
        batch.alter_column(
            "status", existing_type=sa.String(12), type_=sa.String(20), existing_nullable=False
        )
        batch.add_column(sa.Column("approval_status", sa.String(10), nullable=True))
        batch.add_column(sa.Column("approval_action", sa.String(10), nullable=True))
        batch.add_column(sa.Column("approval_send_at", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("approval_assistant_id", sa.String(36), nullable=True))
        batch.add_column(sa.Column("approval_requested_at", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("approval_decided_at", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("approval_decided_by", sa.String(254), nullable=True))
        batch.add_column(sa.Column("approval_reason", sa.Text(), nullable=True))


def downgrade() -> None:
    # Held requests go back to draft: the older schema has no such state.
    op.execute("UPDATE campaigns SET status = 'draft' WHERE status = 'awaiting_approval'")
    with op.batch_alter_table("campaigns") as batch:
        for column in (
            "approval_reason",
            "approval_decided_by",
            "approval_decided_at",
            "approval_requested_at",
            "approval_assistant_id",
            "approval_send_at",
            "approval_action",
            "approval_status",
        ):
            batch.drop_column(column)
        batch.alter_column(
            "status", existing_type=sa.String(20), type_=sa.String(12), existing_nullable=False
        )
