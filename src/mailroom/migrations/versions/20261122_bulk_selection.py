"""bulk_selection and import_staging: scratch rows of bulk actions and imports

Revision ID: 20261122_03
Revises: 20261122_02
Create Date: 2026-11-22 01:39:52.822991
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import mailroom.core.dbtypes

revision: str = "20261122_03"
down_revision: str | None = "20261122_02"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "bulk_selection",
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("contact_id", sa.String(length=36), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "contact_id", name=op.f("pk_bulk_selection")),
    )
    with op.batch_alter_table("bulk_selection", schema=None) as batch_op:
        batch_op.create_index("ix_bulk_selection_contact", ["contact_id"], unique=False)
    op.create_table(
        "import_staging",
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("contact_id", sa.String(length=36), nullable=False),
        sa.Column("first_name", sa.String(length=100), nullable=False),
        sa.Column("last_name", sa.String(length=100), nullable=False),
        sa.Column("source", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("unsubscribed_at", mailroom.core.dbtypes.UTCDateTime(), nullable=True),
        sa.Column(
            "custom_fields",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("search_text", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "contact_id", name=op.f("pk_import_staging")),
    )


def downgrade() -> None:
    op.drop_table("import_staging")
    with op.batch_alter_table("bulk_selection", schema=None) as batch_op:
        batch_op.drop_index("ix_bulk_selection_contact")

    op.drop_table("bulk_selection")
