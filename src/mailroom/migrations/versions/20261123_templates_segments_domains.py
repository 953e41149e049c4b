"""templates, segments and sending domains: what every send is made of

Templates and segments are named rows (unique name per workspace ignoring case); a sending
domain keeps its DKIM key pair (the private half encrypted) and its DNS verification state.

Revision ID: 20261123_02
Revises: 20261123_01
Create Date: 2026-11-23 22:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import mailroom.core.dbtypes

revision: str = "20261123_02"
down_revision: str | None = "20261123_01"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "segments",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("name_key", sa.Text(), nullable=False),
        sa.Column(
            "rules",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_segments_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_segments")),
        sa.UniqueConstraint(
            "workspace_id", "name_key", name=op.f("uq_segments_workspace_id_name_key")
        ),
    )
    with op.batch_alter_table("segments", schema=None) as batch_op:
        batch_op.create_index(
            "ix_segments_workspace_created", ["workspace_id", "created_at"], unique=False
        )

    op.create_table(
        "sending_domains",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("domain", sa.String(length=253), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("dkim_selector", sa.String(length=63), nullable=False),
        sa.Column("dkim_private_key", sa.Text(), nullable=False),
        sa.Column("dkim_public_key", sa.Text(), nullable=False),
        sa.Column(
            "record_status",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("failure_reason", sa.Text(), nullable=True),
        sa.Column("verified_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=True),
        sa.Column(
            "last_checked_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_sending_domains_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sending_domains")),
        sa.UniqueConstraint(
            "workspace_id", "domain", name=op.f("uq_sending_domains_workspace_id_domain")
        ),
    )
    with op.batch_alter_table("sending_domains", schema=None) as batch_op:
        batch_op.create_index(
            "ix_sending_domains_status_checked", ["status", "last_checked_at"], unique=False
        )

    op.create_table(
        "templates",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("name_key", sa.Text(), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column("preheader", sa.String(length=200), nullable=False),
        sa.Column("html_content", sa.Text(), nullable=False),
        sa.Column("text_content", sa.Text(), nullable=False),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_templates_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_templates")),
        sa.UniqueConstraint(
            "workspace_id", "name_key", name=op.f("uq_templates_workspace_id_name_key")
        ),
    )
    with op.batch_alter_table("templates", schema=None) as batch_op:
        batch_op.create_index(
            "ix_templates_workspace_created", ["workspace_id", "created_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("templates", schema=None) as batch_op:
        batch_op.drop_index("ix_templates_workspace_created")

    op.drop_table("templates")
    with op.batch_alter_table("sending_domains", schema=None) as batch_op:
        batch_op.drop_index("ix_sending_domains_status_checked")

    op.drop_table("sending_domains")
    with op.batch_alter_table("segments", schema=None) as batch_op:
        batch_op.drop_index("ix_segments_workspace_created")

    op.drop_table("segments")
