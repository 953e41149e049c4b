from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field

from mailroom.core.loose import Doc, body_config, choice, text
from mailroom.core.pagination import Pagination
from mailroom.suppressions.service import REASON_ALIASES

EMAIL = text(254, min_length=3, format="email")
# Every spelling the import understands (matched ignoring case; `-` and `_` read as spaces).
IMPORT_REASONS = sorted(REASON_ALIASES)


class ByReason(BaseModel):
    unsubscribed: int
    bounced: int
    complained: int
    deleted: int


class SuppressionSummary(BaseModel):
    count: int
    by_reason: ByReason


class AddressCheck(BaseModel):
    email: str
    suppressed: bool
    reason: str | None
    source: str | None
    added_at: datetime | None
    liftable: bool


class ContactRef(BaseModel):
    id: str
    email: str
    status: str


class SuppressionRow(BaseModel):
    email_hash: str
    reason: str
    source: str
    created_at: datetime
    email_masked: str | None
    email_domain: str | None
    contact: ContactRef | None
    liftable: bool


class SuppressionPage(BaseModel):
    suppressions: list[SuppressionRow]
    pagination: Pagination
    details_available: bool


class ImportByReason(BaseModel):
    unsubscribed: int
    bounced: int
    complained: int


class SuppressionImportResult(BaseModel):
    received: int
    added: int
    upgraded: int
    unchanged: int
    invalid: int
    contacts_updated: int
    by_reason: ImportByReason


class LiftRequest(BaseModel):
    model_config = body_config(
        rules=[{"anyOf": [{"required": ["email"]}, {"required": ["email_hash"]}]}]
    )
    email: Annotated[str | None, Doc(EMAIL)] = Field(None, description="The address, or:")
    email_hash: Annotated[str | None, Doc(text(pattern="^[0-9a-fA-F]{64}$"))] = Field(
        None, description="its hash as shown in the list."
    )


class LiftResult(BaseModel):
    lifted: bool
    reason: str


IMPORT_BODY = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["entries"],
                "properties": {
                    "reason": {
                        **choice(*IMPORT_REASONS),
                        "description": "Default reason: unsubscribed (default), bounced or "
                        "complained (aliases such as cleaned, spam, opted out are understood).",
                    },
                    "entries": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": 5000,
                        "description": "Addresses, as strings or objects {email, reason}. "
                        "An entry is never refused: one that is not a usable address (a "
                        "number, null, an object without a valid `email`) or has an unknown "
                        "reason counts as invalid.",
                        "items": {
                            "anyOf": [
                                {"type": "string", "description": "An address."},
                                {
                                    "type": "object",
                                    "properties": {
                                        "email": {"type": "string"},
                                        "reason": {"type": "string"},
                                    },
                                    "description": "The address as `email` (or `address`, "
                                    "`email_address`) and its reason; a malformed address or "
                                    "an unknown reason counts as invalid.",
                                },
                                # The spec counts what is not an address as invalid (200,
                                # `invalid` + 1), so the schema admits it, as the service does.
                                {"description": "Any other value: counted as invalid."},
                            ]
                        },
                    },
                },
            }
        },
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {
                        "type": "string",
                        "format": "binary",
                        "description": "CSV up to 5 MB: header `email` (optional `reason`), "
                        "or one address per line.",
                    },
                    "reason": {**choice(*IMPORT_REASONS), "description": "Default reason."},
                },
            },
            "encoding": {"file": {"contentType": "text/csv"}},
        },
    },
}
