"""Brevo's (formerly Sendinblue) contacts export.

The shape, from Brevo's documentation (help centre "Create a file to import your contacts" /
"Format your contact import file", API `POST /contacts/export`): a CSV (Brevo writes and reads
`;`, `,` or tab) whose columns are contact attributes by their NAME: the defaults EMAIL,
FIRSTNAME, LASTNAME (named after the account's language, e.g. PRENOM / NOM) and SMS, the
mandatory ADDED_TIME and MODIFIED_TIME, Brevo's own WHATSAPP, LANDLINE_NUMBER, EXT_ID,
DOUBLE_OPT-IN, OPT_IN, the account's custom attributes (e.g. FIRST_CLASS, LEVEL, FREE_TRIAL),
the list memberships when exported (`_listIds`, list ids separated by commas) and the email
blacklist state (`emailBlacklisted` in the API; EMAIL_BLACKLISTED / "Email blacklisted" /
"Blacklisted", yes/no or true/false, in exports).

Mapping (headers compared folded: case, spaces and punctuation do not matter):
- EMAIL (also "E-mail", "Email address") is the address; FIRSTNAME / PRENOM / VORNAME / NOMBRE
  / "First name", LASTNAME / NOM / NACHNAME / APELLIDOS / "Last name" the names.
- A blacklist column saying yes (yes, true, 1, oui, ja, si, x) -> unsubscribed, suppressed
  "unsubscribed"; a hard-bounce column saying yes -> bounced, suppressed "bounced"; a
  spam-complaint column saying yes -> complained, suppressed "complained" (strongest wins).
  Otherwise subscribed.
- A lists column: each item a list name; a bare number (Brevo's list id) becomes "Brevo list
  <id>". Memberships are confirmed (Brevo lists hold confirmed contacts only).
- Every other column that is not Brevo's own (SMS, WHATSAPP, LANDLINE_NUMBER, EXT_ID, ids,
  ADDED_TIME, MODIFIED_TIME, DOUBLE_OPT-IN, OPT_IN, the SMS / WhatsApp blacklists) is a custom
  attribute: key its name lowercased (anything but [a-z0-9_] as `_`), label its name. No consent
  (the export has no opt-in time or IP).
"""

from __future__ import annotations

from mailroom.platform_imports.formats import (
    Collector,
    Sheet,
    split_list,
    text,
    truthy,
)
from mailroom.platform_imports.records import PlatformContact

EMAIL_HEADERS = frozenset({"email", "e_mail", "email_address", "emailaddress", "adresse_email"})
FIRST_NAME_HEADERS = frozenset(
    {"firstname", "first_name", "prenom", "vorname", "nombre", "nome", "fname"}
)
LAST_NAME_HEADERS = frozenset(
    {"lastname", "last_name", "nom", "nachname", "apellidos", "cognome", "surname", "lname"}
)
BLACKLIST_HEADERS = frozenset(
    {
        "email_blacklisted",
        "emailblacklisted",
        "email_blacklist",
        "blacklisted",
        "blacklist",
        "email_blocklisted",
        "emailblocklisted",
        "email_blocklist",
        "blocklisted",
        "blocklist",
    }
)
BOUNCE_HEADERS = frozenset(
    {"hard_bounce", "hard_bounced", "hardbounce", "hard_bounces", "email_hard_bounce", "bounced"}
)
COMPLAINT_HEADERS = frozenset({"complaint", "complained", "spam", "spam_complaint"})
LIST_HEADERS = frozenset({"lists", "list", "list_ids", "listids", "list_id", "listes"})
OWN_HEADERS = frozenset(
    {
        "sms",
        "whatsapp",
        "landline_number",
        "ext_id",
        "id",
        "contact_id",
        "added_time",
        "modified_time",
        "date_added",
        "created_at",
        "modified_at",
        "updated_at",
        "last_changed",
        "double_opt_in",
        "opt_in",
        "sms_blacklisted",
        "smsblacklisted",
        "sms_blocklisted",
        "blacklisted_sms",
        "whatsapp_blacklisted",
        "whatsapp_blocklisted",
    }
)


def list_name(item: str) -> str:
    return f"Brevo list {item}" if item.isdecimal() else item


def read_sheet(sheet: Sheet, out: Collector) -> bool:
    email_at = sheet.column(EMAIL_HEADERS)
    if email_at is None:
        return False
    first_at = sheet.column(FIRST_NAME_HEADERS)
    last_at = sheet.column(LAST_NAME_HEADERS)
    lists_at = sheet.column(LIST_HEADERS)
    markers = [
        (i, state)
        for i, folded in enumerate(sheet.folded)
        for headers, state in (
            (BLACKLIST_HEADERS, ("unsubscribed", "unsubscribed")),
            (BOUNCE_HEADERS, ("bounced", "bounced")),
            (COMPLAINT_HEADERS, ("complained", "complained")),
        )
        if folded in headers
    ]
    mapped = {email_at, first_at, last_at, lists_at, *(i for i, _ in markers)}
    custom = out.custom_columns(sheet, mapped, lambda i, n: sheet.folded[i] in OWN_HEADERS)
    for row, cells, email in out.rows_with_email(sheet, email_at):
        status, suppress = "subscribed", None
        for index, (marked, reason) in markers:
            if truthy(cells[index]) and (suppress is None or _rank(reason) > _rank(suppress)):
                status, suppress = marked, reason
        fields = out.field_values(cells, custom)
        lists = [] if lists_at is None else split_list(cells[lists_at], ",;|")
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
                tags=[],
                lists=[(list_name(item), "confirmed") for item in lists],
                consent_at=None,
                consent_ip=None,
            )
        )
    return True


def _rank(reason: str) -> int:
    return ("unsubscribed", "bounced", "complained").index(reason)
