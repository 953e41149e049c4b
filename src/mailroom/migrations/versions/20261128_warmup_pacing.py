"""Warm-up per sending domain; the mailbox provider of each message and its deferrals; the
providers that blocked a workspace

Domains verified before warm-up existed have sent already (their reputation is what it is):
they are marked skipped, so an upgrade does not throttle a running installation.

Revision ID: 20261128_05
Revises: 20261128_04
Create Date: 2026-11-28 05:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261128_05"
down_revision: str | None = "20261128_04"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "sending_domains",
        sa.Column("warmup_stage", sa.Integer(), nullable=False, server_default="1"),
    )
    op.add_column(
        "sending_domains",
        sa.Column("warmup_skipped", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column("sending_domains", sa.Column("warmup_day", sa.String(length=10), nullable=True))
    op.add_column(
        "sending_domains",
        sa.Column("warmup_sent", sa.Integer(), nullable=False, server_default="0"),
    )
    op.execute("UPDATE sending_domains SET warmup_skipped = true WHERE status = 'verified'")
    op.add_column("send_log", sa.Column("provider", sa.String(length=100), nullable=True))
    op.add_column(
        "send_log", sa.Column("deferrals", sa.Integer(), nullable=False, server_default="0")
    )
    op.add_column(
        "sending_settings",
        sa.Column(
            "provider_blocks",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
    )


def downgrade() -> None:
    op.drop_column("sending_settings", "provider_blocks")
    op.drop_column("send_log", "deferrals")
    op.drop_column("send_log", "provider")
    for column in ("warmup_sent", "warmup_day", "warmup_skipped", "warmup_stage"):
        op.drop_column("sending_domains", column)
