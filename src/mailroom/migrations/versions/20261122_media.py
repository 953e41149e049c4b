"""media: hosted images

Revision ID: 20261122_05
Revises: 20261122_04
Create Date: 2026-11-22 03:44:56.999580
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailroom.core.dbtypes

revision: str = "20261122_05"
down_revision: str | None = "20261122_04"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "media_files",
        sa.Column("id", sa.String(length=45), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("type", sa.String(length=40), nullable=False),
        sa.Column("storage_key", sa.String(length=200), nullable=False),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_media_files_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_media_files")),
    )
    with op.batch_alter_table("media_files", schema=None) as batch_op:
        batch_op.create_index(
            "ix_media_files_workspace_created", ["workspace_id", "created_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("media_files", schema=None) as batch_op:
        batch_op.drop_index("ix_media_files_workspace_created")

    op.drop_table("media_files")
