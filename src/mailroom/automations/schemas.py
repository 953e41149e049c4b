"""Automation shapes. Bodies are parsed loosely (the service names the place of each mistake,
`steps[2].seconds must be at least 1`) and documented precisely: the trigger by type, and the
step tree as named schemas (`step_shapes.py`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from zoneinfo import available_timezones

from pydantic import BaseModel, Field, field_serializer

from mailroom.automations.step_shapes import STEPS_DESCRIPTION, Steps
from mailroom.campaigns.schemas import Revenue
from mailroom.core.loose import Doc, body_config, choice, name_field, text
from mailroom.core.pagination import Pagination
from mailroom.models import AUTOMATION_STATUSES, RUN_STATES

ID = text(36, min_length=1)
ZONES = {"enum": sorted(available_timezones()), "description": "an IANA time zone"}
CLOCK = text(5, pattern=r"^([01]\d|2[0-3]):[0-5]\d$", description="HH:MM, 24-hour")


def _object(required: list[str], **properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": required,
        "properties": properties,
    }


TRIGGER = {
    "oneOf": [
        _object(["type"], type={"const": "contact_created"}),
        _object(["type", "tag_id"], type={"const": "tag_added"}, tag_id=ID),
        _object(["type", "list_id"], type={"const": "list_joined"}, list_id=ID),
        _object(["type", "form_id"], type={"const": "form_submitted"}, form_id=ID),
        _object(
            ["type", "field"],
            type={"const": "date_anniversary"},
            field=text(64, min_length=1, description="a date custom field's key"),
            days={"type": "integer", "minimum": -365, "maximum": 365, "default": 0},
            time=CLOCK,
        ),
        _object(["type"], type={"const": "manual"}),
        _object(
            ["type", "store_id"],
            type={"const": "order_placed"},
            store_id={**ID, "description": "a store of the workspace"},
            first_order_only={
                "type": "boolean",
                "default": False,
                "description": "only the contact's first order in the store (no earlier one)",
            },
        ),
        _object(
            ["type", "store_id"],
            type={"const": "cart_abandoned"},
            store_id={**ID, "description": "a store of the workspace"},
        ),
    ],
    "description": "What enrols a contact. `date_anniversary`: `days` before (negative) or "
    "after the date in the field each year, at `time` in the automation's time zone. "
    "`order_placed`: a new order of the store whose address is a subscribed contact's; "
    "`cart_abandoned`: such a cart, once, when the store counts it abandoned. Their email "
    "steps see the order or cart as it is when the email is queued, as `vars.order` / "
    "`vars.cart` (`lines[]` with `title`, `url`, `image_url`, `quantity`, `price`; `total`, "
    '`currency`; a cart\'s `checkout_url`; money as strings like "19.90"); a cart converted '
    "(or deleted) by then ends the run `exited`.",
}

STEPS_TEXT = (
    "Trigger, steps: see the schema. A bad step names its place (`steps[1].tag_id: Tag not found`)."
)


class AutomationCreate(BaseModel):
    model_config = body_config(
        "name",
        "trigger",
        forbid_extra=True,
        example={
            "name": "Welcome",
            "trigger": {"type": "contact_created"},
            "steps": [
                {"type": "wait", "seconds": 3600, "label": "An hour later"},
                {"type": "send_email", "template_id": "tpl_...", "label": "Welcome email"},
            ],
        },
    )
    name: Annotated[Any, Doc(name_field(100))] = Field(None, description="Unique ignoring case.")
    trigger: Annotated[Any, Doc(TRIGGER)] = None
    steps: Steps = Field(None, description=STEPS_DESCRIPTION)
    allow_reentry: Annotated[Any, Doc({"type": "boolean", "default": False})] = Field(
        None, description="A contact who finished may enter again on a later trigger."
    )
    time_zone: Annotated[Any, Doc(ZONES)] = Field(
        None, description="IANA zone for waits until a weekday and time (default UTC)."
    )

    @field_serializer("steps")
    def _steps_as_sent(self, value: Any) -> Any:
        return value


class AutomationUpdate(BaseModel):
    model_config = body_config(forbid_extra=True, rules=[{"minProperties": 1}])
    name: Annotated[Any, Doc(name_field(100))] = None
    trigger: Annotated[Any, Doc(TRIGGER)] = None
    steps: Steps = Field(None, description=STEPS_DESCRIPTION)
    allow_reentry: Annotated[Any, Doc({"type": "boolean"})] = None
    time_zone: Annotated[Any, Doc(ZONES)] = None

    @field_serializer("steps")
    def _steps_as_sent(self, value: Any) -> Any:
        return value


class EnrolBody(BaseModel):
    model_config = body_config(
        forbid_extra=True,
        rules=[{"minProperties": 1, "maxProperties": 1}],
        example={"contact_ids": ["..."]},
    )
    contact_ids: Annotated[
        Any, Doc({"type": "array", "minItems": 1, "maxItems": 1000, "items": ID})
    ] = None
    segment_id: Annotated[Any, Doc(ID)] = None


class AutomationStats(BaseModel):
    enrolled: int
    active: int = Field(description="Runs going on now (waiting included).")
    completed: int
    exited: int
    failed: int
    revenue: Revenue = Field(
        description="Orders placed within the store's attribution_days after the contact "
        "clicked one of this automation's emails (the last email clicked wins)."
    )


class AutomationOut(BaseModel):
    id: str
    name: str
    status: str = Field(json_schema_extra={"enum": list(AUTOMATION_STATUSES)})
    trigger: dict[str, Any]
    steps: list[dict[str, Any]]
    allow_reentry: bool
    time_zone: str
    stats: AutomationStats
    created_at: datetime
    updated_at: datetime


class AutomationEnvelope(BaseModel):
    automation: AutomationOut


class AutomationList(BaseModel):
    automations: list[AutomationOut]
    pagination: Pagination


class AutomationDeleted(BaseModel):
    success: bool
    id: str


class Enrolled(BaseModel):
    enrolled: int = Field(
        description="Runs started (contacts already in it, or not subscribed, are left out)."
    )


class HistoryEntry(BaseModel):
    step_id: str | None
    at: str
    outcome: str


class RunOut(BaseModel):
    id: str
    contact_id: str
    status: str = Field(json_schema_extra={"enum": list(RUN_STATES)})
    step_id: str | None
    next_run_at: datetime | None
    history: list[HistoryEntry]
    created_at: datetime
    ended_at: datetime | None


class RunList(BaseModel):
    runs: list[RunOut]
    pagination: Pagination


RUN_STATUS = choice(*RUN_STATES)
