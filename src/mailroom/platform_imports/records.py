"""The normalised records every platform's export is read into (see `formats.read_export`).

Statuses are Mailroom's contact status words; `suppress` says the address must go on the
suppression list with that reason. A contact read from an unsubscribed / cleaned / blocklisted
source carries both (e.g. status "bounced", suppress "bounced"): it is never mailed and never
becomes subscribed, whatever other columns say.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mailroom.core.errors import ApiError

PLATFORMS = ("mailchimp", "listmonk", "brevo", "kit", "mautic")
STATUSES = ("subscribed", "unsubscribed", "bounced", "complained", "archived")
SUPPRESSION_REASONS = ("unsubscribed", "bounced", "complained")
MEMBERSHIPS = ("confirmed", "unconfirmed")
FIELD_TYPES = ("text", "number", "date", "boolean")

BAD_PLATFORM = "platform must be one of " + ", ".join(PLATFORMS)


@dataclass(slots=True)
class PlatformContact:
    row: int  # 1-based data row in its source file (header excluded, blank lines not counted)
    source: str  # file name within the upload (the archive entry's name for a .zip)
    email: str  # as written (trimmed); the importer normalises and validates it
    first_name: str | None
    last_name: str | None
    status: str  # one of STATUSES
    suppress: str | None  # None or one of SUPPRESSION_REASONS
    fields: dict[str, str]  # raw custom-field values by field key; empty values omitted
    tags: list[str]
    lists: list[tuple[str, str]]  # (list name, "confirmed" | "unconfirmed")
    consent_at: datetime | None  # aware, UTC
    consent_ip: str | None
    language: str | None = None  # ISO 639-1 code when the export carries one


@dataclass(slots=True)
class FieldSpec:
    key: str  # the platform's own key (see formats); matches custom_fields.values.REGISTRY_KEY
    label: str  # the column or attribute name as the export writes it
    type: str  # one of FIELD_TYPES, inferred with custom_fields.values.infer_type


@dataclass
class PlatformExport:
    platform: str
    contacts: list[PlatformContact]  # one per address (repeated addresses merged)
    fields: list[FieldSpec]  # fields with at least one value, in column order
    lists: list[str]  # list names seen, in the order first seen
    skipped: list[dict[str, Any]] = field(default_factory=list)  # {row, source, email?, reason}
    warnings: list[str] = field(default_factory=list)


class ExportUnreadable(ApiError):
    """The upload cannot be read as the platform's export: `status` 400 (not readable: bad
    platform, not UTF-8, not a zip, an entry outside the archive), 413 (over the size limits)
    or 422 (readable, but not that platform's export). An `ApiError`, so raised from a request
    handler it renders as `{"error": message}` with that status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message)
