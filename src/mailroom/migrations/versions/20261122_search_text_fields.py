"""contacts.search_text: fields joined by a newline, so `q` never matches across two fields

Revision ID: 20261122_06
Revises: 20261122_05
Create Date: 2026-11-22 05:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261122_06"
down_revision: str | None = "20261122_05"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 5000


def _rebuild(separator: str) -> None:
    # Same rule as models.contacts.search_text (casefold is Python's, so this runs here, not
    # in SQL); written out so the migration does not change when the model does.
    bind = op.get_bind()
    contacts = sa.table(
        "contacts",
        sa.column("id", sa.String),
        sa.column("email", sa.String),
        sa.column("first_name", sa.String),
        sa.column("last_name", sa.String),
        sa.column("search_text", sa.Text),
    )
    update = (
        sa.update(contacts)
        .where(contacts.c.id == sa.bindparam("key"))
        .values(search_text=sa.bindparam("text"))
    )
    last = ""
    while True:
        rows = bind.execute(
            sa.select(contacts.c.id, contacts.c.email, contacts.c.first_name, contacts.c.last_name)
            .where(contacts.c.id > last)
            .order_by(contacts.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            return
        bind.execute(
            update,
            [
                {"key": i, "text": separator.join((e, f or "", n or "")).casefold()}
                for i, e, f, n in rows
            ],
        )
        last = rows[-1][0]


def upgrade() -> None:
    _rebuild("\n")


def downgrade() -> None:
    _rebuild(" ")
