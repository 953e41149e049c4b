"""`mailroom restore`, step 2: the target checked before anything is written.

The backup's migration revision must be one this Mailroom knows (a backup of a newer Mailroom
is refused: upgrade Mailroom first); the secret key the restored installation will use must be
the one that sealed the data; the database and data directory must be empty unless --force;
and no Mailroom process may be running on the database (a fresh heartbeat in `workers`, of a
worker or of a server), --force or not.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from mailroom.settings import Settings
from mailroom.system.backup import (
    SECRET_FILE,
    BackupError,
    database_kind,
    secret_fingerprint,
)
from mailroom.system.restore_archive import UNCHANGED, Checked


def check_revision(checked: Checked) -> None:
    from alembic.script import ScriptDirectory

    from mailroom.migrations import alembic_config

    if checked.revision is None:
        return
    script = ScriptDirectory.from_config(alembic_config())
    known = {revision.revision for revision in script.walk_revisions()}
    unknown = [part for part in checked.revision.split(",") if part not in known]
    if unknown:
        raise BackupError(
            f"The backup's database is at revision {checked.revision}, which this Mailroom does "
            f"not know: it was made by a newer Mailroom ({checked.manifest.get('mailroom_version')}"
            f"). Upgrade Mailroom first; {UNCHANGED}."
        )


def check_secret(settings: Settings, checked: Checked) -> None:
    """The secret the restored installation will use must be the one that sealed the data:
    another one would leave suppressed addresses unrecognised (they are stored as HMACs) and
    DKIM keys and credentials sealed."""
    expected = (checked.manifest.get("secret_key") or {}).get("fingerprint")
    if not expected:
        return
    target_file = settings.data_dir / SECRET_FILE
    if settings.secret_key:
        if secret_fingerprint(settings.secret_key) == expected:
            return
        raise BackupError(
            "The backup's data is sealed with another secret key than MAILROOM_SECRET_KEY here: "
            "set MAILROOM_SECRET_KEY to the backed-up installation's value"
            + (", or unset it to use the secret_key file in the backup" if checked.secret else "")
            + f"; {UNCHANGED}."
        )
    if checked.secret is not None and secret_fingerprint(checked.secret) == expected:
        return
    if (
        checked.secret is None
        and target_file.is_file()
        and secret_fingerprint(target_file.read_text().strip()) == expected
    ):
        return
    raise BackupError(
        "The backup does not hold the secret key its data is sealed with (the backed-up "
        "installation had MAILROOM_SECRET_KEY set): set MAILROOM_SECRET_KEY to that value and "
        f"run this again; {UNCHANGED}."
    )


async def inspect_database(url: str) -> tuple[list[str], list[str]]:
    """(tables holding rows, running processes) of the database at `url`: a process is running
    while its heartbeat row is fresh, a worker's or a server's ("server pid 12 on web-1")."""
    from sqlalchemy import inspect, text
    from sqlalchemy.ext.asyncio import create_async_engine

    from mailroom.db import HEARTBEAT_STALE_SECONDS

    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            tables = await connection.run_sync(lambda sync: inspect(sync).get_table_names())
            filled = []
            for table in sorted(tables):
                if table == "alembic_version":
                    continue
                quoted = connection.dialect.identifier_preparer.quote(table)
                if await connection.scalar(text(f"SELECT EXISTS (SELECT 1 FROM {quoted})")):
                    filled.append(table)
            running: list[str] = []
            if "workers" in tables:
                columns = await connection.run_sync(
                    lambda sync: {column["name"] for column in inspect(sync).get_columns("workers")}
                )
                # A database older than the roles (20261128_01) knows workers only.
                role_column = "role" if "role" in columns else "'worker'"
                query = f"SELECT {role_column}, host, pid FROM workers WHERE heartbeat_at > "
                if connection.dialect.name == "sqlite":
                    since = datetime.now(UTC).replace(tzinfo=None)
                    since -= timedelta(seconds=HEARTBEAT_STALE_SECONDS)
                    rows = await connection.execute(
                        text(query + ":since ORDER BY started_at"), {"since": since.isoformat(" ")}
                    )
                else:
                    stale = f"now() - interval '{HEARTBEAT_STALE_SECONDS} seconds'"
                    rows = await connection.execute(text(query + stale + " ORDER BY started_at"))
                running = [f"{role} pid {pid} on {host}" for role, host, pid in rows]
            return filled, running
    finally:
        await engine.dispose()


def check_not_running(settings: Settings) -> list[str]:
    """Refuse (BackupError) while a Mailroom process beats on the target database; the tables
    holding rows otherwise (none when there is no database yet)."""
    kind = database_kind(settings)
    path = settings.sqlite_path
    if kind == "sqlite" and (path is None or not path.is_file() or path.stat().st_size == 0):
        return []
    try:
        filled, running = asyncio.run(inspect_database(settings.resolved_database_url))
    except Exception as exc:  # any failure to open it: say which, without the URL
        where = path if kind == "sqlite" else "MAILROOM_DATABASE_URL"
        raise BackupError(f"Cannot open the target database ({where}): {exc}") from exc
    if running:
        raise BackupError(
            f"Mailroom is running on the target database ({', '.join(running)}): stop "
            f"`mailroom serve` and `mailroom worker` first; {UNCHANGED}."
        )
    return filled


def check_target(settings: Settings, checked: Checked, *, force: bool) -> None:
    kind = database_kind(settings)
    occupied: list[str] = []
    path = settings.sqlite_path
    filled = check_not_running(settings)
    if filled:
        where = str(path) if kind == "sqlite" else "MAILROOM_DATABASE_URL"
        occupied.append(f"the database ({where}) holds data in {len(filled)} tables")
    secret_file = settings.data_dir / SECRET_FILE
    if (
        checked.secret is not None
        and secret_file.is_file()
        and secret_file.read_text().strip() != checked.secret
    ):
        occupied.append(f"{secret_file} holds another secret key")
    if checked.media and settings.media_backend.strip().lower() == "local":
        media_dir = settings.resolved_media_dir
        if media_dir.is_dir() and any(path.is_file() for path in media_dir.rglob("*")):
            occupied.append(f"the media directory {media_dir} holds files")
    if occupied and not force:
        raise BackupError(
            f"The target is not empty: {'; '.join(occupied)}. Pass --force to replace it with "
            "the backup (stop Mailroom's processes first), or point MAILROOM_DATA_DIR / "
            f"MAILROOM_DATABASE_URL at an empty place; {UNCHANGED}."
        )
