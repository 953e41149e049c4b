"""delivery reports say whether they came through the signed return path; pending form
submissions indexed for their prune

Revision ID: 20261127_02
Revises: 20261127_01
Create Date: 2026-11-27 03:30:00

Reports stored before this count as they did (signed).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261127_02"
down_revision: str | None = "20261127_01"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("delivery_reports") as batch:
        batch.add_column(
            sa.Column("signed", sa.Boolean(), nullable=False, server_default=sa.true())
        )
    op.create_index(
        "ix_form_submissions_pending_created",
        "form_submissions",
        ["created_at"],
        postgresql_where=sa.text("status = 'pending'"),
        sqlite_where=sa.text("status = 'pending'"),
    )


def downgrade() -> None:
    op.drop_index("ix_form_submissions_pending_created", table_name="form_submissions")
    with op.batch_alter_table("delivery_reports") as batch:
        batch.drop_column("signed")
