"""automations and automation_runs

Revision ID: 20261125_03
Revises: 20261125_02
Create Date: 2026-11-25 19:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailroom.core.dbtypes

revision: str = "20261125_03"
down_revision: str | None = "20261125_02"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "automations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("name_key", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("trigger_type", sa.String(length=24), nullable=False),
        sa.Column("trigger", mailroom.core.dbtypes.JSONValue, nullable=False),
        sa.Column("steps", mailroom.core.dbtypes.JSONValue, nullable=False),
        sa.Column("allow_reentry", sa.Boolean(), nullable=False),
        sa.Column("time_zone", sa.String(length=64), nullable=False),
        sa.Column("failed_notified_at", mailroom.core.dbtypes.UTCDateTime(), nullable=True),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("updated_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_automations_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_automations")),
        sa.UniqueConstraint(
            "workspace_id", "name_key", name=op.f("uq_automations_workspace_id_name_key")
        ),
    )
    op.create_index(
        "ix_automations_workspace_created", "automations", ["workspace_id", "created_at"]
    )
    op.create_index(
        "ix_automations_workspace_status_trigger",
        "automations",
        ["workspace_id", "status", "trigger_type"],
    )
    op.create_table(
        "automation_runs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("automation_id", sa.String(length=36), nullable=False),
        sa.Column("contact_id", sa.String(length=36), nullable=False),
        sa.Column("state", sa.String(length=12), nullable=False),
        sa.Column("step_id", sa.String(length=64), nullable=True),
        sa.Column("waiting", sa.Boolean(), nullable=False),
        sa.Column("held_since", mailroom.core.dbtypes.UTCDateTime(), nullable=True),
        sa.Column("history", mailroom.core.dbtypes.JSONValue, nullable=False),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("updated_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("ended_at", mailroom.core.dbtypes.UTCDateTime(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("run_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("locked_until", mailroom.core.dbtypes.UTCDateTime(), nullable=True),
        sa.Column("locked_by", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(
            ["automation_id"],
            ["automations.id"],
            name=op.f("fk_automation_runs_automation_id_automations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_automation_runs_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_automation_runs")),
    )
    op.create_index("ix_automation_runs_due", "automation_runs", ["status", "run_at"])
    op.create_index(
        "ix_automation_runs_automation", "automation_runs", ["automation_id", "created_at"]
    )
    op.create_index("ix_automation_runs_contact", "automation_runs", ["contact_id"])
    op.create_index(
        "ux_automation_runs_live",
        "automation_runs",
        ["automation_id", "contact_id"],
        unique=True,
        sqlite_where=sa.text("status = 'pending'"),
        postgresql_where=sa.text("status = 'pending'"),
    )


def downgrade() -> None:
    op.drop_table("automation_runs")
    op.drop_table("automations")
