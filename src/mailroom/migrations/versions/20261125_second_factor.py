"""the dashboard's second factor (TOTP, recovery codes)

Revision ID: 20261125_07
Revises: 20261125_06
Create Date: 2026-11-25 23:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailroom.core.dbtypes

revision: str = "20261125_07"
down_revision: str | None = "20261125_06"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("dashboard_sessions", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "needs_second_factor", sa.Boolean(), nullable=False, server_default=sa.false()
            )
        )

    with op.batch_alter_table("people", schema=None) as batch_op:
        batch_op.add_column(sa.Column("totp_sealed", sa.String(length=200), nullable=True))
        batch_op.add_column(
            sa.Column("totp_last_step", sa.BigInteger(), nullable=False, server_default="-1")
        )
        batch_op.add_column(
            sa.Column(
                "recovery_hashes",
                mailroom.core.dbtypes.JSONValue,
                nullable=False,
                server_default="[]",
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("people", schema=None) as batch_op:
        batch_op.drop_column("recovery_hashes")
        batch_op.drop_column("totp_last_step")
        batch_op.drop_column("totp_sealed")

    with op.batch_alter_table("dashboard_sessions", schema=None) as batch_op:
        batch_op.drop_column("needs_second_factor")
