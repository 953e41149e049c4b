"""PostgreSQL storage choices that keep bulk status changes fast (migration 20261122_07).

A status change (bulk unsubscribe, archive, restore) should be a heap-only (HOT) update: no
index names a column it writes, and pages keep room for the new row version. An index added
on `status` later would silently make a 50,000-contact unsubscribe ~6x slower; these tests
say so first.
"""

from __future__ import annotations

import pytest
from sqlalchemy import text

pytestmark = pytest.mark.postgresql_only

STATUS_COLUMNS = {"status", "previous_status", "unsubscribed_at", "updated_at"}


async def test_no_contacts_index_names_a_column_a_status_change_writes(db):
    async with db.session() as session:
        indexed = (
            await session.execute(
                text(
                    "SELECT i.relname, a.attname FROM pg_index x "
                    "JOIN pg_class i ON i.oid = x.indexrelid "
                    "JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = ANY(x.indkey) "
                    "WHERE x.indrelid = 'contacts'::regclass"
                )
            )
        ).all()
        expressions = await session.scalar(
            text(
                "SELECT count(*) FROM pg_index WHERE indrelid = 'contacts'::regclass "
                "AND (indexprs IS NOT NULL OR indpred IS NOT NULL)"
            )
        )
    assert indexed, "contacts has indexes"
    assert {column for _, column in indexed} & STATUS_COLUMNS == set()
    assert expressions == 0


async def test_contacts_pages_keep_room_and_scratch_tables_skip_the_wal(db):
    async with db.session() as session:
        options = await session.scalar(
            text("SELECT reloptions FROM pg_class WHERE oid = 'contacts'::regclass")
        )
        persistence = dict(
            (
                await session.execute(
                    text(
                        "SELECT relname, relpersistence::text FROM pg_class "
                        "WHERE relname IN ('bulk_selection', 'import_staging')"
                    )
                )
            ).all()
        )
    assert "fillfactor=50" in (options or [])
    assert persistence == {"bulk_selection": "u", "import_staging": "u"}


async def test_bulk_unsubscribe_of_imported_contacts_is_heap_only(client, ws, db):
    lines = ["email,first_name"] + [f"person{i}@mail{i % 7}.io,P{i}" for i in range(300)]
    response = await client.post(
        "/api/v1/contacts/import",
        files={"file": ("c.csv", "\n".join(lines).encode(), "text/csv")},
        headers=ws.headers,
    )
    assert response.status_code == 200, response.text
    assert response.json()["imported"] == 300
    # The bulk action's own statement, in a transaction of ours so its statistics are ours.
    async with db.session() as session:
        await session.execute(
            text(
                "UPDATE contacts SET status = 'unsubscribed', unsubscribed_at = now(), "
                "updated_at = now() WHERE workspace_id = :ws AND status = 'subscribed'"
            ),
            {"ws": ws.workspace_id},
        )
        updated, heap_only = (
            await session.execute(
                text(
                    "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables "
                    "WHERE relname = 'contacts'"
                )
            )
        ).one()
        await session.rollback()
    # Not quite all: a row version that grows (unsubscribed_at was NULL) may miss the room
    # on a page filled to the brim; an index on a written column would make it 0.
    assert updated == 300
    assert heap_only >= 270
