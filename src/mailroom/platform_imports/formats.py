"""Reading a platform's export file into normalised records: `read_export`.

An upload is a CSV file, or a `.zip` (by name or by its bytes) whose CSV entries are read with
`archive.read_zip`'s limits; every CSV is read with the CSV import's reader (`read_csv`: UTF-8
with or without a BOM, comma / semicolon / tab found from the header line, blank lines
skipped). One reader per platform maps the columns (formats_mailchimp, formats_listmonk,
formats_brevo, formats_kit, formats_mautic; each module's docstring names the export shape it
reads and where that shape comes from). What they share lives here:

- Statuses are Mailroom's words; a source that says the person left (Mailchimp's unsubscribed /
  cleaned files, listmonk's blocklisted, Brevo's blacklisted, Kit's cancelled / bounced /
  complained, Mautic's do-not-contact) also sets `suppress`.
- Repeated addresses (compared trimmed and lowercased, across all files of an upload) become one
  contact: the strongest status wins (complained > bounced > unsubscribed > archived >
  subscribed) and so does the strongest suppression, so a suppression is never downgraded; the
  winning row's source, row, fields and consent win conflicts, the other row fills what it
  leaves empty; tags and list memberships are the union.
- A row without an email address is skipped (`{row, source, reason}`); other address checks are
  the importer's.
- Custom fields: a column (or listmonk attribute) that is the platform's own data and not mapped
  to something else becomes a field keyed by the platform's own key, lowercased where the
  platform module says so; keys that cannot be registered (`custom_fields.values.REGISTRY_KEY`)
  are left out with a warning. Only fields with at least one non-empty value are returned. The
  type is `custom_fields.values.infer_type` over every non-empty value, read as: `true/false/
  yes/no` a boolean, a plain decimal number (no sign `+`, no leading zero, so phone numbers and
  zip codes stay text) a number, anything else the string itself (dates: `YYYY-MM-DD`).
- Times (consent) are read leniently (`YYYY-MM-DD HH:MM:SS` as UTC, ISO 8601 with or without an
  offset, Go's `... +0000 UTC`); an unreadable one is left empty and reported in one warning.
- At most 250,000 data rows per upload (413): the archive limit of 50 MB allows far more rows
  than any plan holds, and every row costs memory before the importer's caps apply.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mailroom.contacts.import_columns import fold_header
from mailroom.contacts.import_rows import read_csv
from mailroom.contacts.importer import MAX_BYTES, TOO_LARGE
from mailroom.core.errors import ApiError
from mailroom.custom_fields.values import (
    REGISTRY_KEY,
    infer_type,
    parse_boolean,
    parse_number,
)
from mailroom.platform_imports.archive import looks_like_zip, read_zip
from mailroom.platform_imports.records import (
    BAD_PLATFORM,
    PLATFORMS,
    ExportUnreadable,
    FieldSpec,
    PlatformContact,
    PlatformExport,
)

MAX_EXPORT_ROWS = 250_000
TOO_MANY_ROWS = "File too large: an export is limited to 250,000 rows"

# 422 when the file has no column the platform writes addresses in.
NOT_AN_EXPORT = {
    "mailchimp": 'Not a Mailchimp audience export: expected an "Email Address" column',
    "listmonk": 'Not a listmonk subscribers export: expected an "email" column',
    "brevo": 'Not a Brevo contacts export: expected an "EMAIL" column',
    "kit": 'Not a Kit subscribers export: expected an "email_address" column',
    "mautic": 'Not a Mautic contacts export: expected an "email" column',
}
NO_CSV_IN_ARCHIVE = {
    "mailchimp": "Not a Mailchimp audience export: the archive holds no CSV file",
    "listmonk": "Not a listmonk subscribers export: the archive holds no CSV file",
    "brevo": "Not a Brevo contacts export: the archive holds no CSV file",
    "kit": "Not a Kit subscribers export: the archive holds no CSV file",
    "mautic": "Not a Mautic contacts export: the archive holds no CSV file",
}
NO_EMAIL = "no email address"
SHEET_SKIPPED = "{source}: no email column, so not part of the export; skipped"
BAD_TIMES = "{count} date(s) could not be read and were left empty (first: {example})"
BAD_KEY = 'Field "{label}" was not imported: its key "{key}" is not letters, digits and _'
MERGED = "{count} repeated address(es) merged into one contact each (the strongest status wins)"

STRENGTH = {"subscribed": 1, "archived": 2, "unsubscribed": 3, "bounced": 4, "complained": 5}
SUPPRESS_RANK = {None: 0, "unsubscribed": 1, "bounced": 2, "complained": 3}
TRUTHY = frozenset({"yes", "true", "1", "y", "x", "oui", "ja", "si", "sí"})

_PLAIN_NUMBER = re.compile(r"^-?(0|[1-9]\d*)(\.\d+)?$")
_GO_TIME = re.compile(r"^(.*[+-]\d{4}) [A-Za-z+-][\w+-]*$")  # "... +0000 UTC" / "+0000 +0000"
_KEY_CHARS = re.compile(r"[^a-z0-9_]")


# --- reading CSV files --------------------------------------------------------------------


@dataclass
class Sheet:
    """One CSV file of an upload: its header (cells trimmed) and its data rows, each padded to
    the header's width, read lazily."""

    source: str
    header: list[str]
    rows: Iterator[list[str]]
    folded: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.folded = [fold(h) for h in self.header]

    def column(self, names: set[str] | frozenset[str]) -> int | None:
        """The first column whose folded header is one of `names`."""
        return next((i for i, h in enumerate(self.folded) if h in names), None)


def fold(header: str) -> str:
    """The CSV import's header folding: `Email Address` -> `email_address`, `DOUBLE_OPT-IN` ->
    `double_opt_in`, `_listIds` -> `listids`, `Prénom` -> `prenom`."""
    return fold_header(header)


def open_sheet(source: str, content: bytes) -> Sheet:
    try:
        header, data = read_csv(content)
    except ApiError as exc:
        raise ExportUnreadable(exc.status, exc.message) from None
    header = [h.strip() for h in header]
    width = len(header)

    def rows() -> Iterator[list[str]]:
        try:
            for row in data:
                yield row + [""] * (width - len(row)) if len(row) < width else row
        except ApiError as exc:
            raise ExportUnreadable(exc.status, exc.message) from None

    return Sheet(source, header, rows())


def base_name(filename: str) -> str:
    return filename.replace("\\", "/").rsplit("/", 1)[-1] or "export.csv"


# --- cell readers ---------------------------------------------------------------------------


def text(value: str) -> str | None:
    value = value.strip()
    return value or None


def field_key(header: str) -> str:
    """The header lowercased, anything but [a-z0-9_] as `_`, at most 64 characters."""
    return _KEY_CHARS.sub("_", header.strip().lower())[:64]


def split_name(name: str) -> tuple[str | None, str | None]:
    """A single name split at its first space: `Ada King Lovelace` -> (`Ada`, `King Lovelace`)."""
    first, _, last = name.strip().partition(" ")
    return text(first), text(last)


def split_list(cell: str, separators: str = ",") -> list[str]:
    """Items of a cell, each trimmed and unquoted: `"Customer","VIP"` (Mailchimp's TAGS),
    `vip, denver`; repeated items (case-insensitively) once."""
    if not cell.strip():
        return []
    items: list[str]
    if '"' in cell and separators == ",":
        try:
            items = next(csv.reader([cell], skipinitialspace=True))
        except (csv.Error, StopIteration):
            items = cell.split(",")
    else:
        items = re.split("[" + re.escape(separators) + "]", cell)
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        name = item.strip().strip('"').strip()
        if name and name.casefold() not in seen:
            seen.add(name.casefold())
            out.append(name)
    return out


def truthy(value: str) -> bool:
    return value.strip().lower() in TRUTHY


def parse_time(value: str) -> datetime:
    """An aware UTC datetime (naive times are UTC); ValueError when unreadable, or when it
    cannot be expressed in UTC (`9999-12-31 23:59:59-10:00`)."""
    raw = value.strip()
    go = _GO_TIME.match(raw)
    parsed = datetime.fromisoformat((go.group(1) if go else raw).replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"out of range: {raw}") from None


def json_scalar(value: Any) -> str:
    """A JSON scalar as the text a CSV cell would hold (`true`, `3`, `4.5`, `text`)."""
    return value if isinstance(value, str) else json.dumps(value)


def inference_value(value: str) -> Any:
    """What `infer_type` sees for a raw cell: a bool, a plain number, or the string."""
    boolean = parse_boolean(value)
    if boolean is not None:
        return boolean
    if _PLAIN_NUMBER.match(value):
        number = parse_number(value)
        if number is not None:
            return number
    return value


# --- collecting records ---------------------------------------------------------------------


class Collector:
    """Everything read from an upload's files, merged into a PlatformExport."""

    def __init__(self, platform: str) -> None:
        self.platform = platform
        self.rows = 0
        self._contacts: dict[str, PlatformContact] = {}
        self._labels: dict[str, str] = {}  # key -> label, in the order declared
        self._keys: dict[str, str | None] = {}  # label -> key (None: not registrable)
        self._values: dict[str, list[Any]] = {}
        self._lists: dict[str, None] = {}
        self.skipped: list[dict[str, Any]] = []
        self._warnings: dict[str, None] = {}
        self._merged = 0
        self._bad_times = 0
        self._bad_example = ""

    def count_row(self) -> None:
        self.rows += 1
        if self.rows > MAX_EXPORT_ROWS:
            raise ExportUnreadable(413, TOO_MANY_ROWS)

    def declare(self, label: str, key: str) -> str | None:
        """The field key for a column / attribute named `label`; the same label always gets
        the same key, another label wanting a taken key gets `<key>_2`, ...; None (with a
        warning) when the key cannot be registered."""
        if label in self._keys:
            return self._keys[label]
        if not REGISTRY_KEY.match(key):
            self.warn(BAD_KEY.format(label=label, key=key))
            self._keys[label] = None
            return None
        chosen, number = key, 2
        while chosen in self._labels:
            chosen = f"{key[:60]}_{number}"
            number += 1
        self._labels[chosen] = label[:80]
        self._keys[label] = chosen
        return chosen

    def custom_columns(
        self,
        sheet: Sheet,
        mapped: set[int | None],
        ignored: Callable[[int, str], bool],
        key_of: Callable[[str], str] = field_key,
    ) -> list[tuple[int, str]]:
        """(column index, field key) of the columns that become custom fields: every named
        column not `mapped` to something else nor `ignored` (the platform's bookkeeping)."""
        custom: list[tuple[int, str]] = []
        for index, name in enumerate(sheet.header):
            if index in mapped or not name or ignored(index, name):
                continue
            key = self.declare(name, key_of(name))
            if key is not None:
                custom.append((index, key))
        return custom

    def rows_with_email(self, sheet: Sheet, email_at: int) -> Iterator[tuple[int, list[str], str]]:
        """(row number, cells, email) of each data row; a row without an address is counted
        and skipped with its reason."""
        for row, cells in enumerate(sheet.rows, start=1):
            self.count_row()
            email = cells[email_at].strip()
            if not email:
                self.skip(sheet, row, NO_EMAIL)
                continue
            yield row, cells, email

    def field_values(self, cells: list[str], custom: list[tuple[int, str]]) -> dict[str, str]:
        """The row's non-empty custom field values by key (each seen for type inference)."""
        fields: dict[str, str] = {}
        for index, key in custom:
            value = cells[index].strip()
            if value:
                fields[key] = value
                self.observe(key, inference_value(value))
        return fields

    def observe(self, key: str, value: Any) -> None:
        self._values.setdefault(key, []).append(value)

    def see_list(self, name: str) -> None:
        self._lists.setdefault(name, None)

    def warn(self, message: str) -> None:
        self._warnings.setdefault(message, None)

    def skip(self, sheet: Sheet, row: int, reason: str, email: str | None = None) -> None:
        entry: dict[str, Any] = {"row": row, "source": sheet.source}
        if email:
            entry["email"] = email
        entry["reason"] = reason
        self.skipped.append(entry)

    def time(self, sheet: Sheet, row: int, column: str, value: str) -> datetime | None:
        """A time cell, or None (empty, or unreadable: counted for one warning)."""
        if not value.strip():
            return None
        try:
            return parse_time(value)
        except ValueError:
            self._bad_times += 1
            if not self._bad_example:
                self._bad_example = f"{sheet.source} row {row}, {column} {value.strip()!r}"
            return None

    def add(self, contact: PlatformContact) -> None:
        for name, _ in contact.lists:
            self.see_list(name)
        key = contact.email.strip().lower()
        earlier = self._contacts.get(key)
        if earlier is None:
            self._contacts[key] = contact
        else:
            self._merged += 1
            self._contacts[key] = merge(earlier, contact)

    def result(self) -> PlatformExport:
        fields = [
            FieldSpec(key, label, infer_type(self._values[key]))
            for key, label in self._labels.items()
            if self._values.get(key)
        ]
        warnings = list(self._warnings)
        if self._merged:
            warnings.append(MERGED.format(count=self._merged))
        if self._bad_times:
            warnings.append(BAD_TIMES.format(count=self._bad_times, example=self._bad_example))
        return PlatformExport(
            platform=self.platform,
            contacts=list(self._contacts.values()),
            fields=fields,
            lists=list(self._lists),
            skipped=self.skipped,
            warnings=warnings,
        )


def merge(earlier: PlatformContact, later: PlatformContact) -> PlatformContact:
    """One contact of two rows with the same address (see the module's rules)."""
    stronger = STRENGTH[later.status] > STRENGTH[earlier.status]
    win, lose = (later, earlier) if stronger else (earlier, later)
    suppress = max(earlier.suppress, later.suppress, key=lambda s: SUPPRESS_RANK[s])
    tags = list(win.tags)
    folded = {t.casefold() for t in tags}
    tags += [t for t in lose.tags if t.casefold() not in folded]
    memberships = dict(lose.lists)
    for name, state in win.lists:
        if memberships.get(name) != "confirmed":
            memberships[name] = state
    consent = win if (win.consent_at or win.consent_ip) else lose
    return PlatformContact(
        row=win.row,
        source=win.source,
        email=win.email,
        first_name=win.first_name or lose.first_name,
        last_name=win.last_name or lose.last_name,
        status=win.status,
        suppress=suppress,
        fields={**lose.fields, **win.fields},
        tags=tags,
        lists=list(memberships.items()),
        consent_at=consent.consent_at,
        consent_ip=consent.consent_ip,
        language=win.language or lose.language,
    )


# --- the dispatcher -------------------------------------------------------------------------

SheetReader = Callable[[Sheet, Collector], bool]
SourceOrder = Callable[[list[str]], list[str]]


def _reader(platform: str) -> tuple[SheetReader, SourceOrder]:
    # Imported here: the platform modules import this module's helpers.
    from mailroom.platform_imports import (
        formats_brevo,
        formats_kit,
        formats_listmonk,
        formats_mailchimp,
        formats_mautic,
    )

    readers: dict[str, tuple[SheetReader, SourceOrder]] = {
        "mailchimp": (formats_mailchimp.read_sheet, formats_mailchimp.order),
        "listmonk": (formats_listmonk.read_sheet, sorted),
        "brevo": (formats_brevo.read_sheet, sorted),
        "kit": (formats_kit.read_sheet, sorted),
        "mautic": (formats_mautic.read_sheet, sorted),
    }
    return readers[platform]


def read_export(platform: str, filename: str, content: bytes) -> PlatformExport:
    """The records of one upload: a platform's export CSV, or a `.zip` of its CSV files.

    Raises ExportUnreadable: 400 for an unknown platform or an unreadable file, 413 past the
    size limits, 422 when no file of the upload is that platform's export.
    """
    if platform not in PLATFORMS:
        raise ExportUnreadable(400, BAD_PLATFORM)
    read_sheet, order = _reader(platform)
    archived = looks_like_zip(filename, content)
    if archived:
        entries = read_zip(content)
        if not entries:
            raise ExportUnreadable(422, NO_CSV_IN_ARCHIVE[platform])
    else:
        if len(content) > MAX_BYTES:
            raise ExportUnreadable(413, TOO_LARGE)
        entries = {base_name(filename): content}
    out = Collector(platform)
    recognised = 0
    for source in order(list(entries)):
        if read_sheet(open_sheet(source, entries[source]), out):
            recognised += 1
        elif archived:
            out.warn(SHEET_SKIPPED.format(source=source))
    if not recognised:
        raise ExportUnreadable(422, NOT_AN_EXPORT[platform])
    return out.result()
