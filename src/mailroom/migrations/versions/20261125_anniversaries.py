"""automations.anniversaries_through: the last day an anniversary automation enrolled

Revision ID: 20261125_05
Revises: 20261125_04
Create Date: 2026-11-25 21:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261125_05"
down_revision: str | None = "20261125_04"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("automations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("anniversaries_through", sa.String(length=10), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("automations", schema=None) as batch_op:
        batch_op.drop_column("anniversaries_through")
