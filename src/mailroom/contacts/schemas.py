"""Contact shapes. Field rules whose wording the spec fixes are checked in the service, so the
models stay permissive where a precise message matters (e.g. `email is required`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field, StrictBool, model_validator

from mailroom.core.languages import ISO_639_1
from mailroom.core.loose import DAY, Doc, body_config, choice, nullable, text
from mailroom.core.pagination import Pagination
from mailroom.models import CONTACT_STATUSES

PATCH_STATUSES = CONTACT_STATUSES
UPDATABLE_FIELDS = ("email", "first_name", "last_name", "status", "source", "language")
MAX_SAFE_INTEGER = 2**53  # larger integers are refused (no double holds them exactly)

EMAIL = text(254, min_length=3, format="email")
LANGUAGES = sorted(ISO_639_1)
CUSTOM_FIELDS = {
    "type": "object",
    "maxProperties": 50,
    "propertyNames": {
        "minLength": 1,
        "maxLength": 64,
        "not": {"enum": ["__proto__", "constructor", "prototype"]},
    },
    "additionalProperties": {
        "anyOf": [
            {"type": "string", "maxLength": 200},
            {"type": "number", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER},
            {"type": "boolean"},
            {"type": "null"},
        ]
    },
}
CUSTOM_FIELDS_TEXT = (
    "Flat object: up to 50 keys of 1-64 characters; values a string (200), a number or a "
    "boolean. A key declared in the custom-field registry takes values of its type."
)
LANGUAGE_TEXT = (
    "ISO 639-1 code; regional forms such as `fr-FR` or `pt_BR` are also accepted and reduced "
    "to the primary code."
)

Email = Annotated[Any, Doc(EMAIL)]
CustomFields = Annotated[Any, Doc(nullable(CUSTOM_FIELDS))]


class ContactCreate(BaseModel):
    model_config = body_config("email", example={"email": "jane@example.com", "first_name": "Jane"})

    email: Email = Field(None, description="Trimmed and lowercased.")
    first_name: str | None = Field(None, max_length=100)
    last_name: str | None = Field(None, max_length=100)
    source: str | None = Field(None, max_length=40, description="Default `api`.")
    language: Annotated[Any, Doc(nullable(choice(*LANGUAGES)))] = Field(
        None, description=LANGUAGE_TEXT
    )
    custom_fields: CustomFields = Field(None, description=CUSTOM_FIELDS_TEXT)
    resubscribe: StrictBool = Field(
        False, description="Accept an address suppressed as `unsubscribed` (fresh consent)."
    )


def _flag_is(name: str, value: Any) -> dict[str, Any]:
    return {"required": [name], "properties": {name: {"const": value}}}


# PATCH needs a field to change (or `resubscribe: true`), and its flags combine only in the ways
# the spec allows; breaking a rule is a 400 with the spec's message.
UPDATE_RULES: list[dict[str, Any]] = [
    {
        "anyOf": [
            *({"required": [name]} for name in (*UPDATABLE_FIELDS, "custom_fields")),
            _flag_is("resubscribe", True),
        ]
    },
    {
        "if": _flag_is("suppress", True),
        "then": {
            "required": ["status"],
            "properties": {
                "status": {"const": "unsubscribed"},
                "resubscribe": {"not": {"const": True}},
            },
        },
    },
    {
        "if": _flag_is("resubscribe", True),
        "then": {"properties": {"status": {"const": "subscribed"}}},
    },
    {"if": _flag_is("replace_custom_fields", True), "then": {"required": ["custom_fields"]}},
]


class ContactUpdate(BaseModel):
    model_config = body_config(forbid_extra=True, rules=UPDATE_RULES)

    email: Email = None
    first_name: str | None = Field(None, max_length=100)
    last_name: str | None = Field(None, max_length=100)
    # Any value reaches the service, which answers the spec's one message for a bad status.
    status: Annotated[Any, Doc(choice(*PATCH_STATUSES))] = Field(
        None, description="subscribed, unsubscribed, bounced, complained or archived."
    )
    source: str | None = Field(None, max_length=40)
    language: Annotated[Any, Doc(nullable(choice("", *LANGUAGES)))] = Field(
        None, description=f"{LANGUAGE_TEXT} Null or empty clears it."
    )
    custom_fields: Annotated[Any, Doc(CUSTOM_FIELDS)] = Field(
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


BULK_ACTIONS = (
    "unsubscribe",
    "archive",
    "restore",
    "delete",
    "erase",
    "add_tag",
    "remove_tag",
    "add_to_list",
    "remove_from_list",
    "export",
)
MAX_BULK = 50_000
# As the list query's parameters; a key given as null is no filter.
CONTACT_FILTER = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "q": nullable(text(description="Substring of email, first or last name.")),
        "status": nullable(choice(*PATCH_STATUSES)),
        "tag": nullable(text(description="Tag id.")),
        "list": nullable(text(description="List id.")),
        "source": nullable(text(description="Exact source.")),
        "from": nullable(
            {**DAY, "description": "Added on or after (YYYY-MM-DD; any other string is ignored)."}
        ),
        "to": nullable(
            {**DAY, "description": "Added on or before (YYYY-MM-DD; any other string is ignored)."}
        ),
        "segment": nullable(
            text(
                description="Segment id: contacts its rule matches, of the statuses it takes "
                "(404 `Segment not found` for an id that is not this workspace's)."
            )
        ),
    },
}


def _action_needs(actions: tuple[str, ...], field: str) -> dict[str, Any]:
    return {
        "if": {"required": ["action"], "properties": {"action": {"enum": list(actions)}}},
        "then": {"required": [field]},
    }


BULK_RULES: list[dict[str, Any]] = [
    {
        "anyOf": [
            {"required": ["contact_ids"], "properties": {"contact_ids": {"type": "array"}}},
            {"required": ["filter"], "properties": {"filter": {"type": "object"}}},
        ]
    },
    _action_needs(("add_tag", "remove_tag"), "tag_id"),
    _action_needs(("add_to_list", "remove_from_list"), "list_id"),
]


class BulkBody(BaseModel):
    """Loosely parsed on purpose: the service answers each mistake with the spec's message."""

    model_config = body_config("action", rules=BULK_RULES)

    action: Annotated[Any, Doc(choice(*BULK_ACTIONS))] = Field(
        None, description="What to do; `export` answers a CSV and needs `contacts:export`."
    )
    contact_ids: Annotated[
        Any,
        Doc(
            {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_BULK,
                # Non-string and empty ids are dropped (the spec's rule), so an item may be
                # anything; at least one must be an id.
                "items": {},
                "contains": {"type": "string", "minLength": 1},
            }
        ),
    ] = Field(
        None,
        description="Contact ids (either this or filter); unknown ids are ignored, and so are "
        "items that are not non-empty strings (at least one id is needed).",
    )
    filter: Annotated[Any, Doc(CONTACT_FILTER)] = Field(
        None, description="The list query's keys; acts on up to 50,000 matching contacts."
    )
    tag_id: Annotated[Any, Doc(text(min_length=1))] = Field(
        None, description="For add_tag and remove_tag."
    )
    list_id: Annotated[Any, Doc(text(min_length=1))] = Field(
        None, description="For add_to_list and remove_from_list."
    )
    suppress: Annotated[Any, Doc({"type": "boolean"})] = Field(
        None, description="unsubscribe only: also block the addresses."
    )


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


def _text(description: str, **schema: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **schema}


def form_flag(description: str) -> dict[str, Any]:
    """A multipart boolean: the text `true` or `false` (also 1/0, yes/no; blank is default)."""
    return {"type": "string", "enum": ["true", "false"], "description": description}


def json_text(description: str, content: dict[str, Any]) -> dict[str, Any]:
    """A multipart field carrying JSON text, with the schema of what it encodes."""
    return {
        "type": "string",
        "contentMediaType": "application/json",
        "contentSchema": content,
        "description": description,
    }


MAPPING_TARGETS = (
    "email",
    "first_name",
    "last_name",
    "status",
    "tags",
    "source",
    "subscribed_at",
    "unsubscribed_at",
    "consent_ip",
    "consent_at",
    "consent_source",
    "ignore",
    "custom",
)
MAPPING = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["column", "target"],
        "properties": {
            "column": {"type": "integer", "minimum": 0},
            "target": {"type": "string", "enum": list(MAPPING_TARGETS)},
            "key": {"type": "string", "pattern": "^[A-Za-z0-9_]{1,64}$"},
        },
    },
}
NEW_FIELDS = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["key"],
        "properties": {
            "key": {"type": "string", "pattern": "^[A-Za-z0-9_]{1,64}$"},
            "type": {"type": "string", "enum": ["text", "number", "boolean", "date", "dropdown"]},
            "label": {"type": "string", "maxLength": 80},
            "options": {"type": "array", "items": {"type": "string", "maxLength": 200}},
        },
    },
}

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
                        "description": "UTF-8 CSV, at most 5 MB; first line is the header, "
                        "with an `email` column (or a `mapping` naming it).",
                    },
                    "default_status": {
                        "type": "string",
                        "enum": ["subscribed", "unsubscribed"],
                        "description": "For blank status cells (default subscribed).",
                    },
                    "source": _text(
                        "Source for rows without a source cell (default import).", maxLength=40
                    ),
                    "skip_duplicates": form_flag(
                        "true (default): existing contacts keep names and status; false: names "
                        "and source are refreshed."
                    ),
                    "run_automations": form_flag("true to enrol new contacts in automations."),
                    "check_domains": form_flag(
                        "true to skip rows whose domain cannot receive mail."
                    ),
                    "tags": _text("Tags for every row, separated by ; or |."),
                    "list_id": _text("Add every subscribed contact to this list."),
                    "mapping": json_text(
                        'Columns to targets, e.g. [{"column": 0, "target": "email"}]; target '
                        "`custom` takes a `key`. Exactly one column maps to email.",
                        MAPPING,
                    ),
                    "new_fields": json_text(
                        "Custom fields declared in the registry before values are typed.",
                        NEW_FIELDS,
                    ),
                },
            },
            "encoding": {"file": {"contentType": "text/csv"}},
        }
    },
}
