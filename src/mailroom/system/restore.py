"""`mailroom restore FILE`: an installation brought back from a `mailroom backup` archive.

In this order, stopping at the first refusal:
1. The whole archive is read once and nothing is written: every member must be a regular file
   with a safe name of the backup's layout (no absolute path, no `..`, no link or device), and
   its size and SHA-256 must match the manifest (the last member), which must be a Mailroom
   manifest of a format this version reads. A damaged or foreign archive is refused here.
2. The target is checked: the same kind of database as the backup's; a migration revision this
   Mailroom knows (a backup of a newer Mailroom is refused: upgrade Mailroom first); the
   secret key the restored installation will use must be the one that sealed the data; the
   database and data directory must be empty unless --force, and no Mailroom process may be
   running on the database (fresh worker heartbeats), --force or not.
3. The archive is read again, each member written to a temporary file beside its destination
   (through tarfile's `data` filter, checked against the same checksums).
4. Then the database is replaced (SQLite: an atomic rename, after the old database's WAL was
   checkpointed and its -wal/-shm removed, so the new file never meets an old log; PostgreSQL:
   `pg_restore --clean --if-exists --no-owner --single-transaction`, all or nothing), then the
   secret key (0600) and the media files, and the migrations run to head: a backup of an older
   Mailroom is upgraded.

Media files already in the target's media directory and absent from the backup are left where
they are (only possible with --force): restore never deletes an operator's files.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import secrets
import shutil
import sqlite3
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from gzip import BadGzipFile, GzipFile
from pathlib import Path, PurePosixPath
from typing import IO, Any

from mailroom.settings import Settings, private_dir
from mailroom.system.backup import (
    CHUNK,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    MEDIA_PREFIX,
    PG_MISSING,
    PGDUMP_MEMBER,
    SECRET_FILE,
    SECRET_MEMBER,
    SQLITE_MEMBER,
    BackupError,
    Report,
    counted,
    database_kind,
    fsync_dir,
    media_name_is_safe,
    pg_connection,
    private_file,
    run_pg_tool,
    secret_fingerprint,
    show_command,
)

MAX_MANIFEST = 64 << 20
MAX_SECRET = 4096
UNCHANGED = "nothing was changed"
NOT_A_BACKUP = "{file} is not a Mailroom backup ({why}); " + UNCHANGED + "."
DAMAGED = "{file} is damaged ({why}); " + UNCHANGED + "."
CHECKSUM = (
    "{file} is damaged: {name} does not match its checksum in the manifest; " + UNCHANGED + "."
)
UNSAFE = "{file} holds an unsafe member {name!r} (absolute, `..`, a link or a device); " + (
    UNCHANGED + "."
)


@dataclass
class Checked:
    """What the first reading found: the manifest and the backup's secret key file."""

    manifest: dict[str, Any]
    files: dict[str, tuple[int, str]]  # name -> (size, sha256)
    secret: str | None = None

    @property
    def kind(self) -> str:
        return str(self.manifest["database"]["kind"])

    @property
    def revision(self) -> str | None:
        revision = self.manifest["database"].get("revision")
        return str(revision) if revision else None

    @property
    def media(self) -> list[str]:
        return [name for name in self.files if name.startswith(MEDIA_PREFIX)]


@dataclass
class Staged:
    """Temporary files written beside their destinations, waiting to be put in place."""

    database: Path | None = None
    secret: Path | None = None
    media: list[tuple[Path, Path]] = field(default_factory=list)  # (temporary, final)

    def temporaries(self) -> list[Path]:
        found = [path for path in (self.database, self.secret) if path is not None]
        return found + [temporary for temporary, _final in self.media]


# ---------------------------------------------------------------- reading the archive


@contextlib.contextmanager
def _reading(file: Path) -> Iterator[list[str]]:
    """Errors of reading the archive (in `_members` or in a member's content) as refusals;
    yields the list of member names met so far."""
    met: list[str] = []
    try:
        yield met
    except (BadGzipFile, EOFError, zlib.error, tarfile.TarError) as exc:
        why = str(exc) or type(exc).__name__
        if not met and isinstance(exc, BadGzipFile | tarfile.ReadError):
            why = "not a gzip-compressed tar archive"
            raise BackupError(NOT_A_BACKUP.format(file=file, why=why)) from exc
        raise BackupError(DAMAGED.format(file=file, why=why)) from exc


def _members(
    file: Path, met: list[str], progress: Callable[[int], None]
) -> Iterator[tuple[str, IO[bytes]]]:
    """(name, content) of each member, in order, each name checked safe (names go to `met`);
    `progress` gets the bytes of the archive read so far. Use inside `_reading`."""
    with open(file, "rb") as raw, GzipFile(fileobj=raw, mode="rb") as unzipped:
        with tarfile.open(fileobj=unzipped, mode="r|") as tar:
            for member in tar:
                name = member.name
                met.append(name)
                path = PurePosixPath(name)
                if (
                    not member.isreg()
                    or path.is_absolute()
                    or ".." in path.parts
                    or "\\" in name
                    or name != path.as_posix()
                ):
                    raise BackupError(UNSAFE.format(file=file, name=name))
                handle = tar.extractfile(member)
                assert handle is not None  # a regular file
                yield name, handle
                progress(raw.tell())
        # tarfile stops at the end-of-archive blocks: reading on to the end of the gzip
        # stream makes GzipFile check its CRC-32 (the manifest included).
        while unzipped.read(CHUNK):
            pass


def _stream(handle: IO[bytes], sink: Callable[[bytes], Any] | None = None) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    while chunk := handle.read(CHUNK):
        digest.update(chunk)
        size += len(chunk)
        if sink is not None:
            sink(chunk)
    return size, digest.hexdigest()


def _known_name(name: str) -> bool:
    if name in (SQLITE_MEMBER, PGDUMP_MEMBER, SECRET_MEMBER):
        return True
    return name.startswith(MEDIA_PREFIX) and media_name_is_safe(name)


def check_archive(file: Path, report: Report) -> Checked:
    """Read the whole archive, writing nothing: refuse a foreign, damaged or unsafe one."""
    if not file.is_file():
        raise BackupError(f"{file} is not a file.")
    found: dict[str, tuple[int, str]] = {}
    manifest_data: bytes | None = None
    secret: bytes | None = None
    with report.bar("Checking the archive", file.stat().st_size) as bar, _reading(file) as met:
        for name, handle in _members(file, met, lambda done: bar.update(done)):
            if manifest_data is not None:
                raise BackupError(DAMAGED.format(file=file, why=f"{name} after the manifest"))
            if name == MANIFEST:
                manifest_data = handle.read(MAX_MANIFEST + 1)
                if len(manifest_data) > MAX_MANIFEST:
                    raise BackupError(NOT_A_BACKUP.format(file=file, why="a huge manifest"))
                continue
            if not _known_name(name):
                why = f"it holds {name!r}, which a Mailroom backup does not"
                raise BackupError(NOT_A_BACKUP.format(file=file, why=why))
            if name in found:
                raise BackupError(DAMAGED.format(file=file, why=f"{name} is there twice"))
            kept = bytearray()
            keep = kept.extend if name == SECRET_MEMBER else None
            found[name] = _stream(handle, keep)
            if name == SECRET_MEMBER:
                if len(kept) > MAX_SECRET:
                    raise BackupError(DAMAGED.format(file=file, why="an oversized secret key"))
                secret = bytes(kept)
    if manifest_data is None:
        why = "no manifest.json: cut short, or not made by `mailroom backup`"
        raise BackupError(NOT_A_BACKUP.format(file=file, why=why))
    manifest = _read_manifest(file, manifest_data)
    listed: dict[str, tuple[int, str]] = {}
    for entry in manifest["files"]:
        listed[str(entry["path"])] = (int(entry["size"]), str(entry["sha256"]))
    for name, expected in listed.items():
        if name not in found:
            raise BackupError(DAMAGED.format(file=file, why=f"{name} is missing"))
        if found[name] != expected:
            raise BackupError(CHECKSUM.format(file=file, name=name))
    for name in found:
        if name not in listed:
            raise BackupError(DAMAGED.format(file=file, why=f"{name} is not in the manifest"))
    database = PGDUMP_MEMBER if manifest["database"]["kind"] == "postgresql" else SQLITE_MEMBER
    if database not in found:
        raise BackupError(DAMAGED.format(file=file, why="it holds no database"))
    text = secret.decode(errors="replace").strip() if secret is not None else None
    return Checked(manifest, found, text)


def _read_manifest(file: Path, data: bytes) -> dict[str, Any]:
    try:
        manifest = json.loads(data)
    except ValueError:
        raise BackupError(NOT_A_BACKUP.format(file=file, why="its manifest is not JSON")) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(NOT_A_BACKUP.format(file=file, why="another program's manifest"))
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise BackupError(
            f"{file} is a backup of format {version!r}, made by Mailroom "
            f"{manifest.get('mailroom_version')}; this Mailroom reads format {FORMAT_VERSION} "
            f"at most: upgrade Mailroom first; {UNCHANGED}."
        )
    database = manifest.get("database")
    files = manifest.get("files")
    valid = (
        isinstance(database, dict)
        and database.get("kind") in ("sqlite", "postgresql")
        and isinstance(files, list)
        and all(
            isinstance(entry, dict) and {"path", "size", "sha256"} <= set(entry) for entry in files
        )
    )
    if not valid:
        raise BackupError(DAMAGED.format(file=file, why="its manifest is incomplete"))
    return manifest


# ---------------------------------------------------------------- checking the target


def _check_revision(checked: Checked) -> None:
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


def _check_secret(settings: Settings, checked: Checked) -> None:
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


async def _inspect_database(url: str) -> tuple[list[str], list[str]]:
    """(tables holding rows, running processes) of the database at `url`."""
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
                if connection.dialect.name == "sqlite":
                    since = datetime.now(UTC).replace(tzinfo=None)
                    since -= timedelta(seconds=HEARTBEAT_STALE_SECONDS)
                    query = text("SELECT host, pid FROM workers WHERE heartbeat_at > :since")
                    rows = await connection.execute(query, {"since": since.isoformat(" ")})
                else:
                    query = text(
                        "SELECT host, pid FROM workers WHERE heartbeat_at > "
                        f"now() - interval '{HEARTBEAT_STALE_SECONDS} seconds'"
                    )
                    rows = await connection.execute(query)
                running = [f"pid {pid} on {host}" for host, pid in rows]
            return filled, running
    finally:
        await engine.dispose()


def _check_target(settings: Settings, checked: Checked, *, force: bool) -> None:
    kind = database_kind(settings)
    url = settings.resolved_database_url
    occupied: list[str] = []
    path = settings.sqlite_path
    if kind == "postgresql" or (path is not None and path.is_file() and path.stat().st_size > 0):
        try:
            filled, running = asyncio.run(_inspect_database(url))
        except Exception as exc:  # any failure to open it: say which, without the URL
            where = path if kind == "sqlite" else "MAILROOM_DATABASE_URL"
            raise BackupError(f"Cannot open the target database ({where}): {exc}") from exc
        if running:
            raise BackupError(
                f"Mailroom is running on the target database ({', '.join(running)}): stop "
                f"`mailroom serve` and `mailroom worker` first; {UNCHANGED}."
            )
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


# ---------------------------------------------------------------- restoring


def _temporary_beside(final: Path, *, private: bool = True) -> Path:
    """A new empty file beside `final` (0600; its folder made 0700 unless `private` is False:
    media are public files, made as the media store makes them)."""
    if private:
        private_dir(final.parent)
    else:
        final.parent.mkdir(parents=True, exist_ok=True)
    temporary = final.with_name(f".{final.name}.restoring-{secrets.token_hex(4)}")
    private_file(temporary)
    return temporary


def _destination(settings: Settings, name: str) -> tuple[Path, Path]:
    """(root directory, final path) of a member: nothing lands outside its root."""
    if name == SQLITE_MEMBER:
        assert settings.sqlite_path is not None
        return settings.sqlite_path.parent, settings.sqlite_path
    if name == PGDUMP_MEMBER:
        return settings.data_dir, settings.data_dir / "restore.pgdump"
    if name == SECRET_MEMBER:
        return settings.data_dir, settings.data_dir / SECRET_FILE
    root = settings.resolved_media_dir
    return root, root / name[len(MEDIA_PREFIX) :]


def _stage(file: Path, settings: Settings, checked: Checked, report: Report) -> Staged:
    """Write every member to a temporary file beside its destination, checking it again."""
    staged = Staged()
    local_media = settings.media_backend.strip().lower() == "local"
    try:
        with report.bar("Unpacking", file.stat().st_size) as bar, _reading(file) as met:
            for name, handle in _members(file, met, lambda done: bar.update(done)):
                if name == MANIFEST or (name.startswith(MEDIA_PREFIX) and not local_media):
                    continue
                root, final = _destination(settings, name)
                member = tarfile.TarInfo(os.path.relpath(final, root))
                member.size = checked.files[name][0]
                try:  # tarfile's `data` filter: refuses a path resolving outside `root`
                    tarfile.data_filter(member, str(root))
                except tarfile.FilterError as exc:
                    raise BackupError(UNSAFE.format(file=file, name=name)) from exc
                temporary = _temporary_beside(final, private=not name.startswith(MEDIA_PREFIX))
                if name in (SQLITE_MEMBER, PGDUMP_MEMBER):
                    staged.database = temporary
                elif name == SECRET_MEMBER:
                    staged.secret = temporary
                else:
                    staged.media.append((temporary, final))
                with open(temporary, "wb") as out:
                    written = _stream(handle, out.write)
                    out.flush()
                    os.fsync(out.fileno())
                if written != checked.files[name]:  # changed since it was checked
                    raise BackupError(CHECKSUM.format(file=file, name=name))
    except BaseException:
        for temporary in staged.temporaries():
            temporary.unlink(missing_ok=True)
        raise
    return staged


def _replace_sqlite(temporary: Path, final: Path) -> None:
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


def _pg_restore(settings: Settings, dump: Path, report: Report) -> None:
    options, env = pg_connection(settings.resolved_database_url)
    command = [
        "pg_restore",
        "--clean",
        "--if-exists",
        "--no-owner",
        "--single-transaction",  # all or nothing: a failed restore leaves the database as it was
        *options,
        str(dump),
    ]
    show_command(report, command, env)
    executable = shutil.which("pg_restore")
    if executable is None:
        raise BackupError(PG_MISSING.format(tool="pg_restore"))
    try:
        run_pg_tool([executable, *command[1:]], env, report, dump)
    except BackupError as exc:
        raise BackupError(
            f"{exc} (one transaction: the database was left as it was; {UNCHANGED})"
        ) from exc


def restore(
    settings: Settings, file: Path, report: Report, *, force: bool = False, check: bool = False
) -> dict[str, Any]:
    """Check the archive and the target, then restore (unless `check`); returns the manifest."""
    file = file.expanduser().absolute()
    kind = database_kind(settings)
    checked = check_archive(file, report)
    manifest = checked.manifest
    report.say(
        f"{file}: a backup of {manifest.get('created_at')} by Mailroom "
        f"{manifest.get('mailroom_version')} ({checked.kind}, revision "
        f"{checked.revision or 'none'}); {counted(len(checked.files), 'file')}, every checksum "
        "matches."
    )
    if checked.kind != kind:
        raise BackupError(
            f"The backup holds a {checked.kind} database and MAILROOM_DATABASE_URL names a "
            f"{kind} one: restore into the same kind of database; {UNCHANGED}."
        )
    _check_revision(checked)
    _check_secret(settings, checked)
    _check_target(settings, checked, force=force)
    if kind == "postgresql" and shutil.which("pg_restore") is None:
        raise BackupError(PG_MISSING.format(tool="pg_restore") + f" ({UNCHANGED})")
    if check:
        report.say("The archive can be restored here (nothing was changed: --check).")
        return manifest
    private_dir(settings.data_dir)
    staged = _stage(file, settings, checked, report)
    try:
        assert staged.database is not None
        if kind == "sqlite":
            assert settings.sqlite_path is not None
            _replace_sqlite(staged.database, settings.sqlite_path)
            report.say(f"Restored the database to {settings.sqlite_path}.")
        else:
            _pg_restore(settings, staged.database, report)
            report.say("Restored the PostgreSQL database.")
        if staged.secret is not None:
            final = settings.data_dir / SECRET_FILE
            os.chmod(staged.secret, 0o600)
            os.replace(staged.secret, final)
            fsync_dir(final.parent)
            report.say(f"Restored the secret key to {final} (mode 0600).")
        umask = os.umask(0o077)
        os.umask(umask)
        for temporary, final in staged.media:
            os.chmod(temporary, 0o666 & ~umask)  # as the media store writes them
            os.replace(temporary, final)
        if staged.media:
            fsync_dir(settings.resolved_media_dir)
        skipped = len(checked.media) - len(staged.media)
        if staged.media:
            restored = counted(len(staged.media), "media file")
            report.say(f"Restored {restored} to {settings.resolved_media_dir}.")
        if skipped:
            report.say(
                f"{counted(skipped, 'media file')} of the backup not restored: image hosting here is "
                f"{settings.media_backend!r}, not local."
            )
    finally:
        for temporary in staged.temporaries():
            temporary.unlink(missing_ok=True)
    _migrate(settings, checked, report)
    return manifest


def _migrate(settings: Settings, checked: Checked, report: Report) -> None:
    from mailroom.migrations import current_revision, upgrade

    url = settings.resolved_database_url
    try:
        asyncio.run(upgrade(url))
        now = asyncio.run(current_revision(url))
    except Exception as exc:
        raise BackupError(
            f"The backup was restored, but migrating its database failed: {exc}. Run "
            "`mailroom db upgrade` once the cause is fixed."
        ) from exc
    if now == checked.revision:
        report.say(f"The database is at the latest revision ({now}).")
    else:
        report.say(f"Migrated the database from {checked.revision or 'none'} to {now} (head).")
