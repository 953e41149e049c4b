"""Form shapes. Bodies are parsed loosely (the service names the place of each mistake,
`fields[1].key must be ...`) and documented precisely."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, cast

from pydantic import BaseModel, Field
from pydantic.json_schema import JsonDict

from mailroom.core.loose import Doc, body_config, name_field, text
from mailroom.core.pagination import Pagination
from mailroom.forms.service import (
    MAX_FIELDS,
    MAX_LABEL,
    MAX_LISTS,
    MAX_TEXT,
    MAX_URL,
)
from mailroom.pages.i18n import LANGUAGES

FIELD_IN = {
    "type": "object",
    "additionalProperties": False,
    "required": ["key"],
    "properties": {
        "key": text(
            64,
            min_length=1,
            pattern=r"^[A-Za-z0-9_]{1,64}$",
            description="`email`, `first_name`, `last_name` or a registered custom field's key",
        ),
        "label": {
            **text(MAX_LABEL),
            "description": "Shown above the input (default: the "
            "page's words for built-in fields, the custom field's label).",
        },
        "required": {"type": "boolean", "description": "Default false; email is always required."},
    },
}
FIELDS = {
    "type": "array",
    "minItems": 1,
    "maxItems": MAX_FIELDS,
    "items": FIELD_IN,
    "description": "In the order shown; `email` is always asked and required (put first when "
    "missing). Each key once. Default: just `email`.",
}
LIST_IDS = {
    "type": "array",
    "maxItems": MAX_LISTS,
    "items": text(36, min_length=1),
    "description": "Lists of this workspace a submission joins (may be empty).",
}
LANGS = {
    "type": "array",
    "minItems": 1,
    "items": {"enum": list(LANGUAGES)},
    "description": "Languages of the hosted page; the first is the default (default `en`).",
}
# Printable ASCII in the published pattern (the service also takes other non-space
# characters): the same class in Python's and ECMA's regex dialects, so generators agree.
URL_PATTERN = r"^https?://[A-Za-z0-9.:@%_~!$&'()*+,;=\[\]-]+([/?#][\x21-\x7e]*)?$"
URL = {
    **text(MAX_URL, pattern=URL_PATTERN),
    "description": "http(s) URL to send people to after "
    "a form-encoded submission (instead of the success message).",
}
NULLABLE_TEXT = {"anyOf": [text(MAX_TEXT), {"type": "null"}]}
NULLABLE_URL = {"anyOf": [URL, {"type": "null"}]}

EXAMPLE = {
    "name": "Newsletter signup",
    "fields": [{"key": "email"}, {"key": "first_name", "label": "Your first name"}],
    "list_ids": ["..."],
    "double_opt_in": True,
    "success_message": "Thanks! Check your inbox to confirm.",
    "consent_text": "We send one email a week. Unsubscribe at any time.",
    "languages": ["en", "fr"],
}


class FormCreate(BaseModel):
    model_config = body_config("name", forbid_extra=True, example=EXAMPLE)
    name: Annotated[Any, Doc(name_field(100))] = Field(None, description="Unique ignoring case.")
    fields: Annotated[Any, Doc(FIELDS)] = None
    list_ids: Annotated[Any, Doc(LIST_IDS)] = None
    double_opt_in: Annotated[Any, Doc({"type": "boolean", "default": False})] = Field(
        None, description="Confirm by email before joining (always on for Free-plan workspaces)."
    )
    success_message: Annotated[Any, Doc(NULLABLE_TEXT)] = Field(
        None, description="Shown after a submission (default: a thank-you in the page's language)."
    )
    redirect_url: Annotated[Any, Doc(NULLABLE_URL)] = None
    consent_text: Annotated[Any, Doc(NULLABLE_TEXT)] = Field(
        None, description="Shown above the button: what people agree to."
    )
    languages: Annotated[Any, Doc(LANGS)] = None


class FormUpdate(BaseModel):
    model_config = body_config(forbid_extra=True, rules=[{"minProperties": 1}])
    name: Annotated[Any, Doc(name_field(100))] = None
    fields: Annotated[Any, Doc(FIELDS)] = None
    list_ids: Annotated[Any, Doc(LIST_IDS)] = None
    double_opt_in: Annotated[Any, Doc({"type": "boolean"})] = None
    success_message: Annotated[Any, Doc(NULLABLE_TEXT)] = None
    redirect_url: Annotated[Any, Doc(NULLABLE_URL)] = None
    consent_text: Annotated[Any, Doc(NULLABLE_TEXT)] = None
    languages: Annotated[Any, Doc(LANGS)] = None


FIELD_OUT: dict[str, Any] = {
    "type": "object",
    "required": ["key", "label", "type", "required"],
    "properties": {
        "key": {"type": "string"},
        "label": {"type": "string"},
        "type": {"enum": ["email", "text", "number", "boolean", "date", "dropdown"]},
        "required": {"type": "boolean"},
        "options": {
            "type": "array",
            "items": {"type": "string"},
            "description": "A dropdown's choices.",
        },
    },
}


class FormStats(BaseModel):
    submissions: int = Field(description="Accepted submissions (confirmed or waiting).")
    confirmed: int = Field(description="Submissions in effect (single opt-in, or confirmed).")


class FormOut(BaseModel):
    id: str
    name: str
    fields: list[dict[str, Any]] = Field(json_schema_extra={"items": cast(JsonDict, FIELD_OUT)})
    list_ids: list[str]
    double_opt_in: bool = Field(description="In effect (always true on the Free plan).")
    success_message: str | None
    redirect_url: str | None
    consent_text: str | None
    languages: list[str]
    url: str = Field(description="The hosted page.")
    stats: FormStats
    created_at: datetime
    updated_at: datetime


class FormEnvelope(BaseModel):
    form: FormOut


class FormList(BaseModel):
    forms: list[FormOut]
    pagination: Pagination


class FormDeleted(BaseModel):
    success: bool
    id: str


class EmbedOut(BaseModel):
    html: str = Field(description="A self-contained HTML form posting to the hosted page.")


class EmbedEnvelope(BaseModel):
    embed: EmbedOut
