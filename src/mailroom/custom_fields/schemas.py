from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, StrictBool


class FieldCreate(BaseModel):
    key: str | None = Field(None, description="Required: 1-64 letters, digits or underscores.")
    label: str | None = Field(None, description="Up to 80 characters; default from the key.")
    type: str | None = Field(None, description="text (default), number, boolean, date, dropdown.")
    options: list[str] | None = Field(None, description="dropdown only: 1-100 options.")
    confirm_violations: StrictBool = Field(
        False, description="Apply the type even though stored values do not fit it."
    )


class FieldUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str | None = Field(None, description="Immutable: a different key is refused.")
    label: str | None = None
    type: str | None = None
    options: list[str] | None = None
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
