from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from mailroom.core.pagination import Pagination


class TagCreate(BaseModel):
    name: str | None = Field(None, description="Required; 1-60 characters, unique ignoring case.")
    color: str | None = Field(None, description="Hex colour like #2563eb; one is picked if absent.")


class TagUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    color: str | None = None


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
    tag_id: str | None = Field(None, description="Required: id of a tag of this workspace.")


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
