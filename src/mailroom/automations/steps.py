"""An automation's trigger and steps as clients send them: checked (a bad one is a 400 naming
its place, e.g. `steps[2].seconds must be at least 1`) and stored in a canonical shape, and the
order the runner walks them in.

Steps form a tree: a `condition` holds a `yes` and a `no` list. `walk()` flattens it into
"what comes after each step id": the step after the last of a branch is the one after the
condition. Runs point at step ids, so an edit keeps each run on its step; a run whose step
is gone exits.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mailroom.core.errors import ApiError

TRIGGERS = (
    "contact_created",
    "tag_added",
    "list_joined",
    "form_submitted",
    "date_anniversary",
    "manual",
    "order_placed",
    "cart_abandoned",
)
STORE_TRIGGERS = ("order_placed", "cart_abandoned")  # about one store's orders or carts
STEP_TYPES = (
    "wait",
    "send_email",
    "add_tag",
    "remove_tag",
    "add_to_list",
    "remove_from_list",
    "update_field",
    "condition",
    "call_webhook",
    "exit",
)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MAX_STEPS = 100  # in the whole tree
MAX_WAIT_SECONDS = 366 * 24 * 3600
MAX_LABEL = 100
STEP_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
NAME_FIELDS = ("first_name", "last_name", "language")
LABELS = {
    "wait": "Wait",
    "send_email": "Send email",
    "add_tag": "Add tag",
    "remove_tag": "Remove tag",
    "add_to_list": "Add to list",
    "remove_from_list": "Remove from list",
    "update_field": "Update field",
    "condition": "Condition",
    "call_webhook": "Call webhook",
    "exit": "Exit",
}


@dataclass
class References:
    """Ids the steps and trigger name, to check against the workspace: (place, id)."""

    tags: list[tuple[str, str]]
    lists: list[tuple[str, str]]
    templates: list[tuple[str, str]]
    endpoints: list[tuple[str, str]]
    rules: list[tuple[str, Any]]  # condition rules, checked as segment rules
    fields: list[tuple[str, str]]  # custom-field keys (update_field, date_anniversary)
    forms: list[tuple[str, str]]
    stores: list[tuple[str, str]]  # order_placed, cart_abandoned


def _text(value: Any, place: str, *, required: bool = True, max_length: int = 200) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise ApiError(400, f"{place} is required")
        return ""
    if not isinstance(value, str):
        raise ApiError(400, f"{place} must be a string")
    if len(value.strip()) > max_length:
        raise ApiError(400, f"{place} must be {max_length} characters or fewer")
    return value.strip()


def _integer(value: Any, place: str, low: int, high: int) -> int:
    # JSON has one number type: 30.0 is an integer to JSON Schema, so accept it as one.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, f"{place} must be an integer")
    if value < low:
        raise ApiError(400, f"{place} must be at least {low}")
    if value > high:
        raise ApiError(400, f"{place} must be at most {high}")
    return value


def clean_time_zone(value: Any) -> str:
    zone = _text(value, "time_zone", max_length=64)
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ApiError(400, "time_zone must be an IANA time zone like Europe/Paris") from None
    return zone


def clean_trigger(raw: Any, refs: References) -> dict[str, Any]:
    if raw is None:
        raise ApiError(400, "trigger is required")
    if not isinstance(raw, dict):
        raise ApiError(400, "trigger must be an object")
    kind = raw.get("type")
    if kind not in TRIGGERS:
        raise ApiError(400, f"trigger.type must be one of: {', '.join(TRIGGERS)}")
    trigger: dict[str, Any] = {"type": kind}
    if kind == "tag_added":
        trigger["tag_id"] = _text(raw.get("tag_id"), "trigger.tag_id", max_length=36)
        refs.tags.append(("trigger.tag_id", trigger["tag_id"]))
    elif kind == "list_joined":
        trigger["list_id"] = _text(raw.get("list_id"), "trigger.list_id", max_length=36)
        refs.lists.append(("trigger.list_id", trigger["list_id"]))
    elif kind == "form_submitted":
        trigger["form_id"] = _text(raw.get("form_id"), "trigger.form_id", max_length=36)
        refs.forms.append(("trigger.form_id", trigger["form_id"]))
    elif kind == "date_anniversary":
        trigger["field"] = _text(raw.get("field"), "trigger.field", max_length=64)
        refs.fields.append(("trigger.field", trigger["field"]))
        days = raw.get("days", 0)
        trigger["days"] = _integer(days, "trigger.days", -365, 365)
        moment = _text(raw.get("time", "09:00"), "trigger.time", max_length=5)
        if not TIME.match(moment):
            raise ApiError(400, "trigger.time must be HH:MM (24-hour)")
        trigger["time"] = moment
    elif kind in STORE_TRIGGERS:
        trigger["store_id"] = _text(raw.get("store_id"), "trigger.store_id", max_length=36)
        refs.stores.append(("trigger.store_id", trigger["store_id"]))
        if kind == "order_placed":
            first = raw.get("first_order_only")
            if first is not None and not isinstance(first, bool):
                raise ApiError(400, "trigger.first_order_only must be true or false")
            trigger["first_order_only"] = bool(first)
    return trigger


class _Steps:
    def __init__(self, refs: References) -> None:
        self.refs = refs
        self.ids: set[str] = set()
        self.count = 0

    def steps(self, raw: Any, place: str) -> list[dict[str, Any]]:
        if raw is None:
            return []
        if not isinstance(raw, list):
            raise ApiError(400, f"{place} must be an array")
        return [self.step(item, f"{place}[{i}]") for i, item in enumerate(raw)]

    def step(self, raw: Any, place: str) -> dict[str, Any]:
        self.count += 1
        if self.count > MAX_STEPS:
            raise ApiError(400, f"An automation has at most {MAX_STEPS} steps")
        if not isinstance(raw, dict):
            raise ApiError(400, f"{place} must be an object")
        kind = raw.get("type")
        if kind not in STEP_TYPES:
            raise ApiError(400, f"{place}.type must be one of: {', '.join(STEP_TYPES)}")
        step_id = raw.get("id")
        if step_id in (None, ""):
            step_id = self._new_id()
        elif not isinstance(step_id, str) or not STEP_ID.match(step_id):
            raise ApiError(400, f"{place}.id must be 1-64 letters, digits, - or _")
        if step_id in self.ids:
            raise ApiError(400, f"{place}.id {step_id} is used by another step")
        self.ids.add(step_id)
        label = _text(raw.get("label"), f"{place}.label", required=False, max_length=MAX_LABEL)
        step: dict[str, Any] = {"id": step_id, "type": kind, "label": label or LABELS[kind]}
        getattr(self, f"_{kind}")(raw, place, step)
        return step

    def _new_id(self) -> str:
        while True:
            made = "s_" + secrets.token_hex(4)
            if made not in self.ids:
                return made

    def _wait(self, raw: dict[str, Any], place: str, step: dict[str, Any]) -> None:
        if raw.get("until") is not None:
            until = raw["until"]
            if not isinstance(until, dict):
                raise ApiError(400, f"{place}.until must be an object")
            weekday = until.get("weekday")
            if weekday not in WEEKDAYS:
                raise ApiError(400, f"{place}.until.weekday must be one of: {', '.join(WEEKDAYS)}")
            moment = _text(until.get("time", "09:00"), f"{place}.until.time", max_length=5)
            if not TIME.match(moment):
                raise ApiError(400, f"{place}.until.time must be HH:MM (24-hour)")
            step["until"] = {"weekday": weekday, "time": moment}
            return
        if raw.get("seconds") is None:
            raise ApiError(400, f"{place}.seconds or {place}.until is required")
        step["seconds"] = _integer(raw["seconds"], f"{place}.seconds", 1, MAX_WAIT_SECONDS)

    def _send_email(self, raw: dict[str, Any], place: str, step: dict[str, Any]) -> None:
        step["template_id"] = _text(raw.get("template_id"), f"{place}.template_id", max_length=36)
        self.refs.templates.append((f"{place}.template_id", step["template_id"]))
        for name in ("from_email", "from_name"):
            if raw.get(name) not in (None, ""):
                step[name] = _text(raw[name], f"{place}.{name}", max_length=254)

    def _add_tag(self, raw: dict[str, Any], place: str, step: dict[str, Any]) -> None:
        step["tag_id"] = _text(raw.get("tag_id"), f"{place}.tag_id", max_length=36)
        self.refs.tags.append((f"{place}.tag_id", step["tag_id"]))

    _remove_tag = _add_tag

    def _add_to_list(self, raw: dict[str, Any], place: str, step: dict[str, Any]) -> None:
        step["list_id"] = _text(raw.get("list_id"), f"{place}.list_id", max_length=36)
        self.refs.lists.append((f"{place}.list_id", step["list_id"]))

    _remove_from_list = _add_to_list

    def _update_field(self, raw: dict[str, Any], place: str, step: dict[str, Any]) -> None:
        field = _text(raw.get("field"), f"{place}.field", max_length=64)
        if "value" not in raw:
            raise ApiError(400, f"{place}.value is required")
        value = raw["value"]
        if value is not None and not isinstance(value, str | int | float | bool):
            raise ApiError(400, f"{place}.value must be a string, number, boolean or null")
        if field not in NAME_FIELDS:
            key = field.removeprefix("custom_fields.")
            self.refs.fields.append((f"{place}.field", key))
            field = f"custom_fields.{key}"
        step["field"], step["value"] = field, value

    def _condition(self, raw: dict[str, Any], place: str, step: dict[str, Any]) -> None:
        if raw.get("rules") is None:
            raise ApiError(400, f"{place}.rules is required")
        self.refs.rules.append((f"{place}.rules", raw["rules"]))
        step["rules"] = raw["rules"]  # replaced by the checked form in service.clean
        step["yes"] = self.steps(raw.get("yes"), f"{place}.yes")
        step["no"] = self.steps(raw.get("no"), f"{place}.no")

    def _call_webhook(self, raw: dict[str, Any], place: str, step: dict[str, Any]) -> None:
        ids = raw.get("endpoint_ids")
        if ids is None:
            return
        if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
            raise ApiError(400, f"{place}.endpoint_ids must be an array of endpoint ids")
        if len(ids) > 20:
            raise ApiError(400, f"{place}.endpoint_ids may have at most 20 ids")
        step["endpoint_ids"] = list(dict.fromkeys(ids))
        self.refs.endpoints.extend((f"{place}.endpoint_ids", i) for i in ids)

    def _exit(self, raw: dict[str, Any], place: str, step: dict[str, Any]) -> None:
        return


def clean_steps(raw: Any, refs: References) -> list[dict[str, Any]]:
    if raw is None:
        return []
    return _Steps(refs).steps(raw, "steps")


def new_references() -> References:
    return References([], [], [], [], [], [], [], [])


# ---------------------------------------------------------------- the order of a run


@dataclass(frozen=True)
class Place:
    step: dict[str, Any]
    after: str | None  # the step that follows when this one is done (None: the end)


def walk(steps: list[dict[str, Any]]) -> tuple[str | None, dict[str, Place]]:
    """(the first step's id, each step id -> its step and what follows it)."""
    places: dict[str, Place] = {}

    def visit(items: list[dict[str, Any]], after: str | None) -> str | None:
        for index, step in enumerate(items):
            following = items[index + 1]["id"] if index + 1 < len(items) else after
            places[step["id"]] = Place(step, following)
            if step["type"] == "condition":
                visit(step.get("yes") or [], following)
                visit(step.get("no") or [], following)
        return items[0]["id"] if items else after

    first = visit(steps, None)
    return first, places


def branch_start(step: dict[str, Any], matched: bool, after: str | None) -> str | None:
    """Where a condition leads: its branch's first step, or (an empty branch) what follows."""
    branch = step.get("yes" if matched else "no") or []
    return branch[0]["id"] if branch else after
