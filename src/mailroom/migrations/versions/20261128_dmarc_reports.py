"""DMARC aggregate reports about sending domains, and their rows

Revision ID: 20261128_03
Revises: 20261128_02
Create Date: 2026-11-28 03:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mailroom.core.dbtypes import UTCDateTime

revision: str = "20261128_03"
down_revision: str | None = "20261128_02"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "dmarc_reports",
        sa.Column("id", sa.String(length=36), primary_key=True),
        sa.Column(
            "workspace_id",
            sa.String(length=36),
            sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "domain_id",
            sa.String(length=36),
            sa.ForeignKey("sending_domains.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("reporter", sa.String(length=200), nullable=False),
        sa.Column("reporter_email", sa.String(length=320), nullable=False),
        sa.Column("report_id", sa.String(length=200), nullable=False),
        sa.Column("begin_at", UTCDateTime(), nullable=False),
        sa.Column("end_at", UTCDateTime(), nullable=False),
        sa.Column("received_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint("domain_id", "reporter", "report_id"),
    )
    op.create_table(
        "dmarc_records",
        sa.Column("id", sa.String(length=36), primary_key=True),
        sa.Column(
            "workspace_id",
            sa.String(length=36),
            sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "domain_id",
            sa.String(length=36),
            sa.ForeignKey("sending_domains.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "report_id",
            sa.String(length=36),
            sa.ForeignKey("dmarc_reports.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("source_ip", sa.String(length=45), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("spf_pass", sa.Integer(), nullable=False),
        sa.Column("dkim_pass", sa.Integer(), nullable=False),
        sa.Column("dmarc_pass", sa.Integer(), nullable=False),
        sa.Column("disposition", sa.String(length=16), nullable=False),
    )
    op.create_index("ix_dmarc_records_domain_day", "dmarc_records", ["domain_id", "day"])
    op.create_index("ix_dmarc_records_report_id", "dmarc_records", ["report_id"])


def downgrade() -> None:
    op.drop_table("dmarc_records")
    op.drop_table("dmarc_reports")
