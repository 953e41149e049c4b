from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from mailroom.core.loose import Doc, body_config, name_field, nullable, text
from mailroom.core.pagination import Pagination

COLOR = text(pattern=r"^\s*#[0-9a-fA-F]{6}\s*$")


class TagCreate(BaseModel):
    model_config = body_config("name", example={"name": "VIP", "color": "#2563eb"})
    name: Annotated[Any, Doc(name_field(60))] = Field(
        None, description="1-60 characters, unique ignoring case."
    )
    color: Annotated[Any, Doc(nullable(COLOR))] = Field(
        None, description="Hex colour like #2563eb; one is picked if absent."
    )


class TagUpdate(BaseModel):
    model_config = body_config(forbid_extra=True, rules=[{"minProperties": 1}])
    name: Annotated[Any, Doc(name_field(60))] = None
    color: Annotated[Any, Doc(COLOR)] = None


class TagOut(BaseModel):
    id: str
    name: str
    color: str
    contact_count: int
    created_at: datetime
    updated_at: datetime


class TagEnvelope(BaseModel):
    tag: TagOut


class TagList(BaseModel):
    tags: list[TagOut]
    pagination: Pagination


class TagDeleted(BaseModel):
    success: bool
    id: str
    contacts_untagged: int


class ContactTagAttach(BaseModel):
    model_config = body_config("tag_id")
    tag_id: Annotated[Any, Doc(text(min_length=1))] = Field(
        None, description="Id of a tag of this workspace."
    )


class ContactTagLink(BaseModel):
    contact_id: str
    tag_id: str
    created_at: datetime


class ContactTagCreated(BaseModel):
    contact_tag: ContactTagLink


class TagOnContact(BaseModel):
    id: str
    name: str
    color: str
    assigned_at: datetime


class ContactTagList(BaseModel):
    tags: list[TagOnContact]


class Success(BaseModel):
    success: bool
