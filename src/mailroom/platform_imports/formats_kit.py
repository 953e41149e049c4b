"""Kit's (formerly ConvertKit) subscribers export (Subscribers -> Export, CSV).

The shape, from Kit's help centre ("The Complete Guide to ConvertKit Subscribers": subscriber
states Confirmed / active, Unconfirmed, Cancelled, Cold, Bounced, Complained; "How to import a
subscriber list": first name, email address, custom fields by name, comma-separated Tags) and
its API (`email_address`, `first_name`, `state`, `created_at`, custom `fields` by key): a CSV
with `first_name`, `email_address`, `status` (or `state`), `created_at`, `tags` (one cell, tags
separated by commas), then one column per custom field named by its key (`last_name` included
in accounts that have it).

Mapping: active / confirmed / cold -> subscribed (a cold subscriber is one who stopped opening,
still subscribed); cancelled -> unsubscribed, suppressed "unsubscribed"; bounced -> bounced,
suppressed "bounced"; complained -> complained, suppressed "complained"; inactive / unconfirmed
(never confirmed the double opt-in) and unknown states: the row is skipped with the reason. No
status column: subscribed. `first_name` / `last_name` are the names; every other column but the
ids and dates (id, created_at, updated_at, subscribed_at, cancelled_at) is a custom field keyed
by its header lowercased (anything but [a-z0-9_] as `_`). No lists (Kit has forms and tags, not
lists) and no consent.
"""

from __future__ import annotations

from mailroom.platform_imports.formats import (
    Collector,
    Sheet,
    split_list,
    text,
)
from mailroom.platform_imports.records import PlatformContact

EMAIL_HEADERS = frozenset({"email_address", "email"})
FIRST_NAME_HEADERS = frozenset({"first_name", "firstname"})
LAST_NAME_HEADERS = frozenset({"last_name", "lastname"})
STATUS_HEADERS = frozenset({"status", "state"})
TAG_HEADERS = frozenset({"tags", "tag"})
OWN_HEADERS = frozenset(
    {
        "id",
        "subscriber_id",
        "created_at",
        "updated_at",
        "subscribed_at",
        "cancelled_at",
        "canceled_at",
    }
)
STATES: dict[str, tuple[str, str | None]] = {
    "": ("subscribed", None),
    "active": ("subscribed", None),
    "confirmed": ("subscribed", None),
    "subscribed": ("subscribed", None),
    "cold": ("subscribed", None),
    "cancelled": ("unsubscribed", "unsubscribed"),
    "canceled": ("unsubscribed", "unsubscribed"),
    "unsubscribed": ("unsubscribed", "unsubscribed"),
    "bounced": ("bounced", "bounced"),
    "complained": ("complained", "complained"),
}
UNCONFIRMED = frozenset({"inactive", "unconfirmed"})
NOT_CONFIRMED = "never confirmed the opt-in (unconfirmed in Kit)"
UNKNOWN_STATUS = 'unknown Kit status "{status}"'


def read_sheet(sheet: Sheet, out: Collector) -> bool:
    email_at = sheet.column(EMAIL_HEADERS)
    if email_at is None:
        return False
    first_at = sheet.column(FIRST_NAME_HEADERS)
    last_at = sheet.column(LAST_NAME_HEADERS)
    status_at = sheet.column(STATUS_HEADERS)
    tags_at = sheet.column(TAG_HEADERS)
    mapped = {email_at, first_at, last_at, status_at, tags_at}
    custom = out.custom_columns(sheet, mapped, lambda i, n: sheet.folded[i] in OWN_HEADERS)
    for row, cells, email in out.rows_with_email(sheet, email_at):
        word = cells[status_at].strip().lower() if status_at is not None else ""
        if word in UNCONFIRMED:
            out.skip(sheet, row, NOT_CONFIRMED, email)
            continue
        state = STATES.get(word)
        if state is None:
            out.skip(sheet, row, UNKNOWN_STATUS.format(status=word), email)
            continue
        fields = out.field_values(cells, custom)
        out.add(
            PlatformContact(
                row=row,
                source=sheet.source,
                email=email,
                first_name=text(cells[first_at]) if first_at is not None else None,
                last_name=text(cells[last_at]) if last_at is not None else None,
                status=state[0],
                suppress=state[1],
                fields=fields,
                tags=split_list(cells[tags_at]) if tags_at is not None else [],
                lists=[],
                consent_at=None,
                consent_ip=None,
            )
        )
    return True
