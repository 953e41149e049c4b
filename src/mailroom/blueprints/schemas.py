from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from mailroom.blueprints.parts import PART_NAMES, SUPPORTED
from mailroom.core.loose import Doc, body_config, name_field, nullable, text
from mailroom.core.pagination import Pagination

INCLUDE = {
    "type": "array",
    "minItems": 1,
    "items": {"type": "string", "enum": list(SUPPORTED)},
    "description": "Parts to capture (default: all). Parts: " + ", ".join(PART_NAMES) + ".",
}
DESCRIPTION = nullable(text(1000))  # null: no description


class BlueprintCreate(BaseModel):
    model_config = body_config(
        "name",
        forbid_extra=True,
        example={"name": "Newsletter set-up", "include": ["custom_fields", "tags", "lists"]},
    )
    name: Annotated[Any, Doc(name_field(100))] = None
    description: Annotated[Any, Doc(DESCRIPTION)] = None
    include: Annotated[Any, Doc(INCLUDE)] = None


class BlueprintUpdate(BaseModel):
    model_config = body_config(forbid_extra=True, rules=[{"minProperties": 1}])
    name: Annotated[Any, Doc(name_field(100))] = None
    description: Annotated[Any, Doc(DESCRIPTION)] = None


class BlueprintApply(BaseModel):
    model_config = body_config(forbid_extra=True)
    dry_run: Annotated[Any, Doc({"type": "boolean"})] = Field(
        None, description="Default true: answer the plan, change nothing."
    )
    on_conflict: Annotated[Any, Doc({"type": "string", "enum": ["skip", "update"]})] = Field(
        None,
        description="What to do with an object of the same name and other content: `skip` "
        "(default) or `update`.",
    )


class BlueprintOut(BaseModel):
    id: str
    name: str
    description: str
    parts: list[str]
    counts: dict[str, int]
    starter: bool
    created_at: datetime
    updated_at: datetime
    source_workspace_id: str | None


class BlueprintEnvelope(BaseModel):
    blueprint: BlueprintOut


class BlueprintList(BaseModel):
    blueprints: list[BlueprintOut]
    pagination: Pagination


class BlueprintDeleted(BaseModel):
    success: bool
    id: str


class PlanRow(BaseModel):
    part: str
    name: str
    action: str = Field(description="`create`, `unchanged`, `update`, `skip` or `conflict`.")
    reason: str | None = None


class BlueprintApplied(BaseModel):
    dry_run: bool
    applied: bool
    plan: list[PlanRow]
    secrets: list[dict[str, str]] | None = None
