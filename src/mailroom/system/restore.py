"""`mailroom restore FILE`: an installation brought back from a `mailroom backup` archive.

In this order, stopping at the first refusal:
1. The whole archive is read once and nothing is written (`restore_archive`): a damaged,
   foreign or unsafe archive is refused, every member checked against the manifest.
2. The target is checked (`restore_target`): the same kind of database as the backup's, a
   migration revision this Mailroom knows, the secret key that sealed the data, an empty
   database and data directory unless --force, and no Mailroom process running on the
   database (a fresh heartbeat of a worker or a server), --force or not.
3. The archive is read again, each member written to a temporary file beside its destination
   (through tarfile's `data` filter, checked against the same checksums): here.
4. Then the database is replaced (`restore_database`; SQLite: an atomic rename; PostgreSQL:
   everything in Mailroom's schema dropped and the dump played in, one transaction, all or
   nothing), then the secret key (0600) and the media files, and the migrations run to head:
   a backup of an older Mailroom is upgraded.

Media files already in the target's media directory and absent from the backup are left where
they are (only possible with --force): restore never deletes an operator's files.
"""

from __future__ import annotations

import os
import secrets
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mailroom.settings import Settings, private_dir
from mailroom.system.backup import (
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
    private_file,
)
from mailroom.system.restore_archive import (
    CHECKSUM,
    UNCHANGED,
    UNSAFE,
    Checked,
    check_archive,
    members,
    reading,
    stream,
)
from mailroom.system.restore_database import (
    migrate,
    missing_postgresql_tool,
    replace_sqlite,
    restore_postgresql,
)
from mailroom.system.restore_target import (
    check_not_running,
    check_revision,
    check_secret,
    check_target,
)

__all__ = ["Checked", "Staged", "check_archive", "restore"]


@dataclass
class Staged:
    """Temporary files written beside their destinations, waiting to be put in place."""

    database: Path | None = None
    secret: Path | None = None
    media: list[tuple[Path, Path]] = field(default_factory=list)  # (temporary, final)

    def temporaries(self) -> list[Path]:
        found = [path for path in (self.database, self.secret) if path is not None]
        return found + [temporary for temporary, _final in self.media]


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
        with report.bar("Unpacking", file.stat().st_size) as bar, reading(file) as met:
            for name, handle in members(file, met, lambda done: bar.update(done)):
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
                    written = stream(handle, out.write)
                    out.flush()
                    os.fsync(out.fileno())
                if written != checked.files[name]:  # changed since it was checked
                    raise BackupError(CHECKSUM.format(file=file, name=name))
    except BaseException:
        for temporary in staged.temporaries():
            temporary.unlink(missing_ok=True)
        raise
    return staged


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
    check_revision(checked)
    check_secret(settings, checked)
    check_target(settings, checked, force=force)
    missing = missing_postgresql_tool() if kind == "postgresql" else None
    if missing is not None:
        raise BackupError(PG_MISSING.format(tool=missing) + f" ({UNCHANGED})")
    if check:
        report.say("The archive can be restored here (nothing was changed: --check).")
        return manifest
    private_dir(settings.data_dir)
    staged = _stage(file, settings, checked, report)
    try:
        # Unpacking may have taken minutes: a server started meanwhile is refused now, before
        # anything is replaced, not found writing into a database replaced under it (the
        # staged files themselves now sit in the target: only the processes are looked at).
        check_not_running(settings)
        assert staged.database is not None
        if kind == "sqlite":
            assert settings.sqlite_path is not None
            replace_sqlite(staged.database, settings.sqlite_path)
            report.say(f"Restored the database to {settings.sqlite_path}.")
        else:
            restore_postgresql(settings, staged.database, report)
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
    migrate(settings, checked, report)
    return manifest
