"""Mautic's contacts export (Contacts -> Export to CSV).

The shape, from Mautic's code (LeadBundle `LeadController::batchExportAction`, CoreBundle
`ExportHelper::parseLeadToExport` and `exportDataIntoFile` / `zipFile`, the install fixtures'
core fields): a comma-separated CSV, header = the contact's profile field ALIASES: `id`, then
every field (core ones: title, firstname, lastname, company, position, email, mobile, phone,
points, fax, address1, address2, city, state, zipcode, country, preferred_locale, timezone,
last_active, attribution_date, attribution, website, facebook, foursquare, instagram, linkedin,
skype, twitter; then the instance's custom fields), then `stage`. Exports scheduled in the
background come as `contacts_export_<date>.csv` inside a `.zip`. The stock export carries
neither tags nor do-not-contact; a `tags` column (names separated by `|` or `,`) and a
do-not-contact column (`dnc`, `do_not_contact`, `dnc_reason`, ...: `unsubscribed` / `1` /
`manual` / `3` / yes, `bounced` / `2`) are read when a customised export has them.

Mapping: `email`, `firstname`, `lastname`; `preferred_locale` is the language (`fr_FR` -> `fr`);
a do-not-contact value: bounced -> bounced, suppressed "bounced"; any other non-empty value but
0 / no / false -> unsubscribed, suppressed "unsubscribed"; no value -> subscribed. Mautic's own
columns (id, points, last_active, attribution, attribution_date, stage, date_added,
date_modified, date_identified, owner, ...) are not fields; every other column is a custom
field keyed by its alias lowercased (label the alias). A file without a do-not-contact column
gets a warning: it cannot tell who unsubscribed or bounced in Mautic. No lists, no consent.
"""

from __future__ import annotations

from mailroom.core.languages import reduce_language
from mailroom.platform_imports.formats import (
    Collector,
    Sheet,
    split_list,
    text,
)
from mailroom.platform_imports.records import PlatformContact

TAG_HEADERS = frozenset({"tags", "tag"})
DNC_HEADERS = frozenset(
    {
        "dnc",
        "do_not_contact",
        "donotcontact",
        "dnc_reason",
        "dnc_status",
        "email_dnc",
        "dnc_email",
        "do_not_contact_email",
    }
)
OWN_HEADERS = frozenset(
    {
        "id",
        "points",
        "last_active",
        "attribution",
        "attribution_date",
        "stage",
        "date_added",
        "date_modified",
        "date_identified",
        "owner",
        "owner_id",
        "created_by",
        "modified_by",
        "preferred_locale",
    }
)
NOT_DNC = frozenset({"0", "no", "false", "none", "contactable"})
NO_DNC_COLUMN = (
    "This Mautic export has no do-not-contact column: contacts who unsubscribed or bounced in "
    "Mautic are imported as subscribed unless you suppress them"
)


def dnc_state(value: str) -> tuple[str, str | None]:
    word = value.strip().lower()
    if not word or word in NOT_DNC:
        return "subscribed", None
    if "bounce" in word or word == "2":
        return "bounced", "bounced"
    return "unsubscribed", "unsubscribed"


def read_sheet(sheet: Sheet, out: Collector) -> bool:
    email_at = sheet.column({"email"})
    if email_at is None:
        return False
    first_at = sheet.column({"firstname", "first_name"})
    last_at = sheet.column({"lastname", "last_name"})
    locale_at = sheet.column({"preferred_locale"})
    tags_at = sheet.column(TAG_HEADERS)
    dnc_at = sheet.column(DNC_HEADERS)
    if dnc_at is None:
        out.warn(NO_DNC_COLUMN)
    mapped = {email_at, first_at, last_at, locale_at, tags_at, dnc_at}
    custom = out.custom_columns(sheet, mapped, lambda i, n: sheet.folded[i] in OWN_HEADERS)
    for row, cells, email in out.rows_with_email(sheet, email_at):
        status, suppress = dnc_state(cells[dnc_at]) if dnc_at is not None else ("subscribed", None)
        fields = out.field_values(cells, custom)
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
                tags=split_list(cells[tags_at], "|,") if tags_at is not None else [],
                lists=[],
                consent_at=None,
                consent_ip=None,
                language=reduce_language(cells[locale_at]) if locale_at is not None else None,
            )
        )
    return True
