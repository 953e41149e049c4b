"""Reading the CSV files of an uploaded `.zip` safely (the standard library's `zipfile`).

Limits (the issue's upload limits):
- the archive itself: at most 5 MB (413);
- every entry's path checked first: absolute (`/x`, `\\x`), a drive letter (`C:x`) or a `..`
  component anywhere refuses the whole upload (400 "Archive entry outside the archive: <name>"),
  whatever the entry is; nothing is ever written to disk, the check keeps names honest;
- the CSV entries' bytes are counted as they are decompressed, in chunks with a running total
  (the sizes the headers declare are only used to refuse early, never trusted): more than 50 MB
  in all, or one entry expanding to more than 200 times its compressed size (once past 1 MB),
  is a zip bomb (413 "Archive too large: ...");
- directories, macOS resource forks (`__MACOSX/`, `._name`) and entries that are not `.csv` are
  ignored unread, so a nested zip is never opened;
- bytes that are not a zip archive, an encrypted entry or a corrupt one (bad CRC, unsupported
  compression): 400.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib

from mailroom.platform_imports.records import ExportUnreadable

MAX_ARCHIVE_BYTES = 5 * 1024 * 1024
MAX_UNCOMPRESSED_BYTES = 50 * 1024 * 1024
MAX_RATIO = 200  # uncompressed / compressed, per entry (CSV exports compress 5-20 times)
RATIO_FLOOR = 1024 * 1024  # an entry is not ratio-checked below this many bytes
MAX_ENTRIES = 1000
CHUNK = 64 * 1024

ARCHIVE_TOO_LARGE = "Archive too large: .zip uploads are limited to 5 MB"
ARCHIVE_EXPANDS_TOO_MUCH = "Archive too large: its files are limited to 50 MB uncompressed"
ARCHIVE_BOMB = "Archive too large: {name} expands more than 200 times its compressed size"
ARCHIVE_TOO_MANY_ENTRIES = "Archive too large: at most 1,000 files"
OUTSIDE_ARCHIVE = "Archive entry outside the archive: {name}"
NOT_A_ZIP = "The file is not a readable .zip archive"
ENTRY_UNREADABLE = "Archive entry unreadable: {name}"
ENTRY_REPEATED = "Archive entry repeated: {name}"

_DRIVE = re.compile(r"^[A-Za-z]:")
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty archive


def looks_like_zip(filename: str, content: bytes) -> bool:
    """A `.zip` name, or zip bytes whatever the name says."""
    return filename.lower().endswith(".zip") or content[:4] in ZIP_MAGIC


def outside_archive(name: str) -> bool:
    path = name.replace("\\", "/")
    return path.startswith("/") or bool(_DRIVE.match(path)) or ".." in path.split("/")


def _ignored(name: str) -> bool:
    path = name.replace("\\", "/")
    base = path.rsplit("/", 1)[-1]
    return (
        path.endswith("/")
        or path.split("/", 1)[0] == "__MACOSX"
        or base.startswith("._")
        or not base.lower().endswith(".csv")
    )


def read_zip(content: bytes) -> dict[str, bytes]:
    """The CSV entries of a `.zip` by entry name, in archive order (see the module's limits)."""
    if len(content) > MAX_ARCHIVE_BYTES:
        raise ExportUnreadable(413, ARCHIVE_TOO_LARGE)
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError):
        raise ExportUnreadable(400, NOT_A_ZIP) from None
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_ENTRIES:
            raise ExportUnreadable(413, ARCHIVE_TOO_MANY_ENTRIES)
        for info in infos:
            if outside_archive(info.filename):
                raise ExportUnreadable(400, OUTSIDE_ARCHIVE.format(name=info.filename))
        entries: dict[str, bytes] = {}
        total = 0
        for info in infos:
            if info.is_dir() or _ignored(info.filename):
                continue
            if info.filename in entries:
                raise ExportUnreadable(400, ENTRY_REPEATED.format(name=info.filename))
            data = _read_entry(archive, info, total)
            total += len(data)
            entries[info.filename] = data
    return entries


def _read_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo, total: int) -> bytes:
    name = info.filename
    if info.flag_bits & 0x1:
        raise ExportUnreadable(400, ENTRY_UNREADABLE.format(name=name))
    # Declared sizes refuse early; the running count below is what actually holds.
    if total + info.file_size > MAX_UNCOMPRESSED_BYTES:
        raise ExportUnreadable(413, ARCHIVE_EXPANDS_TOO_MUCH)
    ratio_limit = max(RATIO_FLOOR, MAX_RATIO * max(info.compress_size, 1))
    chunks: list[bytes] = []
    size = 0
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(CHUNK):
                size += len(chunk)
                if total + size > MAX_UNCOMPRESSED_BYTES:
                    raise ExportUnreadable(413, ARCHIVE_EXPANDS_TOO_MUCH)
                if size > ratio_limit:
                    raise ExportUnreadable(413, ARCHIVE_BOMB.format(name=name))
                chunks.append(chunk)
    except ExportUnreadable:
        raise
    except (
        zipfile.BadZipFile,
        NotImplementedError,
        RuntimeError,
        zlib.error,
        EOFError,
        OSError,
        ValueError,
    ):
        raise ExportUnreadable(400, ENTRY_UNREADABLE.format(name=name)) from None
    return b"".join(chunks)
