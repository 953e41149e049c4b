"""`mailroom restore`, step 4: the database replaced by the backup's, then migrated to head.

SQLite: an atomic rename, after the old database's WAL was checkpointed and its -wal/-shm
removed, so the new file never meets an old log.

PostgreSQL, in one transaction (all or nothing: a failure leaves the database as it was):
everything of the schema Mailroom uses is dropped (tables, views, sequences, functions and
types, but not an extension's objects, nor any other schema or database), then the dump is
played into it. Dropping first is what makes the result the backup's alone: a table that a
newer Mailroom added and the backup lacks would otherwise stay, with its rows (and its foreign
keys would make dropping the backup's tables fail). pg_restore cannot run anything before its
own transaction, so it writes the dump out as an SQL script (the database's size on disk, in
the data directory, removed afterwards) that psql runs after the drops, in one transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import sqlite3
from pathlib import Path

from mailroom.settings import Settings
from mailroom.system.backup import (
    PG_MISSING,
    BackupError,
    Report,
    fsync_dir,
    pg_connection,
    private_file,
    run_pg_tool,
    show_command,
)
from mailroom.system.restore_archive import UNCHANGED, Checked

# Everything of the connection's first schema (where Mailroom's migrations made its tables)
# that is not an extension's: tables first (CASCADE: their indexes, triggers, constraints,
# owned sequences and the views on them go too), then views and sequences left, routines and
# types. The statements are listed before the first runs; IF EXISTS passes over what an
# earlier CASCADE took along.
CLEAR_SCHEMA = """\
SET client_min_messages = warning;
DO $clear$
DECLARE
    target oid := (SELECT oid FROM pg_namespace WHERE nspname = current_schema());
    statements text[];
    statement text;
BEGIN
    IF target IS NULL THEN
        RETURN;
    END IF;
    SELECT coalesce(array_agg(drop_it ORDER BY rank), '{}') INTO statements FROM (
        SELECT format('DROP %s IF EXISTS %I.%I CASCADE',
                      CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                                     WHEN 'S' THEN 'SEQUENCE' WHEN 'f' THEN 'FOREIGN TABLE'
                                     ELSE 'TABLE' END,
                      n.nspname, c.relname) AS drop_it,
               CASE WHEN c.relkind IN ('r', 'p', 'f') THEN 0 ELSE 1 END AS rank
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relnamespace = target AND c.relkind IN ('r', 'p', 'f', 'v', 'm', 'S')
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                          AND d.objid = c.oid AND d.deptype = 'e')
        UNION ALL
        SELECT format('DROP ROUTINE IF EXISTS %I.%I(%s) CASCADE', n.nspname, p.proname,
                      pg_get_function_identity_arguments(p.oid)), 2
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE p.pronamespace = target
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
                          AND d.objid = p.oid AND d.deptype = 'e')
        UNION ALL
        SELECT format('DROP TYPE IF EXISTS %I.%I CASCADE', n.nspname, t.typname), 3
        FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        WHERE t.typnamespace = target
          AND (t.typtype IN ('e', 'd', 'r')
               OR (t.typtype = 'c' AND (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c'))
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_type'::regclass
                          AND d.objid = t.oid AND d.deptype = 'e')
    ) AS found;
    FOREACH statement IN ARRAY statements LOOP
        EXECUTE statement;
    END LOOP;
END
$clear$;
"""


def replace_sqlite(temporary: Path, final: Path) -> None:
    """Put the new file in place of the old database, whose WAL is first written into it and
    removed: an old -wal beside the new file would be replayed into it."""
    if final.is_file() and final.stat().st_size:
        with contextlib.suppress(sqlite3.Error):
            old = sqlite3.connect(final, isolation_level=None)
            try:
                old.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                old.close()
    for suffix in ("-wal", "-shm", "-journal"):
        final.with_name(final.name + suffix).unlink(missing_ok=True)
    os.replace(temporary, final)
    fsync_dir(final.parent)


def missing_postgresql_tool() -> str | None:
    """The first of the client programs a PostgreSQL restore runs that is not on PATH."""
    return next((tool for tool in ("pg_restore", "psql") if shutil.which(tool) is None), None)


def restore_postgresql(settings: Settings, dump: Path, report: Report) -> None:
    """Replace everything in the schema Mailroom uses by the dump's, in one transaction."""
    options, env = pg_connection(settings.resolved_database_url)
    missing = missing_postgresql_tool()
    if missing is not None:
        raise BackupError(PG_MISSING.format(tool=missing) + f" ({UNCHANGED})")
    pg_restore, psql = shutil.which("pg_restore"), shutil.which("psql")
    assert pg_restore is not None and psql is not None
    script = dump.with_name(f".restore-{secrets.token_hex(4)}.sql")
    clear = dump.with_name(f".restore-clear-{secrets.token_hex(4)}.sql")
    try:
        private_file(clear)
        clear.write_text(CLEAR_SCHEMA)
        private_file(script)
        # The dump as SQL, written here: the database is not touched yet.
        command = ["pg_restore", "--no-owner", f"--file={script}", str(dump)]
        show_command(report, command, {})
        try:
            run_pg_tool([pg_restore, *command[1:]], {}, report, script)
        except BackupError as exc:
            raise BackupError(f"{exc} (the database was not touched; {UNCHANGED})") from exc
        command = [
            "psql",
            "--no-psqlrc",
            "--quiet",
            "--single-transaction",  # all or nothing: the drops and the whole dump
            "--set=ON_ERROR_STOP=1",
            *options,
            f"--file={clear}",
            f"--file={script}",
        ]
        show_command(report, command, env)
        try:
            run_pg_tool([psql, *command[1:]], env, report, script)
        except BackupError as exc:
            raise BackupError(
                f"{exc} (one transaction: the database was left as it was; {UNCHANGED})"
            ) from exc
    finally:
        script.unlink(missing_ok=True)
        clear.unlink(missing_ok=True)


def migrate(settings: Settings, checked: Checked, report: Report) -> None:
    """Bring the restored database to this Mailroom's head (a backup of an older one)."""
    from mailroom.migrations import current_revision, upgrade

    url = settings.resolved_database_url
    try:
        asyncio.run(upgrade(url))
        now = asyncio.run(current_revision(url))
        asyncio.run(_forget_processes(url))
    except Exception as exc:
        raise BackupError(
            f"The backup was restored, but migrating its database failed: {exc}. Run "
            "`mailroom db upgrade` once the cause is fixed."
        ) from exc
    if now == checked.revision:
        report.say(f"The database is at the latest revision ({now}).")
    else:
        report.say(f"Migrated the database from {checked.revision or 'none'} to {now} (head).")


async def _forget_processes(url: str) -> None:
    """The heartbeat rows of the processes that ran where the backup was taken: none of them
    runs here (the target was checked), and a fresh one would refuse the next restore."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.execute(text("DELETE FROM workers"))
    finally:
        await engine.dispose()
