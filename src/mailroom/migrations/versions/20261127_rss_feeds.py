"""rss feeds: a feed, the items it already sent or skipped, and campaigns made as its issues

Revision ID: 20261127_07
Revises: 20261127_06
Create Date: 2026-11-27 13:00:00
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from mailroom.core.dbtypes import UTCDateTime

revision: str = "20261127_07"
down_revision: str | None = "20261127_06"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "rss_feeds",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("name_key", sa.Text(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("template_id", sa.String(length=36), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column("audience", _json(), nullable=False),
        sa.Column("from_name", sa.String(length=100), nullable=False),
        sa.Column("from_email", sa.String(length=254), nullable=False),
        sa.Column("reply_to", sa.String(length=254), nullable=False),
        sa.Column("schedule", _json(), nullable=False),
        sa.Column("min_items", sa.Integer(), nullable=False),
        sa.Column("max_items", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("etag", sa.Text(), nullable=True),
        sa.Column("last_modified", sa.Text(), nullable=True),
        sa.Column("next_run_at", UTCDateTime(), nullable=True),
        sa.Column("locked_until", UTCDateTime(), nullable=True),
        sa.Column("last_checked_at", UTCDateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("last_error_at", UTCDateTime(), nullable=True),
        sa.Column("failing_since", UTCDateTime(), nullable=True),
        sa.Column("last_issue_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("workspace_id", "name_key"),
    )
    op.create_index("ix_rss_feeds_status_next_run", "rss_feeds", ["status", "next_run_at"])
    op.create_table(
        "rss_seen_items",
        sa.Column("feed_id", sa.String(length=36), nullable=False),
        sa.Column("guid_hash", sa.String(length=64), nullable=False),
        sa.Column("seen_at", UTCDateTime(), nullable=False),
        sa.Column("campaign_id", sa.String(length=36), nullable=True),
        sa.ForeignKeyConstraint(["feed_id"], ["rss_feeds.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("feed_id", "guid_hash"),
    )
    with op.batch_alter_table("campaigns") as batch:
        batch.add_column(sa.Column("rss_feed_id", sa.String(length=36), nullable=True))
        batch.add_column(sa.Column("variables", _json(), nullable=True))
    op.create_index(
        "ix_campaigns_rss_feed", "campaigns", ["workspace_id", "rss_feed_id", "created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_campaigns_rss_feed", table_name="campaigns")
    with op.batch_alter_table("campaigns") as batch:
        batch.drop_column("variables")
        batch.drop_column("rss_feed_id")
    op.drop_table("rss_seen_items")
    op.drop_table("rss_feeds")
