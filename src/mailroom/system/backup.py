"""`mailroom backup FILE`: one archive holding everything needed to bring an installation back.

The archive is a gzip-compressed tar, written as a stream (no file is ever held whole in
memory), with these members in this order:

    database/mailroom.sqlite3   the SQLite database, copied with SQLite's online backup API
    database/mailroom.pgdump    or, on PostgreSQL, `pg_dump --format=custom --no-owner` output
    data/secret_key             the installation secret the data directory holds
    media/<key>                 the hosted images of the local media store
    manifest.json               format and Mailroom versions, database kind, migration revision
                                at backup time, created_at, and every file's size and SHA-256

The manifest comes last because its checksums are computed while the files stream into the
archive, so each file is read once; `restore` reads the whole archive and checks every
checksum against it before it changes anything (see `restore.py`).

Consistency while the server and workers keep writing:
- SQLite: the copy is made inside one read transaction held from the first page to the last.
  In WAL mode (Mailroom's connections always set it) writers go on committing meanwhile, and
  the copy is the database exactly as of the transaction's start. Without that transaction
  `Connection.backup` would restart its page steps after every write of another connection
  and, under steady traffic, might never finish.
- PostgreSQL: pg_dump works in one snapshot of its own.
- The media files are archived after the database: an image uploaded meanwhile is an extra
  file in the archive, never a row without its file.

What is left out of the data directory, and why:
- the live SQLite files (`mailroom.db`, `-wal`, `-shm`): copied as files while the server
  writes they would be torn; the online backup's copy replaces them.
- `outbox/`: the file outbox, where messages go when no SMTP relay is configured. It is a
  record of mail already "sent" (a development sink), not state anything reads back, and it
  grows without bound.
- `imports/` and `platform_imports/`: uploads the dashboard keeps for a day between checking
  a file and importing it; the person uploads again.
- `metrics/`: Prometheus multiprocess files of the processes running now, meaningless after a
  restore.
- temporary files (`*.part`, names starting with a dot): files half written at that moment.
- media in an S3-compatible store: they live in the bucket; its own versioning or replication
  backs them up (the command says so).
- a MAILROOM_SECRET_KEY set in the environment: configuration, kept with the rest of the
  operator's configuration. The manifest keeps its fingerprint (an HMAC of a fixed text, which
  does not reveal the secret), so that `restore` refuses to put the data under another secret:
  suppressed addresses would stop matching and DKIM keys and sealed credentials would not open.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from gzip import GzipFile
from pathlib import Path, PurePosixPath
from typing import IO, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from mailroom import __version__
from mailroom.settings import Settings

FORMAT = "mailroom-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
SQLITE_MEMBER = "database/mailroom.sqlite3"
PGDUMP_MEMBER = "database/mailroom.pgdump"
SECRET_MEMBER = "data/secret_key"
MEDIA_PREFIX = "media/"
SECRET_FILE = "secret_key"  # in the data directory (Settings.resolved_secret_key)
CHUNK = 1 << 20
SQLITE_STEP_PAGES = 1024  # pages copied per step of the online backup (4 MB at 4 KB pages)
GZIP_LEVEL = 6  # zlib's default: most of level 9's ratio at a fraction of its time

PG_MISSING = (
    "{tool} is not installed (or not on PATH). Install PostgreSQL's client programs, of the "
    "server's major version or newer (Debian and Ubuntu: `apt install postgresql-client`), "
    "then run this again."
)
FINGERPRINT_TEXT = b"mailroom backup: which installation secret sealed this data"


class BackupError(Exception):
    """A refusal or a failure, with the message the operator sees (the command exits 1)."""


# ---------------------------------------------------------------- output


class Bar:
    """One progress bar (bytes)."""

    def __init__(self, progress: Progress, task: TaskID) -> None:
        self.progress = progress
        self.task = task

    def advance(self, amount: int) -> None:
        self.progress.advance(self.task, amount)

    def update(self, completed: int, total: int | None = None) -> None:
        if total is None:
            self.progress.update(self.task, completed=completed)
        else:
            self.progress.update(self.task, completed=completed, total=total)


@dataclass
class Report:
    """Where the commands speak: `out` for what was done (stdout), `err` for progress bars."""

    out: Console
    err: Console

    def say(self, text: str) -> None:
        self.out.print(text, markup=False, highlight=False, soft_wrap=True)

    @contextmanager
    def bar(self, description: str, total: int | None, *, spinner: bool = False) -> Iterator[Bar]:
        columns: tuple[ProgressColumn, ...] = (
            (SpinnerColumn(), TextColumn("{task.description}"))
            if spinner
            else (TextColumn("{task.description}"), BarColumn())
        )
        with Progress(
            *columns, DownloadColumn(), TimeElapsedColumn(), console=self.err, transient=True
        ) as progress:
            yield Bar(progress, progress.add_task(description, total=total))


# ---------------------------------------------------------------- shared with restore


def secret_fingerprint(secret: str) -> str:
    """Which secret key sealed the data, without revealing it."""
    return hmac.new(secret.encode(), FINGERPRINT_TEXT, hashlib.sha256).hexdigest()[:32]


def database_kind(settings: Settings) -> str:
    url = settings.resolved_database_url
    if settings.is_sqlite:
        if settings.sqlite_path is None:
            raise BackupError("An in-memory SQLite database cannot be backed up or restored.")
        return "sqlite"
    if url.startswith("postgresql"):
        return "postgresql"
    raise BackupError(f"Unsupported database URL scheme {url.split(':', 1)[0]!r}.")


def pg_connection(url: str) -> tuple[list[str], dict[str, str]]:
    """The libpq options naming the database of `url`, and the environment for the rest: the
    password travels in PGPASSWORD, never on the command line (other users can read a
    process's arguments)."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    query = {key: str(value) for key, value in parsed.query.items()}
    options: list[str] = []
    host = parsed.host or query.get("host")  # `?host=/run/postgresql`: a socket directory
    if host:
        options.append(f"--host={host}")
    if parsed.port:
        options.append(f"--port={parsed.port}")
    if parsed.username:
        options.append(f"--username={parsed.username}")
    if parsed.database:
        options.append(f"--dbname={parsed.database}")
    env = {"PGPASSWORD": parsed.password} if parsed.password else {}
    ssl = query.get("sslmode") or query.get("ssl")
    if ssl:
        modes = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
        env["PGSSLMODE"] = ssl if ssl in modes else "require"
    return options, env


def show_command(report: Report, command: list[str], env: dict[str, str]) -> None:
    note = " (password passed in PGPASSWORD)" if "PGPASSWORD" in env else ""
    report.say(f"Running: {shlex.join(command)}{note}")


def run_pg_tool(command: list[str], env: dict[str, str], report: Report, watch: Path) -> None:
    """Run pg_dump or pg_restore with a spinner that shows how large `watch` is (the dump
    being written or read), its errors kept in a file (a pipe left unread could fill up)."""
    with tempfile.TemporaryFile() as errors:
        # The command is ours: the tool's path from shutil.which and options from the URL.
        process = subprocess.Popen(  # noqa: S603
            command, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=errors
        )
        try:
            with report.bar(f"{Path(command[0]).name}", None, spinner=True) as bar:
                while process.poll() is None:
                    with suppress(FileNotFoundError):
                        bar.update(watch.stat().st_size)
                    time.sleep(0.2)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        if process.returncode != 0:
            errors.seek(0)
            said = errors.read().decode(errors="replace").strip()[-2000:]
            name = Path(command[0]).name
            raise BackupError(f"{name} failed (exit {process.returncode}): {said or 'no message'}")


def fsync_dir(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def private_file(path: Path) -> None:
    """Create `path` empty, readable by the owner only (it never exists readable by others)."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def media_files(settings: Settings) -> list[tuple[str, Path]]:
    """(archive name, path) of every hosted image of the local store, temporaries left out."""
    if settings.media_backend.strip().lower() != "local":
        return []
    root = settings.resolved_media_dir
    if not root.is_dir():
        return []
    found = []
    for folder, folders, names in os.walk(root):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in sorted(names):
            path = Path(folder) / name
            if name.startswith(".") or name.endswith(".part") or not path.is_file():
                continue
            if path.is_symlink():
                continue
            relative = path.relative_to(root).as_posix()
            found.append((MEDIA_PREFIX + relative, path))
    return found


def media_name_is_safe(name: str) -> bool:
    relative = PurePosixPath(name[len(MEDIA_PREFIX) :])
    return bool(relative.parts) and all(
        part not in ("", ".", "..") and not part.startswith(".") for part in relative.parts
    )


# ---------------------------------------------------------------- backup


def backup(
    settings: Settings, file: Path, report: Report, *, force: bool = False
) -> dict[str, Any]:
    """Write the archive to `file` (through a temporary name: a failed backup leaves no
    archive behind under that name); return its manifest."""
    kind = database_kind(settings)
    file = file.expanduser().absolute()
    if file.is_dir():
        raise BackupError(f"{file} is a directory: give the archive's file name.")
    if file.exists() and not force:
        raise BackupError(f"{file} exists: choose another name, or pass --force to replace it.")
    if not file.parent.is_dir():
        raise BackupError(f"The directory {file.parent} does not exist.")
    work = Path(tempfile.mkdtemp(prefix=".mailroom-backup-", dir=file.parent))
    started = datetime.now(UTC)  # the database copy is of this moment (within a second)
    try:
        copy = work / "database"
        if kind == "sqlite":
            assert settings.sqlite_path is not None
            revision = snapshot_sqlite(settings.sqlite_path, copy, report)
            members = [(SQLITE_MEMBER, copy)]
        else:
            revision = dump_postgresql(settings.resolved_database_url, copy, report)
            members = [(PGDUMP_MEMBER, copy)]
        secret_path = settings.data_dir / SECRET_FILE
        if secret_path.is_file():
            members.append((SECRET_MEMBER, secret_path))
        media = media_files(settings)
        members.extend(media)
        secret = settings.secret_key or (
            secret_path.read_text().strip() if secret_path.is_file() else ""
        )
        manifest: dict[str, Any] = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "mailroom_version": __version__,
            "created_at": started.isoformat(timespec="seconds").replace("+00:00", "Z"),
            "database": {"kind": kind, "revision": revision},
            "secret_key": {
                "source": "environment" if settings.secret_key else "file" if secret else None,
                "fingerprint": secret_fingerprint(secret) if secret else None,
            },
            "media": {"backend": settings.media_backend.strip().lower()},
        }
        partial = work / "archive.tar.gz"
        write_archive(partial, members, manifest, report)
        os.replace(partial, file)
        fsync_dir(file.parent)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _summarise(file, manifest, settings, report)
    return manifest


def snapshot_sqlite(path: Path, copy: Path, report: Report) -> str | None:
    """Copy the database at `path` to `copy` (a new file, 0600) with the online backup API,
    in one read transaction; return its migration revision, read in that transaction."""
    if not path.is_file() or path.stat().st_size == 0:
        raise BackupError(
            f"There is no database at {path} (see MAILROOM_DATA_DIR and MAILROOM_DATABASE_URL): "
            "nothing to back up."
        )
    source = sqlite3.connect(path, isolation_level=None, timeout=60)
    try:
        source.execute("BEGIN")
        # The first read starts the snapshot every later step copies from.
        source.execute("SELECT count(*) FROM sqlite_master").fetchone()
        revision = sqlite_revision(source)
        page_size = int(source.execute("PRAGMA page_size").fetchone()[0])
        private_file(copy)
        target = sqlite3.connect(copy, isolation_level=None)
        try:
            with report.bar("Copying the database", None) as bar:

                def step(_status: int, remaining: int, total: int) -> None:
                    bar.update((total - remaining) * page_size, total * page_size)

                source.backup(target, pages=SQLITE_STEP_PAGES, progress=step)
            # One self-contained file: the copy carries no -wal beside it.
            target.execute("PRAGMA journal_mode=DELETE")
        finally:
            target.close()
        source.execute("COMMIT")
    except sqlite3.Error as exc:
        raise BackupError(f"The SQLite database at {path} could not be copied: {exc}") from exc
    finally:
        source.close()
    return revision


def sqlite_revision(connection: sqlite3.Connection) -> str | None:
    try:
        rows = connection.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.OperationalError:  # never migrated
        return None
    return ",".join(sorted(str(row[0]) for row in rows)) or None


def dump_postgresql(url: str, dump: Path, report: Report) -> str | None:
    """Run pg_dump into `dump` (custom format, no owners); return the migration revision."""
    from mailroom.migrations import current_revision

    options, env = pg_connection(url)
    command = ["pg_dump", "--format=custom", "--no-owner", *options, f"--file={dump}"]
    show_command(report, command, env)
    executable = shutil.which("pg_dump")
    if executable is None:
        raise BackupError(PG_MISSING.format(tool="pg_dump"))
    try:
        revision = asyncio.run(current_revision(url))
    except Exception as exc:  # any failure to connect: say which, without the URL
        raise BackupError(f"Cannot read the PostgreSQL database: {exc}") from exc
    run_pg_tool([executable, *command[1:]], env, report, dump)
    return revision


class _Hashing:
    """A file read once: hashed and counted on the way into the archive."""

    def __init__(self, handle: IO[bytes], advance: Callable[[int], None]) -> None:
        self.handle = handle
        self.advance = advance
        self.sha256 = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.sha256.update(data)
        self.advance(len(data))
        return data


def _member(name: str, size: int, mtime: float) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = int(mtime)
    info.mode = 0o600
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_archive(
    target: Path, members: list[tuple[str, Path]], manifest: dict[str, Any], report: Report
) -> None:
    """Stream `members` into a new tar.gz at `target`, then the manifest with their sizes and
    checksums. A media file deleted since it was listed is left out (the database copy,
    taken before, may still name it: its row then shows a missing picture, as the deletion
    would have left it)."""
    sizes = []
    for _name, path in members:
        try:
            sizes.append(path.stat().st_size)
        except FileNotFoundError:
            sizes.append(0)
    files: list[dict[str, Any]] = []
    private_file(target)
    with open(target, "wb") as raw:
        with (
            GzipFile(fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL, mtime=0) as zipped,
            tarfile.open(fileobj=zipped, mode="w|", format=tarfile.PAX_FORMAT) as tar,
            report.bar("Writing the archive", sum(sizes)) as bar,
        ):
            for name, path in members:
                try:
                    handle = open(path, "rb")  # noqa: SIM115 (closed below, after the stat)
                except FileNotFoundError:
                    if name.startswith(MEDIA_PREFIX):
                        continue
                    raise
                with handle:
                    stat = os.fstat(handle.fileno())
                    reader = _Hashing(handle, bar.advance)
                    tar.addfile(_member(name, stat.st_size, stat.st_mtime), reader)
                files.append(
                    {"path": name, "size": stat.st_size, "sha256": reader.sha256.hexdigest()}
                )
            manifest["files"] = files
            data = json.dumps(manifest, indent=2).encode()
            tar.addfile(_member(MANIFEST, len(data), time.time()), _Bytes(data))
        raw.flush()
        os.fsync(raw.fileno())


class _Bytes:
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.offset = 0

    def read(self, size: int = -1) -> bytes:
        end = len(self.data) if size < 0 else self.offset + size
        chunk = bytes(self.data[self.offset : end])
        self.offset += len(chunk)
        return chunk


def _summarise(file: Path, manifest: dict[str, Any], settings: Settings, report: Report) -> None:
    files = manifest["files"]
    media = sum(1 for entry in files if entry["path"].startswith(MEDIA_PREFIX))
    kind = "SQLite" if manifest["database"]["kind"] == "sqlite" else "PostgreSQL"
    parts = [f"the {kind} database (revision {manifest['database']['revision'] or 'none'})"]
    if any(entry["path"] == SECRET_MEMBER for entry in files):
        parts.append("the secret key")
    parts.append(counted(media, "media file"))
    size = file.stat().st_size
    report.say(f"Backed up {', '.join(parts)} to {file} ({_bytes(size)}).")
    if manifest["secret_key"]["source"] == "environment":
        report.say(
            "The secret key comes from MAILROOM_SECRET_KEY and is not in the archive: keep it "
            "with the backup; restoring needs the same value."
        )
    backend = manifest["media"]["backend"]
    if backend == "s3":
        report.say(
            f"Media are in the S3 bucket {settings.s3_bucket!r}, not in the archive: back the "
            "bucket up with its own tools (versioning or replication)."
        )


def counted(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def _bytes(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:,.0f} {unit}" if unit == "bytes" else f"{value:,.1f} {unit}"
        value /= 1000
    return f"{size} bytes"
