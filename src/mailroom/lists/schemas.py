from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field, StrictBool

from mailroom.contacts.schemas import ContactOut
from mailroom.core.loose import Doc, body_config, name_field
from mailroom.core.pagination import Pagination


class ListCreate(BaseModel):
    model_config = body_config("name", example={"name": "Newsletter", "double_opt_in": True})
    name: Annotated[Any, Doc(name_field(100))] = Field(
        None, description="Up to 100 characters, unique ignoring case."
    )
    description: str | None = Field(None, max_length=500)
    double_opt_in: StrictBool = Field(
        False, description="Members join unconfirmed until they confirm by email."
    )


class ListUpdate(BaseModel):
    model_config = body_config(forbid_extra=True, rules=[{"minProperties": 1}])
    name: Annotated[Any, Doc(name_field(100))] = None
    description: str | None = Field(None, max_length=500)
    double_opt_in: Annotated[Any, Doc({"type": "boolean"})] = None


class ListOut(BaseModel):
    id: str
    name: str
    description: str
    double_opt_in: bool
    effective_double_opt_in: bool = Field(
        description="True on a double opt-in list and on every list of a Free-plan workspace."
    )
    member_count: int
    confirmed_count: int
    unconfirmed_count: int
    created_at: datetime
    updated_at: datetime


class ListEnvelope(BaseModel):
    list: ListOut


class ListPage(BaseModel):
    lists: list[ListOut]
    pagination: Pagination


class ListDeleted(BaseModel):
    success: bool
    id: str
    members_removed: int


class Membership(BaseModel):
    status: str = Field(description="confirmed or unconfirmed")
    joined_at: datetime
    confirmed_at: datetime | None


class ListMemberOut(ContactOut):
    membership: Membership


class ListMemberPage(BaseModel):
    contacts: list[ListMemberOut]
    pagination: Pagination


class AddMembers(BaseModel):
    model_config = body_config("contact_ids")
    contact_ids: Annotated[
        Any,
        Doc(
            {
                "type": "array",
                "minItems": 1,
                "maxItems": 1000,
                "items": {"type": "string", "minLength": 1},
            }
        ),
    ] = Field(None, description="Contact ids of this workspace (up to 1,000).")


class MembersAdded(BaseModel):
    added: int
    already_member: int
    skipped_not_subscribed: int
    not_found: int
    membership: str = Field(description="confirmed or unconfirmed: how new members joined.")


class Success(BaseModel):
    success: bool


class ConfirmationSent(BaseModel):
    sent: bool
