"""`mailroom restore`, step 1: the archive read once, writing nothing (`check_archive`).

Every member must be a regular file with a safe name of the backup's layout (no absolute path,
no `..`, no link or device), and its size and SHA-256 must match the manifest (the last
member), which must be a Mailroom manifest of a format this version reads. A damaged or
foreign archive is refused here. `reading` and `members` serve the second reading too
(`restore.stage`), which checks every member against the same checksums.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from gzip import BadGzipFile, GzipFile
from pathlib import Path, PurePosixPath
from typing import IO, Any

from mailroom.system.backup import (
    CHUNK,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    MEDIA_PREFIX,
    PGDUMP_MEMBER,
    SECRET_MEMBER,
    SQLITE_MEMBER,
    BackupError,
    Report,
    media_name_is_safe,
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


@contextlib.contextmanager
def reading(file: Path) -> Iterator[list[str]]:
    """Errors of reading the archive (in `members` or in a member's content) as refusals;
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


def members(
    file: Path, met: list[str], progress: Callable[[int], None]
) -> Iterator[tuple[str, IO[bytes]]]:
    """(name, content) of each member, in order, each name checked safe (names go to `met`);
    `progress` gets the bytes of the archive read so far. Use inside `reading`."""
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


def stream(handle: IO[bytes], sink: Callable[[bytes], Any] | None = None) -> tuple[int, str]:
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
    with report.bar("Checking the archive", file.stat().st_size) as bar, reading(file) as met:
        for name, handle in members(file, met, lambda done: bar.update(done)):
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
            found[name] = stream(handle, keep)
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
