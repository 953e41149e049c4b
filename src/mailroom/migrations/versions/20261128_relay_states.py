"""Each worker's view of its SMTP relays (several relays: their state for the Sending page)

Revision ID: 20261128_06
Revises: 20261128_05
Create Date: 2026-11-28 06:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261128_06"
down_revision: str | None = "20261128_05"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "workers",
        sa.Column(
            "relays",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
    )


def downgrade() -> None:
    op.drop_column("workers", "relays")
