"""Contact shapes. Field rules whose wording the spec fixes are checked in the service, so the
models stay permissive where a precise message matters (e.g. `email is required`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from mailroom.core.loose import LooseBool, LooseObject, LooseString, LooseStringList
from mailroom.core.pagination import Pagination


class ContactCreate(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={"example": {"email": "jane@example.com", "first_name": "Jane"}}
    )

    email: str | None = Field(None, description="Required. Trimmed and lowercased; max 254.")
    first_name: str | None = Field(None, max_length=100)
    last_name: str | None = Field(None, max_length=100)
    source: str | None = Field(None, max_length=40, description="Default `api`.")
    language: str | None = Field(None, description="ISO 639-1 code; `fr-FR` becomes `fr`.")
    custom_fields: dict[str, Any] | None = Field(
        None, description="Flat object: up to 50 keys; values string (200), number or boolean."
    )
    resubscribe: StrictBool = Field(
        False, description="Accept an address suppressed as `unsubscribed` (fresh consent)."
    )


class ContactUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: str | None = None
    first_name: str | None = Field(None, max_length=100)
    last_name: str | None = Field(None, max_length=100)
    # Any value reaches the service, which answers the spec's one message for a bad status.
    status: LooseString = Field(
        None, description="subscribed, unsubscribed, bounced, complained or archived."
    )
    source: str | None = Field(None, max_length=40)
    language: str | None = Field(None, description="ISO 639-1 code; null or empty clears it.")
    custom_fields: dict[str, Any] | None = Field(
        None, description="Merged: sent keys set, null removes a key (unless replacing)."
    )
    resubscribe: StrictBool | None = Field(
        None, description="Return an unsubscribed contact to subscribed with fresh consent."
    )
    suppress: StrictBool | None = Field(
        None, description="With status unsubscribed: also put the address on the suppression list."
    )
    replace_custom_fields: StrictBool | None = Field(
        None, description="Replace the whole custom_fields object instead of merging."
    )

    @model_validator(mode="before")
    @classmethod
    def _tenant_is_read_only(cls, data: Any) -> Any:
        if isinstance(data, dict) and "tenant_id" in data:
            raise ValueError("tenant_id is read-only")
        return data


class ContactOut(BaseModel):
    id: str
    tenant_id: str
    email: str
    first_name: str
    last_name: str
    status: str
    custom_fields: dict[str, Any]
    source: str
    language: str | None
    subscribed_at: datetime
    unsubscribed_at: datetime | None
    created_at: datetime
    updated_at: datetime
    invalid_custom_fields: list[str] = Field(
        default_factory=list,
        description="Keys whose stored value no longer fits the field's type (kept as stored).",
    )


class ContactTagOut(BaseModel):
    id: str
    name: str
    color: str
    assigned_at: datetime


class ContactWithTags(ContactOut):
    tags: list[ContactTagOut]


class ContactEnvelope(BaseModel):
    contact: ContactWithTags


class ContactUpdated(BaseModel):
    contact: ContactWithTags
    suppressed: bool | None = Field(None, description="Present when `suppress: true` was sent.")


class ContactList(BaseModel):
    contacts: list[ContactOut]
    pagination: Pagination


class DeleteResult(BaseModel):
    success: bool
    id: str
    mode: str


class BulkBody(BaseModel):
    """Loosely typed on purpose: the service answers each mistake with the spec's message."""

    model_config = ConfigDict(extra="allow")

    action: LooseString = Field(
        None,
        description="unsubscribe, archive, restore, delete, erase, add_tag, remove_tag, "
        "add_to_list, remove_from_list or export.",
    )
    contact_ids: LooseStringList = Field(
        None, description="Array of contact ids (either this or filter)."
    )
    filter: LooseObject = Field(
        None,
        description="Object with the list query's keys: q, status, tag, list, source, from, to.",
    )
    tag_id: LooseString = Field(None, description="For add_tag and remove_tag.")
    list_id: LooseString = Field(None, description="For add_to_list and remove_from_list.")
    suppress: LooseBool = Field(None, description="unsubscribe only: also block the addresses.")


class BulkResult(BaseModel):
    success: bool
    deleted: int | None = None
    erased: int | None = None
    archived: int | None = None
    already_archived: int | None = None
    restored: int | None = None
    not_archived: int | None = None
    tagged: int | None = None
    untagged: int | None = None
    added: int | None = None
    already_member: int | None = None
    skipped_not_subscribed: int | None = None
    membership: str | None = None
    removed: int | None = None
    unsubscribed: int | None = None
    already_unsubscribed: int | None = None
    suppressed: int | None = None
    blocked: int | None = None


def _text(description: str) -> dict[str, str]:
    return {"type": "string", "description": description}


IMPORT_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {
                        "type": "string",
                        "format": "binary",
                        "description": "UTF-8 CSV, at most 5 MB; first line is the header.",
                    },
                    "default_status": _text(
                        "subscribed (default) or unsubscribed, for blank cells."
                    ),
                    "source": _text("Source for rows without a source cell (default import)."),
                    "skip_duplicates": _text(
                        "true (default): existing contacts keep names and "
                        "status; false: names and source are refreshed."
                    ),
                    "run_automations": _text("true to enrol new contacts in automations."),
                    "check_domains": _text("true to skip rows whose domain cannot receive mail."),
                    "tags": _text("Tags for every row, separated by ; or |."),
                    "list_id": _text("Add every subscribed contact to this list."),
                    "mapping": _text(
                        'JSON array of {"column": 0, "target": "email"} '
                        "(targets: email, first_name, last_name, status, tags, "
                        "source, subscribed_at, unsubscribed_at, consent_ip, "
                        'consent_at, consent_source, ignore, custom with "key").'
                    ),
                    "new_fields": _text(
                        'JSON array of {"key", "type", "label"?, "options"?} '
                        "declared before values are typed."
                    ),
                },
            }
        }
    },
}
