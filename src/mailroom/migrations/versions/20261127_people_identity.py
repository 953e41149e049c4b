"""people are sign-in identities across accounts; a membership knows when it was first used

A person no longer belongs to one account (`people.account_id` goes): any account's workspace
can give an existing person a role, so no account can claim an address from the others.
`workspace_members.joined_at` is when the person first entered that workspace; memberships of
people who already had a password count as joined when they were made.

Revision ID: 20261127_01
Revises: 20261126_01
Create Date: 2026-11-27 01:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mailroom.core.dbtypes

revision: str = "20261127_01"
down_revision: str | None = "20261126_01"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("workspace_members", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("joined_at", mailroom.core.dbtypes.UTCDateTime(), nullable=True)
        )
    op.execute(
        "UPDATE workspace_members SET joined_at = created_at WHERE person_id IN "
        "(SELECT id FROM people WHERE password_hash IS NOT NULL)"
    )
    with op.batch_alter_table("people", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_people_account_id_accounts"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_people_account_id"))
        batch_op.drop_column("account_id")


def downgrade() -> None:
    with op.batch_alter_table("people", schema=None) as batch_op:
        batch_op.add_column(sa.Column("account_id", sa.String(length=36), nullable=True))
        batch_op.create_index(batch_op.f("ix_people_account_id"), ["account_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_people_account_id_accounts"),
            "accounts",
            ["account_id"],
            ["id"],
            ondelete="CASCADE",
        )
    # Back to one account a person: the account of their earliest membership.
    op.execute(
        "UPDATE people SET account_id = (SELECT w.account_id FROM workspace_members m "
        "JOIN workspaces w ON w.id = m.workspace_id WHERE m.person_id = people.id "
        "ORDER BY m.created_at, w.id LIMIT 1)"
    )
    with op.batch_alter_table("workspace_members", schema=None) as batch_op:
        batch_op.drop_column("joined_at")
