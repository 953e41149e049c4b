"""send_log: one row per (message, recipient), the row every send goes through

Defined with the segments that read it (`activity` rules); the sending engine writes it.

Revision ID: 20261123_03
Revises: 20261123_02
Create Date: 2026-11-23 22:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import mailroom.core.dbtypes

revision: str = "20261123_03"
down_revision: str | None = "20261123_02"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "send_log",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("campaign_id", sa.String(length=36), nullable=True),
        sa.Column("contact_id", sa.String(length=36), nullable=True),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("priority", sa.SmallInteger(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("message_id", sa.String(length=255), nullable=True),
        sa.Column("smtp_response", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("sent_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=True),
        sa.Column("delivered_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=True),
        sa.Column(
            "first_opened_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column(
            "first_clicked_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("open_count", sa.Integer(), nullable=False),
        sa.Column("click_count", sa.Integer(), nullable=False),
        sa.Column("bounced_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=True),
        sa.Column("complained_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("run_at", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=False),
        sa.Column("locked_until", mailroom.core.dbtypes.UTCDateTime(timezone=True), nullable=True),
        sa.Column("locked_by", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(
            ["contact_id"],
            ["contacts.id"],
            name=op.f("fk_send_log_contact_id_contacts"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_send_log_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_send_log")),
        sa.UniqueConstraint(
            "campaign_id", "contact_id", name=op.f("uq_send_log_campaign_id_contact_id")
        ),
    )
    with op.batch_alter_table("send_log", schema=None) as batch_op:
        batch_op.create_index(
            "ix_send_log_campaign_status", ["campaign_id", "status"], unique=False
        )
        batch_op.create_index("ix_send_log_contact_sent", ["contact_id", "sent_at"], unique=False)
        batch_op.create_index("ix_send_log_due", ["status", "priority", "run_at"], unique=False)
        batch_op.create_index(
            "ix_send_log_workspace_created", ["workspace_id", "created_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("send_log", schema=None) as batch_op:
        batch_op.drop_index("ix_send_log_workspace_created")
        batch_op.drop_index("ix_send_log_due")
        batch_op.drop_index("ix_send_log_contact_sent")
        batch_op.drop_index("ix_send_log_campaign_status")

    op.drop_table("send_log")
