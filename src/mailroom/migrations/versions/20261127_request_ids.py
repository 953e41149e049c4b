"""request ids: the request that queued a job or started a platform import, for the logs

Revision ID: 20261127_10
Revises: 20261127_09
Create Date: 2026-11-27 20:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261127_10"
down_revision: str | None = "20261127_09"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    for table in ("jobs", "platform_imports"):
        op.add_column(table, sa.Column("request_id", sa.String(length=128), nullable=True))


def downgrade() -> None:
    for table in ("jobs", "platform_imports"):
        op.drop_column(table, "request_id")
