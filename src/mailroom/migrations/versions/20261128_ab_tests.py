"""A/B tests: a campaign's test (variants, rules, state) and each send row's variant

Revision ID: 20261128_02
Revises: 20261128_01
Create Date: 2026-11-28 01:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mailroom.core.dbtypes import JSONValue

revision: str = "20261128_02"
down_revision: str | None = "20261128_01"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("campaigns", sa.Column("ab_test", JSONValue, nullable=True))
    op.add_column("send_log", sa.Column("variant_id", sa.String(length=16), nullable=True))


def downgrade() -> None:
    op.drop_column("send_log", "variant_id")
    op.drop_column("campaigns", "ab_test")
