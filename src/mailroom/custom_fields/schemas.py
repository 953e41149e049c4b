from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field, StrictBool
from pydantic.json_schema import SkipJsonSchema

from mailroom.core.loose import NAME_PATTERN, Doc, body_config, choice, nullable, text

FIELD_TYPES = ("text", "number", "boolean", "date", "dropdown")
KEY = text(pattern="^[A-Za-z0-9_]{1,64}$")
LABEL = text(80, min_length=1, pattern=NAME_PATTERN)
OPTIONS = {
    "type": "array",
    "minItems": 1,
    "maxItems": 100,
    "items": text(200, min_length=1, pattern=NAME_PATTERN),
}
IS_DROPDOWN = {"required": ["type"], "properties": {"type": {"const": "dropdown"}}}
NO_OPTIONS = {"anyOf": [{"type": "null"}, {"type": "array", "maxItems": 0}]}


class FieldCreate(BaseModel):
    model_config = body_config(
        "key",
        rules=[
            {
                "if": IS_DROPDOWN,
                "then": {"required": ["options"], "properties": {"options": OPTIONS}},
                "else": {"properties": {"options": NO_OPTIONS}},
            }
        ],
        example={"key": "plan", "type": "dropdown", "options": ["free", "paid"]},
    )
    key: Annotated[str | None, Doc(KEY)] = Field(
        None, description="1-64 letters, digits or underscores; immutable."
    )
    label: Annotated[str | None, Doc(nullable(LABEL))] = Field(
        None, description="Up to 80 characters; default from the key."
    )
    type: Annotated[str | None, Doc(nullable(choice(*FIELD_TYPES)))] = Field(
        None, description="text (default), number, boolean, date, dropdown."
    )
    options: Annotated[list[str] | None, Doc(nullable(OPTIONS))] = Field(
        None, description="dropdown only: 1-100 options."
    )
    confirm_violations: StrictBool = Field(
        False, description="Apply the type even though stored values do not fit it."
    )


class FieldUpdate(BaseModel):
    model_config = body_config(
        forbid_extra=True,
        rules=[
            {"anyOf": [{"required": ["label"]}, {"required": ["type"]}, {"required": ["options"]}]},
            {
                "if": IS_DROPDOWN,
                "then": {"required": ["options"], "properties": {"options": OPTIONS}},
            },
            {
                "if": {
                    "required": ["type"],
                    "properties": {"type": {"enum": list(FIELD_TYPES[:4])}},
                },
                "then": {"properties": {"options": NO_OPTIONS}},
            },
        ],
    )
    # Left out of the document: the key may be repeated unchanged; a different one is a 400.
    key: SkipJsonSchema[str | None] = None
    label: Annotated[str | None, Doc(LABEL)] = None
    type: Annotated[str | None, Doc(nullable(choice(*FIELD_TYPES)))] = None
    options: Annotated[list[str] | None, Doc(nullable(OPTIONS))] = None
    confirm_violations: StrictBool = False


class FieldOut(BaseModel):
    id: str
    key: str
    label: str
    type: str
    options: list[str] | None
    position: int
    created_at: datetime
    updated_at: datetime


class FieldWithUses(FieldOut):
    uses: int | None = Field(description="Contacts carrying the key.")


class KeyUses(BaseModel):
    key: str
    uses: int


class FieldList(BaseModel):
    fields: list[FieldWithUses]
    unregistered: list[KeyUses]
    unaddressable: list[KeyUses]
    usage_available: bool


class FieldEnvelope(BaseModel):
    field: FieldOut


class ViolationsOut(BaseModel):
    count: int
    examples: list[str]
    partial: bool


class FieldUpdated(BaseModel):
    field: FieldOut
    violations: ViolationsOut | None


class FieldDeleted(BaseModel):
    ok: bool
    key: str
    contacts_cleared: int | None
    forms_updated: int


class ScanOut(BaseModel):
    ok: bool
    added: list[FieldOut]
    unaddressable: list[str]
