"""The published shape of an automation's step tree: one named schema per step type, a union
discriminated by `type`, and conditions whose `yes` / `no` lists hold steps again (recursive
through the named `ConditionStep`), so client generators can build every type of it.

These models only document. A body's steps are never parsed by them: `steps.py` checks what
was sent and names the place of each mistake (`steps[2].seconds must be at least 1`), which a
Pydantic validation error would not. So a field is written as the service reads it: absent or
null where the service takes that as "not given", no bound the service does not hold.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SkipValidation
from pydantic.json_schema import SkipJsonSchema

from mailroom.automations import steps as rules
from mailroom.core.loose import Doc
from mailroom.segments.schemas import rule_schema

ID = Field(max_length=36, min_length=1, pattern=r"[^\s]")
# Optional text the service skips when empty, but refuses when only spaces.
SOME_TEXT = r"^$|[^\s]"
CLOCK = r"^([01]\d|2[0-3]):[0-5]\d$"
# The whole tree holds at most 100 steps; no one list is bounded on its own, nor the depth.
MAX_STEPS = rules.MAX_STEPS


def _document(schema: dict[str, Any]) -> None:
    """Fields default to "not given", which is no value to publish (`default: null` on a
    non-null field would be a lie to generators)."""
    for prop in schema.get("properties", {}).values():
        if prop.get("default", ...) is None:
            del prop["default"]


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_document)


class _Step(_Shape):
    type: str  # each step type's own literal: the union's discriminator
    id: str | None = Field(
        None,
        max_length=64,
        pattern=r"^[A-Za-z0-9_-]{0,64}$",
        description="Yours (unique in the automation) or, when absent or empty, assigned. Runs "
        "keep their step by id when the steps are edited.",
    )
    label: str | None = Field(
        None, max_length=rules.MAX_LABEL, description="Shown in reports; default: the type's."
    )


class WaitUntil(_Shape):
    weekday: str = Field(json_schema_extra={"enum": list(rules.WEEKDAYS)})
    time: Annotated[str, Field(max_length=5, pattern=CLOCK)] | SkipJsonSchema[None] = Field(
        None, description="HH:MM, 24-hour (default 09:00)."
    )


def _seconds_or_until(schema: dict[str, Any]) -> None:
    _document(schema)
    # Under `allOf`: an `anyOf` beside `properties` reads to generators as a union instead of
    # the object it constrains.
    schema["allOf"] = [{"anyOf": [{"required": ["seconds"]}, {"required": ["until"]}]}]


class WaitStep(_Step):
    """Waits `seconds`, or `until` the next weekday and time in the automation's time zone
    (`until` wins when both are sent)."""

    model_config = ConfigDict(json_schema_extra=_seconds_or_until)
    type: Literal["wait"]
    # Optional, yet not null: a null `seconds` or `until` is not given, and one is needed.
    seconds: Annotated[int, Field(ge=1, le=rules.MAX_WAIT_SECONDS)] | SkipJsonSchema[None] = None
    until: WaitUntil | SkipJsonSchema[None] = None


class SendEmailStep(_Step):
    """Sends a template to the contact (as transactional mail of kind `automation`)."""

    type: Literal["send_email"]
    template_id: str = ID
    from_email: str | None = Field(
        None,
        max_length=254,
        pattern=SOME_TEXT,
        description="The sender's address (absent or empty: the workspace's sender identity).",
    )
    from_name: str | None = Field(None, max_length=254, pattern=SOME_TEXT)


class AddTagStep(_Step):
    type: Literal["add_tag"]
    tag_id: str = ID


class RemoveTagStep(_Step):
    type: Literal["remove_tag"]
    tag_id: str = ID


class AddToListStep(_Step):
    type: Literal["add_to_list"]
    list_id: str = ID


class RemoveFromListStep(_Step):
    type: Literal["remove_from_list"]
    list_id: str = ID


class UpdateFieldStep(_Step):
    type: Literal["update_field"]
    field: str = Field(
        max_length=64,
        min_length=1,
        pattern=r"[^\s]",
        description="first_name, last_name, language or custom_fields.<key>",
    )
    value: str | float | bool | None = Field(description="The new value (null clears it).")


class ConditionStep(_Step):
    """Runs `yes` or `no` for the contact (a segment rule), then goes on after itself."""

    type: Literal["condition"]
    rules: Annotated[Any, Doc(rule_schema())]
    yes: list[Step] | None = Field(None, max_length=MAX_STEPS)
    no: list[Step] | None = Field(None, max_length=MAX_STEPS)


class CallWebhookStep(_Step):
    """Sends the `automation.step_reached` event to these endpoints (absent: every endpoint
    that takes it)."""

    type: Literal["call_webhook"]
    endpoint_ids: list[Annotated[str, ID]] | None = Field(None, max_length=20)


class ExitStep(_Step):
    type: Literal["exit"]


Step = Annotated[
    WaitStep
    | SendEmailStep
    | AddTagStep
    | RemoveTagStep
    | AddToListStep
    | RemoveFromListStep
    | UpdateFieldStep
    | ConditionStep
    | CallWebhookStep
    | ExitStep,
    Field(discriminator="type"),
]
ConditionStep.model_rebuild()

STEPS_DESCRIPTION = (
    "In order. A `condition` runs `yes` or `no` for the contact (a segment rule), then goes "
    f"on after itself. {MAX_STEPS} steps in all at most, every branch counted."
)

StepList = Annotated[list[Step], Field(max_length=MAX_STEPS)]


# A body's `steps`: documented as the step tree, taken as sent (never validated) for
# `steps.clean_steps` to check and place each mistake. A model with it dumps it as it came
# (a `field_serializer` returning the value).
Steps = SkipValidation[StepList] | None
