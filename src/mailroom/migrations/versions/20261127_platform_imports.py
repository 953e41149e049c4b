"""platform imports: one row per import from another email platform (the job and its result)

Revision ID: 20261127_08
Revises: 20261127_07
Create Date: 2026-11-27 16:00:00
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from mailroom.core.dbtypes import UTCDateTime

revision: str = "20261127_08"
down_revision: str | None = "20261127_07"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "platform_imports",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("platform", sa.String(length=20), nullable=False),
        sa.Column("origin", sa.String(length=10), nullable=False),
        sa.Column("filename", sa.String(length=255), nullable=False),
        sa.Column("options", _json(), nullable=False),
        sa.Column("upload", sa.LargeBinary(), nullable=True),
        sa.Column("state", _json(), nullable=False),
        sa.Column("progress_done", sa.Integer(), nullable=False),
        sa.Column("progress_total", sa.Integer(), nullable=False),
        sa.Column("result", _json(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("run_at", UTCDateTime(), nullable=False),
        sa.Column("locked_until", UTCDateTime(), nullable=True),
        sa.Column("locked_by", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_platform_imports_due", "platform_imports", ["status", "run_at"])
    op.create_index(
        "ix_platform_imports_workspace", "platform_imports", ["workspace_id", "created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_platform_imports_workspace", table_name="platform_imports")
    op.drop_index("ix_platform_imports_due", table_name="platform_imports")
    op.drop_table("platform_imports")
