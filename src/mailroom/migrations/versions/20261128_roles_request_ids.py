"""process roles and more request ids: servers beat too (so a restore sees them), and a
transactional send or an event carries the request that caused it into the worker's logs

Revision ID: 20261128_01
Revises: 20261127_10
Create Date: 2026-11-28 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261128_01"
down_revision: str | None = "20261127_10"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "workers",
        sa.Column("role", sa.String(length=16), nullable=False, server_default="worker"),
    )
    for table in ("send_log", "events"):
        op.add_column(table, sa.Column("request_id", sa.String(length=128), nullable=True))


def downgrade() -> None:
    for table in ("send_log", "events"):
        op.drop_column(table, "request_id")
    op.drop_column("workers", "role")
