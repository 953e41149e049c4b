"""Branded link hosts: a sending domain's own host for its mail's links

Revision ID: 20261128_04
Revises: 20261128_03
Create Date: 2026-11-28 04:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261128_04"
down_revision: str | None = "20261128_03"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("sending_domains", sa.Column("link_host", sa.String(length=253), nullable=True))


def downgrade() -> None:
    op.drop_column("sending_domains", "link_host")
