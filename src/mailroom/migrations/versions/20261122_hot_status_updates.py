"""PostgreSQL: status changes become heap-only (HOT) updates; scratch tables skip the WAL

A bulk unsubscribe/archive/restore of 50,000 contacts rewrote every row with a new entry in
all seven indexes of `contacts` (trigram GIN included): ~110 MB of WAL and ~3 s. PostgreSQL
skips index maintenance entirely (a HOT update) when no indexed column changes and the new row
version fits on the same page. So on PostgreSQL:

- `status` leaves the indexes (status filters walk `ix_contacts_workspace_created`; totals come
  from `contact_counts`), and
- `contacts` keeps half of each page free (fillfactor 50) for the new row versions. Existing
  pages get the room as they are rewritten (VACUUM FULL or pg_repack rewrites them at once).
- `bulk_selection` and `import_staging` hold rows only inside one transaction: UNLOGGED (no
  WAL; a crash empties them, which is what they hold after every commit anyway).

SQLite keeps its status index (it has no HOT updates; its bulk figures were already in target).

Revision ID: 20261122_07
Revises: 20261122_06
Create Date: 2026-11-22 21:40:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "20261122_07"
down_revision: str | None = "20261122_06"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCRATCH_TABLES = ("bulk_selection", "import_staging")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP INDEX IF EXISTS ix_contacts_workspace_status_created")
    op.execute("ALTER TABLE contacts SET (fillfactor = 50)")
    for table in SCRATCH_TABLES:
        op.execute(f"ALTER TABLE {table} SET UNLOGGED")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in SCRATCH_TABLES:
        op.execute(f"ALTER TABLE {table} SET LOGGED")
    op.execute("ALTER TABLE contacts RESET (fillfactor)")
    op.execute(
        "CREATE INDEX ix_contacts_workspace_status_created "
        "ON contacts (workspace_id, status, created_at)"
    )
