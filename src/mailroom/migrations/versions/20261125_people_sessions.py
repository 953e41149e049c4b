"""people belong to an account, one-time sign-in links, dashboard sessions

Revision ID: 20261125_06
Revises: 20261125_05
Create Date: 2026-11-25 22:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailroom.core.dbtypes

revision: str = "20261125_06"
down_revision: str | None = "20261125_05"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "dashboard_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("person_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=True),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("flash", mailroom.core.dbtypes.JSONValue, nullable=False),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["person_id"],
            ["people.id"],
            name=op.f("fk_dashboard_sessions_person_id_people"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_dashboard_sessions_workspace_id_workspaces"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dashboard_sessions")),
    )
    with op.batch_alter_table("dashboard_sessions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_dashboard_sessions_person_id"), ["person_id"], unique=False
        )

    with op.batch_alter_table("people", schema=None) as batch_op:
        batch_op.add_column(sa.Column("account_id", sa.String(length=36), nullable=True))
        batch_op.add_column(
            sa.Column("link_nonce", sa.String(length=32), nullable=False, server_default="")
        )
        batch_op.create_index(batch_op.f("ix_people_account_id"), ["account_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_people_account_id_accounts"),
            "accounts",
            ["account_id"],
            ["id"],
            ondelete="CASCADE",
        )


def downgrade() -> None:
    with op.batch_alter_table("people", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_people_account_id_accounts"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_people_account_id"))
        batch_op.drop_column("link_nonce")
        batch_op.drop_column("account_id")

    with op.batch_alter_table("dashboard_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_dashboard_sessions_person_id"))

    op.drop_table("dashboard_sessions")
