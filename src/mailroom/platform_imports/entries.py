"""A platform export made ready to write: the CSV import's per-row rules applied to each
normalised record, with no database (pure CPU: callers run it in a worker thread).

Each contact becomes the CSV import's `Row` (so the set-based writes of contacts/import_writes
take it as they take a CSV row) plus what only platforms carry: list memberships and a language.
The rules are the CSV import's: addresses trimmed and lowercased, malformed ones and
placeholders (example domains, role mailboxes) skipped with their reason, names over 100
characters cut, at most 20 tags of 60 characters a contact, values over 200 characters left out.
Consent lands in the custom fields the CSV import uses (`consent_confirmed_at`, `consent_ip`,
`consent_source`: the platform's name).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mailroom.contacts import import_rows as rows_
from mailroom.contacts.addresses import AddressCheck
from mailroom.core.emails import hash_normalized
from mailroom.custom_fields import values as cf
from mailroom.custom_fields.values import MAX_STRING
from mailroom.platform_imports.records import FieldSpec, PlatformContact, PlatformExport

MAX_SKIPPED = 100  # skipped rows listed in a result; the rest are only counted
MAX_QUOTED = 320  # characters of a skipped row's address or reason quoted in the result
CONSENT_FIELDS = ("consent_confirmed_at", "consent_ip", "consent_source")
# A contact holds at most 50 custom fields (custom_fields.values.MAX_KEYS): the platform's
# fields take the room the consent fields leave.
MAX_PLATFORM_FIELDS = cf.MAX_KEYS - len(CONSENT_FIELDS)
# The suppression a contact's status implies, and how strong each is (never downgraded).
STRENGTH = {"archived": 1, **rows_.STRENGTH}

INVALID = "invalid email address"
PLACEHOLDER = "placeholder address ({reason})"
NAMES_CUT = "{count} name(s) longer than 100 characters were cut"
TAGS_CUT = (
    "{count} contact(s) had more than 20 tags or tags over 60 characters: those were left out"
)
LONG_VALUES = "{count} field value(s) longer than 200 characters were left out"
TOO_MANY_FIELDS = (
    "More than {limit} fields (a contact holds at most 50 custom fields, 3 of them consent): "
    "{keys} were left out"
)


@dataclass(slots=True)
class Incoming:
    row: rows_.Row  # status already the strongest of the platform's status and suppression
    hash: str  # the suppression list's hash of the address
    lists: list[tuple[str, str]]  # (list name, "confirmed" | "unconfirmed")
    language: str | None


@dataclass
class Prepared:
    platform: str
    entries: list[Incoming]
    fields: list[FieldSpec]  # the platform's fields that have values, in column order
    lists: list[str]  # list names, in the order first seen
    skipped: list[dict[str, Any]] = field(default_factory=list)  # the first MAX_SKIPPED
    skipped_total: int = 0
    warnings: list[str] = field(default_factory=list)

    def skip(self, entry: dict[str, Any]) -> None:
        self.skipped_total += 1
        if len(self.skipped) < MAX_SKIPPED:
            # Quoted from the file: bounded, and without NUL (PostgreSQL's JSON refuses it).
            self.skipped.append(
                {
                    key: value.replace("\x00", "")[:MAX_QUOTED] if isinstance(value, str) else value
                    for key, value in entry.items()
                }
            )


def prepare(export: PlatformExport, *, key: bytes, now: datetime) -> Prepared:
    """The export's contacts as rows to write; raises ApiError 400 past the address check's
    limit on unusual addresses (as the CSV import does)."""
    kept_fields = export.fields[:MAX_PLATFORM_FIELDS]
    ready = Prepared(export.platform, [], kept_fields, [clean(n) for n in export.lists])
    allowed = {f.key for f in kept_fields}
    for entry in export.skipped:
        ready.skip(entry)
    valid = AddressCheck("export")
    names_cut = tags_cut = long_values = 0
    for contact in export.contacts:
        email = contact.email.strip().lower()
        where = {"row": contact.row, "source": contact.source, "email": email}
        if not valid(email):
            ready.skip({**where, "reason": INVALID})
            continue
        reason = rows_.placeholder_reason(email)
        if reason is not None:
            ready.skip({**where, "reason": PLACEHOLDER.format(reason=reason)})
            continue
        first, last = clean(contact.first_name or ""), clean(contact.last_name or "")
        if len(first) > rows_.MAX_NAME or len(last) > rows_.MAX_NAME:
            names_cut += 1
            first, last = first[: rows_.MAX_NAME], last[: rows_.MAX_NAME]
        tags = [t for t in (clean(name) for name in contact.tags) if t]
        if len(tags) > rows_.MAX_TAGS_PER_ROW or any(len(t) > rows_.MAX_TAG_LENGTH for t in tags):
            tags_cut += 1
            tags = [t for t in tags if len(t) <= rows_.MAX_TAG_LENGTH][: rows_.MAX_TAGS_PER_ROW]
        custom: dict[str, Any] = {}
        for name, value in contact.fields.items():
            value = value.replace("\x00", "")
            if name not in allowed:
                continue
            if len(value) > MAX_STRING:
                long_values += 1
            else:
                custom[name] = value
        custom.update(_consent(contact, export.platform, now))
        ready.entries.append(
            Incoming(
                rows_.Row(
                    email,
                    _status(contact),
                    first,
                    last,
                    export.platform,
                    list(dict.fromkeys(tags)),
                    custom,
                    _past(contact.consent_at, now),
                ),
                hash_normalized(key, email),
                [(clean(name), state) for name, state in contact.lists],
                contact.language,
            )
        )
    ready.warnings = list(export.warnings)
    if len(export.fields) > MAX_PLATFORM_FIELDS:
        left_out = ", ".join(f.key for f in export.fields[MAX_PLATFORM_FIELDS:])
        ready.warnings.append(TOO_MANY_FIELDS.format(limit=MAX_PLATFORM_FIELDS, keys=left_out))
    for message, count in (
        (NAMES_CUT, names_cut),
        (TAGS_CUT, tags_cut),
        (LONG_VALUES, long_values),
    ):
        if count:
            ready.warnings.append(message.format(count=count))
    return ready


def clean(name: str) -> str:
    """A name as Mailroom stores names (tags, lists, people): no NUL, inner whitespace folded
    to one space, so a name matches the row the database holds under it."""
    return " ".join(name.replace("\x00", "").split())


def _status(contact: PlatformContact) -> str:
    """The status to write: a suppression reason stronger than the status wins (a bounced
    address is never imported as merely unsubscribed)."""
    if contact.suppress and STRENGTH[contact.suppress] > STRENGTH[contact.status]:
        return contact.suppress
    return contact.status


def _past(moment: datetime | None, now: datetime) -> datetime | None:
    return moment if moment is not None and moment <= now else None


def _consent(contact: PlatformContact, platform: str, now: datetime) -> dict[str, str]:
    found: dict[str, str] = {}
    moment = _past(contact.consent_at, now)
    if moment is not None:
        found["consent_confirmed_at"] = moment.isoformat().replace("+00:00", "Z")
    address = (contact.consent_ip or "").replace("\x00", "").strip()
    if address and len(address) <= MAX_STRING:
        found["consent_ip"] = address
    if found:
        found["consent_source"] = platform
    return found
