"""listmonk's subscribers export (Subscribers -> Export, `GET /api/subscribers/export`).

The shape, from listmonk's code (cmd/subscribers.go `ExportSubscribers`, queries
`query-subscribers-for-export`, schema.sql): a comma-separated CSV with the header `uuid, email,
name, attributes, status, created_at, updated_at`; `attributes` is the subscriber's JSONB as
PostgreSQL prints it (`{"city": "Bengaluru", "projects": 3}`), `status` one of `enabled`,
`disabled`, `blocklisted`, the dates Go's `time.String()` (`2024-01-15 10:20:30.123456 +0000
+0000`). List subscriptions are not in the file. listmonk's own import CSV (`email, name,
attributes`) reads the same way, every row enabled.

Mapping: `enabled` (or no status column) -> subscribed; `blocklisted` -> unsubscribed,
suppressed "unsubscribed"; `disabled` -> archived; any other status: the row is skipped. `name`
splits at its first space into first and last name. Each attribute becomes a field keyed by the
attribute's key as is (not lowercased; a key that is not letters, digits and _ is left out with
a warning), labelled with the key; a string, number or boolean value is kept as text (`true`,
`3`, `4.5`), its JSON type decides the field's type; an object or a list is left out with a
warning, null is no value. No lists (the export has none) and no consent.
"""

from __future__ import annotations

import json
import math
from typing import Any

from mailroom.platform_imports.formats import (
    NO_EMAIL,
    Collector,
    Sheet,
    json_scalar,
    split_name,
)
from mailroom.platform_imports.records import PlatformContact

STATES: dict[str, tuple[str, str | None]] = {
    "": ("subscribed", None),
    "enabled": ("subscribed", None),
    "blocklisted": ("unsubscribed", "unsubscribed"),
    "disabled": ("archived", None),
}
UNKNOWN_STATUS = 'unknown listmonk status "{status}"'
NESTED = 'listmonk attribute "{key}" holds an object or a list: not imported'
BAD_ATTRIBUTES = "{source} row {row}: attributes is not a JSON object: not imported"


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)  # NaN / Infinity are not JSON


def attributes(cell: str) -> dict[str, Any] | None:
    """The attributes object, {} for an empty cell, None when it is not a JSON object."""
    if not cell.strip():
        return {}
    try:
        value = json.loads(cell, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):  # RecursionError: nested past Python's stack
        return None
    return value if isinstance(value, dict) else None


def read_sheet(sheet: Sheet, out: Collector) -> bool:
    email_at = sheet.column({"email"})
    if email_at is None:
        return False
    name_at = sheet.column({"name"})
    attributes_at = sheet.column({"attributes", "attribs"})
    status_at = sheet.column({"status"})
    for row, cells in enumerate(sheet.rows, start=1):
        out.count_row()
        email = cells[email_at].strip()
        if not email:
            out.skip(sheet, row, NO_EMAIL)
            continue
        status_word = cells[status_at].strip().lower() if status_at is not None else ""
        state = STATES.get(status_word)
        if state is None:
            out.skip(sheet, row, UNKNOWN_STATUS.format(status=status_word), email)
            continue
        attrs = attributes(cells[attributes_at]) if attributes_at is not None else {}
        if attrs is None:
            out.warn(BAD_ATTRIBUTES.format(source=sheet.source, row=row))
            attrs = {}
        fields = attribute_fields(out, attrs)
        first, last = split_name(cells[name_at]) if name_at is not None else (None, None)
        out.add(
            PlatformContact(
                row=row,
                source=sheet.source,
                email=email,
                first_name=first,
                last_name=last,
                status=state[0],
                suppress=state[1],
                fields=fields,
                tags=[],
                lists=[],
                consent_at=None,
                consent_ip=None,
            )
        )
    return True


def attribute_fields(out: Collector, attrs: dict[Any, Any]) -> dict[str, str]:
    """A subscriber's attributes (the export's JSON column, the API's `attribs`) as field
    values keyed as listmonk names them; nested values are skipped with a warning."""
    fields: dict[str, str] = {}
    for name, value in attrs.items():
        if not isinstance(name, str):
            continue
        if isinstance(value, dict | list):
            out.warn(NESTED.format(key=name))
            continue
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            continue
        raw = json_scalar(value).strip()
        if not raw:
            continue
        key = out.declare(name, name)
        if key is None:
            continue
        fields[key] = raw
        out.observe(key, value.strip() if isinstance(value, str) else value)
    return fields
