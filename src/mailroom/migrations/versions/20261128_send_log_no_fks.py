"""The send log without foreign keys on workspace_id and contact_id

Checking them was half of a 50,000-recipient campaign snapshot on PostgreSQL; the code keeps
what they kept (models/sending.py says how).

Revision ID: 20261128_07
Revises: 20261128_06
Create Date: 2026-11-28 13:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "20261128_07"
down_revision: str | None = "20261128_06"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # On SQLite this copies the table (batch mode): a one-off, about a second per 100,000 rows.
    with op.batch_alter_table("send_log") as batch:
        batch.drop_constraint("fk_send_log_contact_id_contacts", type_="foreignkey")
        batch.drop_constraint("fk_send_log_workspace_id_workspaces", type_="foreignkey")


def downgrade() -> None:
    # Rows of contacts deleted meanwhile point nowhere: null them first, as the key would have.
    op.execute(
        "UPDATE send_log SET contact_id = NULL WHERE contact_id IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.id = send_log.contact_id)"
    )
    with op.batch_alter_table("send_log") as batch:
        batch.create_foreign_key(
            "fk_send_log_workspace_id_workspaces",
            "workspaces",
            ["workspace_id"],
            ["id"],
            ondelete="CASCADE",
        )
        batch.create_foreign_key(
            "fk_send_log_contact_id_contacts",
            "contacts",
            ["contact_id"],
            ["id"],
            ondelete="SET NULL",
        )
