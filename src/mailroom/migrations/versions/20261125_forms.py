"""forms

Revision ID: 20261125_04
Revises: 20261125_03
Create Date: 2026-11-25 21:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailroom.core.dbtypes

revision: str = "20261125_04"
down_revision: str | None = "20261125_03"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "forms",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("name_key", sa.Text(), nullable=False),
        sa.Column("fields", mailroom.core.dbtypes.JSONValue, nullable=False),
        sa.Column("list_ids", mailroom.core.dbtypes.JSONValue, nullable=False),
        sa.Column("double_opt_in", sa.Boolean(), nullable=False),
        sa.Column("success_message", sa.Text(), nullable=True),
        sa.Column("redirect_url", sa.Text(), nullable=True),
        sa.Column("consent_text", sa.Text(), nullable=True),
        sa.Column("languages", mailroom.core.dbtypes.JSONValue, nullable=False),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("updated_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_forms_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_forms")),
        sa.UniqueConstraint(
            "workspace_id", "name_key", name=op.f("uq_forms_workspace_id_name_key")
        ),
    )
    with op.batch_alter_table("forms", schema=None) as batch_op:
        batch_op.create_index(
            "ix_forms_workspace_created", ["workspace_id", "created_at"], unique=False
        )

    op.create_table(
        "form_submissions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("form_id", sa.String(length=36), nullable=False),
        sa.Column("contact_id", sa.String(length=36), nullable=True),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("answers", mailroom.core.dbtypes.JSONValue, nullable=False),
        sa.Column("language", sa.String(length=8), nullable=False),
        sa.Column("consent_ip", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("announced", sa.Boolean(), nullable=False),
        sa.Column("created_at", mailroom.core.dbtypes.UTCDateTime(), nullable=False),
        sa.Column("confirmed_at", mailroom.core.dbtypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["contact_id"],
            ["contacts.id"],
            name=op.f("fk_form_submissions_contact_id_contacts"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["form_id"],
            ["forms.id"],
            name=op.f("fk_form_submissions_form_id_forms"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_form_submissions_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_form_submissions")),
    )
    with op.batch_alter_table("form_submissions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_form_submissions_form_created", ["form_id", "created_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("form_submissions", schema=None) as batch_op:
        batch_op.drop_index("ix_form_submissions_form_created")

    op.drop_table("form_submissions")
    with op.batch_alter_table("forms", schema=None) as batch_op:
        batch_op.drop_index("ix_forms_workspace_created")

    op.drop_table("forms")
