"""mailroom.platform_imports.archive.read_zip, and read_export's refusals of archives: entries
outside the archive, zip bombs (one entry, many entries), an archive over 5 MB, bytes that are
not a zip, encrypted / corrupt / repeated entries, and what is ignored unread."""

from __future__ import annotations

import io
import warnings
import zipfile

import pytest

from mailroom.platform_imports.archive import (
    ARCHIVE_EXPANDS_TOO_MUCH,
    ARCHIVE_TOO_LARGE,
    NOT_A_ZIP,
    read_zip,
)
from mailroom.platform_imports.formats import read_export
from mailroom.platform_imports.records import ExportUnreadable

CSV = b'"Email Address","First Name"\nada@analytical-engine.co,Ada\n'
MB = 1024 * 1024


def zipped(entries: list[tuple[str, bytes]], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return buffer.getvalue()


def refused(content: bytes) -> ExportUnreadable:
    with pytest.raises(ExportUnreadable) as caught:
        read_zip(content)
    return caught.value


def test_csv_entries_by_name_in_archive_order():
    content = zipped([("b.csv", b"email\nb@x.co\n"), ("folder/a.CSV", b"email\na@x.co\n")])
    assert read_zip(content) == {"b.csv": b"email\nb@x.co\n", "folder/a.CSV": b"email\na@x.co\n"}


def test_what_is_ignored_unread():
    inner = zipped([("subscribed_members_export_1.csv", CSV)])
    content = zipped(
        [
            ("export/", b""),  # a directory
            ("__MACOSX/export/._subscribed_members_export_1.csv", b"\x00\x05\x16\x07 fork"),
            ("export/._cleaned_members_export_1.csv", b"\x00\x05\x16\x07 fork"),
            ("export/.DS_Store", b"\x00\x00\x00\x01Bud1"),
            ("export/readme.txt", b"hello"),
            ("export/nested.zip", inner),  # never opened
            ("export/subscribed_members_export_1.csv", CSV),
        ]
    )
    assert list(read_zip(content)) == ["export/subscribed_members_export_1.csv"]
    export = read_export("mailchimp", "audience.zip", content)
    assert [(c.source, c.email) for c in export.contacts] == [
        ("export/subscribed_members_export_1.csv", "ada@analytical-engine.co")
    ]


@pytest.mark.parametrize(
    "name",
    [
        "../subscribed_members_export_1.csv",
        "export/../../etc/cron.d/x.csv",
        "/etc/passwd.csv",
        "\\\\server\\share\\a.csv",
        "C:/Users/a.csv",
        "c:evil.csv",
        "..\\..\\windows.csv",
        "../notes.txt",  # whatever the entry is
    ],
)
def test_an_entry_outside_the_archive_refuses_the_upload(name):
    content = zipped([("subscribed_members_export_1.csv", CSV), (name, CSV)])
    error = refused(content)
    assert (error.status, error.message) == (400, f"Archive entry outside the archive: {name}")
    with pytest.raises(ExportUnreadable) as caught:
        read_export("mailchimp", "audience.zip", content)
    assert caught.value.message == f"Archive entry outside the archive: {name}"


def test_dots_inside_a_name_are_not_a_parent_directory():
    content = zipped([("export..2024/subscribed..csv", CSV)])
    assert list(read_zip(content)) == ["export..2024/subscribed..csv"]


def test_a_zip_bomb():
    # 60 MB of zeros deflate to about 60 KB; the archive is small, its content is not.
    bomb = zipped([("subscribed_members_export_1.csv", b"\0" * (60 * MB))])
    assert len(bomb) < 100_000
    error = refused(bomb)
    assert (error.status, error.message) == (413, ARCHIVE_EXPANDS_TOO_MUCH)
    with pytest.raises(ExportUnreadable) as caught:
        read_export("mailchimp", "audience.zip", bomb)
    assert caught.value.status == 413 and caught.value.message.startswith("Archive too large: ")


def test_a_zip_bomb_under_50_mb_is_refused_while_reading():
    # 40 MB of zeros (about 40 KB): within the total, but no CSV expands 1,000 times.
    bomb = zipped([("subscribed_members_export_1.csv", b"\0" * (40 * MB))])
    error = refused(bomb)
    assert error.status == 413
    assert error.message == (
        "Archive too large: subscribed_members_export_1.csv expands more than 200 times its "
        "compressed size"
    )


def test_a_header_understating_the_size_is_not_trusted():
    content = bytearray(zipped([("a.csv", b"\0" * (60 * MB))]))
    for signature, offset in ((b"PK\x01\x02", 24), (b"PK\x03\x04", 22)):
        at = content.index(signature) if signature == b"PK\x03\x04" else content.rindex(signature)
        content[at + offset : at + offset + 4] = (1000).to_bytes(4, "little")
    # Read as declared: 1,000 bytes, whose CRC is not the entry's.
    error = refused(bytes(content))
    assert (error.status, error.message) == (400, "Archive entry unreadable: a.csv")


def test_many_small_entries_past_50_mb_in_all():
    # Each 1 MB entry is under the ratio check's floor; the running total is what stops them.
    entries = [(f"part_{i:02}.csv", b"\0" * MB) for i in range(51)]
    content = zipped(entries)
    assert len(content) < 5 * MB
    error = refused(content)
    assert (error.status, error.message) == (413, ARCHIVE_EXPANDS_TOO_MUCH)
    assert read_zip(zipped(entries[:50])).keys() == {name for name, _ in entries[:50]}


def test_a_header_declaring_more_than_50_mb_is_refused_before_reading():
    content = bytearray(zipped([("a.csv", CSV)]))
    # Patch the declared uncompressed size in the central directory (offset 24 of the record).
    central = content.rindex(b"PK\x01\x02")
    content[central + 24 : central + 28] = (51 * MB).to_bytes(4, "little")
    error = refused(bytes(content))
    assert (error.status, error.message) == (413, ARCHIVE_EXPANDS_TOO_MUCH)


def test_an_archive_over_5_mb():
    content = b"PK\x03\x04" + b"\0" * (5 * MB)
    assert refused(content).args == (ARCHIVE_TOO_LARGE,)
    with pytest.raises(ExportUnreadable) as caught:
        read_export("listmonk", "subscribers.zip", content)
    assert (caught.value.status, caught.value.message) == (
        413,
        "Archive too large: .zip uploads are limited to 5 MB",
    )


@pytest.mark.parametrize(
    ("filename", "content"),
    [
        ("audience.zip", b'"Email Address"\nada@analytical-engine.co\n'),  # a CSV named .zip
        ("audience.zip", b""),
        ("audience.zip", b"PK\x03\x04 truncated"),  # zip magic, nothing after it
        ("audience.csv", b"PK\x03\x04 truncated"),  # the bytes say zip, whatever the name
    ],
)
def test_bytes_that_are_not_a_zip_are_a_bad_request(filename, content):
    # 400 as for a file that is not readable as CSV: the upload is malformed, not the wrong export.
    with pytest.raises(ExportUnreadable) as caught:
        read_export("mailchimp", filename, content)
    assert (caught.value.status, caught.value.message) == (400, NOT_A_ZIP)


def test_an_encrypted_entry():
    content = bytearray(zipped([("subscribed_members_export_1.csv", CSV)]))
    central = content.rindex(b"PK\x01\x02")
    content[central + 8] |= 0x1  # the general purpose flags say encrypted
    error = refused(bytes(content))
    assert (error.status, error.message) == (
        400,
        "Archive entry unreadable: subscribed_members_export_1.csv",
    )


def test_a_corrupt_entry():
    content = bytearray(
        zipped([("subscribed_members_export_1.csv", CSV)], compression=zipfile.ZIP_STORED)
    )
    at = content.index(b"ada@")
    content[at] = ord("b")  # the CRC no longer matches
    error = refused(bytes(content))
    assert (error.status, error.message) == (
        400,
        "Archive entry unreadable: subscribed_members_export_1.csv",
    )


def test_a_repeated_entry():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile: "Duplicate name"
        content = zipped([("a.csv", CSV), ("a.csv", b"email\nother@x.co\n")])
    error = refused(content)
    assert (error.status, error.message) == (400, "Archive entry repeated: a.csv")


def test_more_than_1000_entries():
    content = zipped([(f"f{i}.txt", b"") for i in range(1001)])
    error = refused(content)
    assert (error.status, error.message) == (413, "Archive too large: at most 1,000 files")
