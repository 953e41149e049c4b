"""blueprints: an account's captured workspace set-ups

Revision ID: 20261127_09
Revises: 20261127_08
Create Date: 2026-11-27 17:00:00
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from mailroom.core.dbtypes import UTCDateTime

revision: str = "20261127_09"
down_revision: str | None = "20261127_08"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "blueprints",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("document", _json(), nullable=False),
        sa.Column("source_workspace_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_blueprints_account", "blueprints", ["account_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_blueprints_account", table_name="blueprints")
    op.drop_table("blueprints")
