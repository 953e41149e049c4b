"""Mailchimp's audience export: a `.zip` of CSV files named by the members they hold, or one of
those files alone.

The shape (Mailchimp's "Export Audience"; its help pages and many real exports quoted in public
code): files `subscribed_members_export_<id>.csv`, `unsubscribed_members_export_<id>.csv`,
`cleaned_members_export_<id>.csv` and `nonsubscribed_members_export_<id>.csv` (newer exports:
`subscribed_email_audience_export_<id>.csv`, ...). Columns: "Email Address", "First Name",
"Last Name", the audience's other merge fields by NAME ("Address", "Phone Number", "Birthday",
"Company", yours), then Mailchimp's own: MEMBER_RATING, OPTIN_TIME, OPTIN_IP, CONFIRM_TIME,
CONFIRM_IP, LATITUDE, LONGITUDE, GMTOFF, DSTOFF, TIMEZONE, CC, REGION, LAST_CHANGED, LEID, EUID,
NOTES, TAGS, and UNSUB_TIME, UNSUB_CAMPAIGN_TITLE, UNSUB_CAMPAIGN_ID, UNSUB_REASON,
UNSUB_REASON_OTHER in the unsubscribed file, CLEAN_TIME, CLEAN_CAMPAIGN_TITLE, CLEAN_CAMPAIGN_ID
in the cleaned one. Times are `YYYY-MM-DD HH:MM:SS` in UTC. TAGS is one cell of quoted names,
`"Customer","VIP"` (so the file writes it with every quote doubled, inside quotes).

Mapping:
- The kind comes from the file name's prefix (case-insensitive, any folder): subscribed ->
  subscribed; unsubscribed -> unsubscribed, suppressed "unsubscribed"; cleaned -> bounced,
  suppressed "bounced"; nonsubscribed (contacts who never opted in, e.g. from a store) are not
  imported: each row is skipped with a reason. A file named otherwise is cleaned if it has a
  CLEAN_TIME column, unsubscribed if it has UNSUB_TIME, else subscribed.
- Consent: CONFIRM_TIME and CONFIRM_IP (the double opt-in confirmation) when the row has a
  readable CONFIRM_TIME, else OPTIN_TIME and OPTIN_IP: one event's time and address together.
- Lists: none. The export does not name its audience (the archive is one audience), so the
  importer puts the contacts in the list the caller names; a subscribed member is a confirmed
  member of the audience.
- Custom fields: every merge-field column. An export only carries merge field NAMES, not their
  tags, so the key is Mailchimp's default tag for its default fields ("Address" -> `address`,
  "Phone Number" -> `phone`, "Birthday" -> `birthday`, "Company" -> `company`) and otherwise the
  name lowercased with anything but [a-z0-9_] as `_` ("Favourite Colour" ->
  `favourite_colour`); the label is the name. Mailchimp's own columns above are never fields.
"""

from __future__ import annotations

import re

from mailroom.platform_imports.formats import (
    Collector,
    Sheet,
    base_name,
    field_key,
    split_list,
    text,
)
from mailroom.platform_imports.records import PlatformContact

EMAIL_HEADERS = frozenset({"email_address", "email", "e_mail", "e_mail_address"})
FIRST_NAME_HEADERS = frozenset({"first_name", "fname"})
LAST_NAME_HEADERS = frozenset({"last_name", "lname"})
BOOKKEEPING = frozenset(
    {
        "MEMBER_RATING",
        "OPTIN_TIME",
        "OPTIN_IP",
        "CONFIRM_TIME",
        "CONFIRM_IP",
        "LATITUDE",
        "LONGITUDE",
        "GMTOFF",
        "DSTOFF",
        "TIMEZONE",
        "CC",
        "REGION",
        "LAST_CHANGED",
        "LEID",
        "EUID",
        "NOTES",
        "TAGS",
        "UNSUB_TIME",
        "UNSUB_CAMPAIGN_TITLE",
        "UNSUB_CAMPAIGN_ID",
        "UNSUB_REASON",
        "UNSUB_REASON_OTHER",
        "CLEAN_TIME",
        "CLEAN_CAMPAIGN_TITLE",
        "CLEAN_CAMPAIGN_ID",
    }
)
# Mailchimp's default merge fields: the export writes the name, the tag is the platform's key.
DEFAULT_MERGE_TAGS = {
    "Address": "address",
    "Phone Number": "phone",
    "Birthday": "birthday",
    "Company": "company",
}
KIND_STATE: dict[str, tuple[str, str | None]] = {
    "subscribed": ("subscribed", None),
    "unsubscribed": ("unsubscribed", "unsubscribed"),
    "cleaned": ("bounced", "bounced"),
}
KIND_ORDER = {"subscribed": 0, "unsubscribed": 1, "cleaned": 2, "nonsubscribed": 3}
NOT_SUBSCRIBED = "never subscribed (Mailchimp non-subscribed contact)"
_KIND = re.compile(r"^(nonsubscribed|non_subscribed|unsubscribed|cleaned|subscribed)(?![a-z])")


def kind_from_name(source: str) -> str | None:
    match = _KIND.match(base_name(source).lower().replace(" ", "_").replace("-", "_"))
    if match is None:
        return None
    return "nonsubscribed" if match.group(1) == "non_subscribed" else match.group(1)


def order(sources: list[str]) -> list[str]:
    """Subscribed, unsubscribed, cleaned, non-subscribed, then other files; by name within."""
    return sorted(sources, key=lambda s: (KIND_ORDER.get(kind_from_name(s) or "", 4), s))


def read_sheet(sheet: Sheet, out: Collector) -> bool:
    email_at = sheet.column(EMAIL_HEADERS)
    if email_at is None:
        return False
    header = sheet.header
    kind = kind_from_name(sheet.source)
    if kind is None:
        kind = (
            "cleaned"
            if "CLEAN_TIME" in header
            else "unsubscribed"
            if "UNSUB_TIME" in header
            else "subscribed"
        )
    first_at = sheet.column(FIRST_NAME_HEADERS)
    last_at = sheet.column(LAST_NAME_HEADERS)
    named = {"TAGS", "CONFIRM_TIME", "OPTIN_TIME", "CONFIRM_IP", "OPTIN_IP"}
    at = {name: header.index(name) for name in named if name in header}
    custom = out.custom_columns(
        sheet,
        {email_at, first_at, last_at},
        lambda i, n: n in BOOKKEEPING,
        lambda name: DEFAULT_MERGE_TAGS.get(name) or field_key(name),
    )
    status, suppress = KIND_STATE.get(kind, ("subscribed", None))
    for row, cells, email in out.rows_with_email(sheet, email_at):
        if kind == "nonsubscribed":
            out.skip(sheet, row, NOT_SUBSCRIBED, email)
            continue
        fields = out.field_values(cells, custom)
        # The confirmation's time and IP when it has a time, else the opt-in's: one event's
        # pair, never one's time with the other's address.
        consent_at, consent_ip = None, None
        for moment, address in (("CONFIRM_TIME", "CONFIRM_IP"), ("OPTIN_TIME", "OPTIN_IP")):
            if moment in at and consent_at is None:
                consent_at = out.time(sheet, row, moment, cells[at[moment]])
                if consent_at is not None and address in at:
                    consent_ip = cells[at[address]].strip() or None
        out.add(
            PlatformContact(
                row=row,
                source=sheet.source,
                email=email,
                first_name=text(cells[first_at]) if first_at is not None else None,
                last_name=text(cells[last_at]) if last_at is not None else None,
                status=status,
                suppress=suppress,
                fields=fields,
                tags=split_list(cells[at["TAGS"]]) if "TAGS" in at else [],
                lists=[],
                consent_at=consent_at,
                consent_ip=consent_ip,
            )
        )
    return True
