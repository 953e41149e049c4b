"""workers: a heartbeat row per running worker host

A worker killed with SIGKILL leaves its claimed rows leased for minutes. With a row per worker
refreshed every few seconds, `claim_due` treats rows locked by a worker whose heartbeat is stale
as free at once (the lease stays as the backstop).

Revision ID: 20261123_01
Revises: 20261122_07
Create Date: 2026-11-23 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailroom.core.dbtypes

revision: str = "20261123_01"
down_revision: str | None = "20261122_07"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "workers",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("heartbeat_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workers")),
    )


def downgrade() -> None:
    op.drop_table("workers")
