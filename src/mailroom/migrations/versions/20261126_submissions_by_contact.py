"""form submissions looked up by contact (a contact's timeline in the dashboard)

Revision ID: 20261126_01
Revises: 20261125_07
Create Date: 2026-11-26 05:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "20261126_01"
down_revision: str | None = "20261125_07"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_form_submissions_contact", "form_submissions", ["contact_id"])


def downgrade() -> None:
    op.drop_index("ix_form_submissions_contact", table_name="form_submissions")
