"""Raw floors for issue 34: what the contact import and export cost with no application rules,
measured in the same process and run as the figures they are compared with.

Import floor: the csv module reads the same file, each row becomes a `contacts` row (id, hash,
JSON fields, search text) and all of them go into a scratch table shaped like `contacts` (its
columns, none of its indexes or triggers) in one transaction, by executemany (SQLite) or COPY
(PostgreSQL). Export floor: one SELECT of the export's columns
streamed through csv.writer into a file."""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import text

from mailroom.accounts import service as accounts_service
from mailroom.contacts.importer import NEW_CONTACT_COLUMNS
from mailroom.core.ids import new_id

SCRATCH = "bench_import_floor"
# The floor writes the very columns the import writes for a new contact.
COLUMNS = list(NEW_CONTACT_COLUMNS)


@dataclass
class Cost:
    seconds: float = 0.0
    cpu: float = 0.0  # this process's CPU time (all threads: aiosqlite's included)


class Measure:
    def __enter__(self) -> Cost:
        self.cost = Cost()
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self.cost

    def __exit__(self, *exc: object) -> None:
        self.cost.seconds = time.perf_counter() - self._wall
        self.cost.cpu = time.process_time() - self._cpu


async def import_floor(app: Any, content: bytes) -> Cost:
    db = app.state.db
    async with db.transaction() as session:
        _account, workspace = await accounts_service.create_workspace(session, plan="business")
        await session.execute(text(f"DROP TABLE IF EXISTS {SCRATCH}"))
        await session.execute(text(f"CREATE TABLE {SCRATCH} AS SELECT * FROM contacts WHERE 1 = 0"))
    sqlite = db.is_sqlite
    key = b"bench"
    with Measure() as cost:
        now = datetime.now(UTC)
        stamp: Any = now.strftime("%Y-%m-%d %H:%M:%S.%f") if sqlite else now
        reader = csv.reader(io.TextIOWrapper(io.BytesIO(content), encoding="utf-8", newline=""))
        header = next(reader)
        keys = header[5:]
        records = []
        for row in reader:
            email = row[0].strip().lower()
            first, last = row[1], row[2]
            records.append(
                (
                    new_id(),
                    workspace.id,
                    email,
                    hmac.digest(key, email.encode(), hashlib.sha256).hex(),
                    first,
                    last,
                    row[3],
                    orjson.dumps(dict(zip(keys, row[5:], strict=True))).decode(),
                    "import",
                    f"{email}\n{first}\n{last}".casefold(),
                    stamp,
                    None,
                    stamp,
                    stamp,
                )
            )
        async with db.transaction() as session:
            connection = await session.connection()
            if sqlite:
                marks = ", ".join("?" for _ in COLUMNS)
                await connection.exec_driver_sql(
                    f"INSERT INTO {SCRATCH} ({', '.join(COLUMNS)}) VALUES ({marks})", records
                )
            else:
                raw = await connection.get_raw_connection()
                await raw.driver_connection.copy_records_to_table(  # type: ignore[union-attr]
                    SCRATCH, records=records, columns=COLUMNS
                )
    async with db.transaction() as session:
        await session.execute(text(f"DROP TABLE {SCRATCH}"))
    return cost


def _names(sqlite: bool, join_table: str, name_table: str, fk: str) -> str:
    if sqlite:
        return (
            f"(SELECT group_concat(n.name, ';') FROM {join_table} j JOIN {name_table} n "
            f"ON n.id = j.{fk} WHERE j.contact_id = c.id)"
        )
    return (
        f"(SELECT string_agg(n.name, ';') FROM {join_table} j JOIN {name_table} n "
        f"ON n.id = j.{fk} WHERE j.contact_id = c.id)"
    )


async def export_floor(app: Any, workspace_id: str, keys: list[str]) -> Cost:
    db = app.state.db
    sqlite = db.is_sqlite
    custom = "c.custom_fields" if sqlite else "c.custom_fields::text"
    sql = text(
        "SELECT c.email, c.first_name, c.last_name, c.status, c.source, c.language, "
        f"{_names(sqlite, 'contact_tags', 'tags', 'tag_id')}, "
        f"{_names(sqlite, 'list_members', 'lists', 'list_id')}, "
        f"c.created_at, c.subscribed_at, c.unsubscribed_at, {custom} "
        "FROM contacts c WHERE c.workspace_id = :w ORDER BY c.created_at DESC, c.id DESC"
    )
    with tempfile.TemporaryFile("w+", newline="") as out, Measure() as cost:
        writer = csv.writer(out, quoting=csv.QUOTE_ALL)
        writer.writerow(["email", "first_name", "last_name", "status", "source", "language"])
        async with db.transaction() as session:
            result = await session.stream(text(sql.text), {"w": workspace_id})
            async for batch in result.partitions(2000):
                for row in batch:
                    fields = orjson.loads(row[-1]) if row[-1] else {}
                    writer.writerow([*row[:-1], *(fields.get(k) for k in keys)])
    return cost
