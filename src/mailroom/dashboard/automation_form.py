"""The automation editor's form and the API's steps, both ways.

Steps form a tree (a condition holds a `yes` and a `no` list); the form is flat: one row per
step in reading order, each with a key (its step id, or a new token until saved) and a place
(`""` the main path, `<key>:yes` / `<key>:no` a condition's branch). A condition row carries
its rule as a rule builder under the prefix `c<i>_` (segment_form). Moving swaps a step with
its neighbour in the same path (a condition moves with its branches); removing a condition
removes its branches; a condition changed to another type leaves its branches' steps after
it. A wait until a weekday made through the API is kept as it is (`raw`); settings the
editor does not show (a send step's from address) are kept while the type stays (`extra`).
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from contextlib import suppress
from typing import Any

from mailroom.automations.steps import STEP_TYPES
from mailroom.dashboard import segment_form as sf

UNITS = {"minutes": 60, "hours": 3600, "days": 86400}
MAX_ROWS = 100
BRANCHES = ("yes", "no")
SHOWN_KEYS = ("template_id", "tag_id", "list_id", "field", "value")
# What a stored step holds beyond what the editor shows or the tree gives.
JSON_VALUE = "value_is_json"
KNOWN_KEYS = frozenset({"id", "type", "label", "seconds", "endpoint_ids", "rules", *BRANCHES})


@dataclasses.dataclass
class StepRow:
    type: str
    key: str = ""
    place: str = ""  # "" the main path; "<key>:yes" or "<key>:no" a condition's branch
    id: str = ""
    label: str = ""
    amount: str = "1"
    unit: str = "days"
    template_id: str = ""
    tag_id: str = ""
    list_id: str = ""
    field: str = ""
    value: str = ""
    endpoint_id: str = ""
    raw: str = ""
    extra: str = ""
    rule: sf.Builder = dataclasses.field(default_factory=lambda: sf.Builder(rows=[sf.Row()]))
    depth: int = 0
    number: str = ""

    def __post_init__(self) -> None:
        self.key = self.key or self.id or "n" + secrets.token_hex(4)


def _wait_parts(seconds: int) -> tuple[str, str]:
    for unit in ("days", "hours", "minutes"):
        if seconds % UNITS[unit] == 0:
            return str(seconds // UNITS[unit]), unit
    return str(max(1, seconds // 60)), "minutes"


def rows_of(steps: list[dict[str, Any]], ids: dict[str, dict[str, str]]) -> list[StepRow]:
    """Stored steps as the editor's rows."""
    rows: list[StepRow] = []

    def visit(items: list[dict[str, Any]], place: str) -> None:
        for step in items:
            row = StepRow(type=step["type"], id=step["id"], place=place)
            row.label = step.get("label") or ""
            if step["type"] == "wait" and "until" in step:
                row.raw = json.dumps(step)
            elif step["type"] == "wait":
                row.amount, row.unit = _wait_parts(int(step["seconds"]))
            elif step["type"] == "condition":
                row.rule = sf.from_rule("", step.get("rules") or {}, ids)
            for key in SHOWN_KEYS:
                if key in step:
                    setattr(row, key, step[key] if isinstance(step[key], str) else "")
            extra = {k: v for k, v in step.items() if k not in KNOWN_KEYS and k not in SHOWN_KEYS}
            if step["type"] == "update_field" and not isinstance(step.get("value"), str):
                # A number, true/false or null is shown as JSON and sent back as what it is.
                row.value = json.dumps(step.get("value"))
                extra[JSON_VALUE] = True
            if "endpoint_ids" in step:
                row.endpoint_id = (step["endpoint_ids"] or [""])[0]
            if extra and not row.raw:
                row.extra = json.dumps({"for": step["type"], **extra})
            rows.append(row)
            if step["type"] == "condition":
                for branch in BRANCHES:
                    visit(step.get(branch) or [], f"{row.key}:{branch}")

    visit(steps, "")
    return lay_out(rows)


def lay_out(rows: list[StepRow]) -> list[StepRow]:
    """The rows in reading order with their depth and number ("3", "3 yes 1"); rows whose
    place is gone are dropped, a non-condition's branches follow it on its own path."""
    by_place: dict[str, list[StepRow]] = {}
    for row in rows:
        by_place.setdefault(row.place, []).append(row)
    for row in rows:
        if row.type != "condition":
            orphans = [r for b in BRANCHES for r in by_place.pop(f"{row.key}:{b}", [])]
            if orphans:
                siblings = by_place[row.place]
                at = siblings.index(row) + 1
                for orphan in orphans:
                    orphan.place = row.place
                siblings[at:at] = orphans
    ordered: list[StepRow] = []

    def visit(place: str, depth: int, number: str) -> None:
        for n, row in enumerate(by_place.get(place, []), start=1):
            row.depth, row.number = depth, f"{number}{n}"
            ordered.append(row)
            if row.type == "condition":
                for branch in BRANCHES:
                    visit(f"{row.key}:{branch}", depth + 1, f"{row.number} {branch} ")

    visit("", 0, "")
    return ordered


def rows_from_form(form: dict[str, Any]) -> list[StepRow]:
    """The rows posted, with a remove, move, added step or added rule condition applied."""
    rows: list[StepRow] = []
    removed: set[str] = set()
    for i in range(MAX_ROWS):
        if f"type_{i}" not in form:
            break
        row = StepRow(type="wait")
        made_key = row.key  # kept when the form sent none (a test, a hand-made post)
        for key in _FORM_KEYS:
            setattr(row, key, str(form.get(f"{key}_{i}") or ""))
        row.key = row.key or row.id or made_key
        row.rule = sf.from_form(form, prefix=f"c{i}_")
        if str(form.get("addrule") or "") == str(i) or not row.rule.rows:
            row.rule.rows.append(sf.Row())
        parent = row.place.partition(":")[0]
        if form.get(f"remove_{i}") == "on" or parent in removed:
            removed.add(row.key)
            continue
        rows.append(row)
    rows = lay_out(rows)
    move = str(form.get("move") or "")
    direction, _, index = move.partition("_")
    if index.isdecimal() and int(index) < len(rows):
        moving = rows[int(index)]
        siblings = [r for r in rows if r.place == moving.place]
        at = siblings.index(moving)
        other = at - 1 if direction == "up" else at + 1
        if 0 <= other < len(siblings):
            siblings[at], siblings[other] = siblings[other], siblings[at]
            rest = [r for r in rows if r.place != moving.place]
            rows = lay_out(siblings + rest)
    if form.get("add"):
        kind = str(form.get("add_type") or "wait")
        place = str(form.get("add_place") or "")
        if place and place.partition(":")[0] not in {r.key for r in rows}:
            place = ""
        rows = lay_out([*rows, StepRow(type=kind if kind in STEP_TYPES else "wait", place=place)])
    return rows


_FORM_KEYS = (
    "key",
    "place",
    "id",
    "type",  # always sent: the loop stops at the first index without it
    "label",
    "amount",
    "unit",
    "template_id",
    "tag_id",
    "list_id",
    "field",
    "value",
    "endpoint_id",
    "raw",
    "extra",
)


def places(rows: list[StepRow]) -> list[tuple[str, str]]:
    """(value, text) for where a new step goes: the main path or a condition's branch."""
    chosen = [("", "the main path")]
    for row in rows:
        if row.type == "condition":
            chosen += [(f"{row.key}:{b}", f"step {row.number}, if {b}") for b in BRANCHES]
    return chosen


def steps_of(
    rows: list[StepRow], registry: Any, names: dict[str, dict[str, str]]
) -> list[dict[str, Any]]:
    """The rows as the API's steps (the service checks them; a rule's names are resolved
    here, so a tag that does not exist is refused with the builder's own message)."""

    def branch(place: str) -> list[dict[str, Any]]:
        return [_step_of(r, registry, names, branch) for r in rows if r.place == place]

    return branch("")


def _step_of(
    row: StepRow, registry: Any, names: dict[str, dict[str, str]], branch: Any
) -> dict[str, Any]:
    if row.raw:
        return dict(json.loads(row.raw))
    step: dict[str, Any] = {}
    as_json = False
    if row.extra:
        extra = json.loads(row.extra)
        if extra.pop("for", None) == row.type:
            as_json = bool(extra.pop(JSON_VALUE, False))
            step.update(extra)
    step["type"] = row.type
    if row.id:
        step["id"] = row.id
    if row.label:
        step["label"] = row.label
    kind = row.type
    if kind == "wait":
        amount = row.amount
        step["seconds"] = int(amount) * UNITS.get(row.unit, 86400) if amount.isdecimal() else amount
    elif kind == "send_email":
        step["template_id"] = row.template_id
    elif kind in ("add_tag", "remove_tag"):
        step["tag_id"] = row.tag_id
    elif kind in ("add_to_list", "remove_from_list"):
        step["list_id"] = row.list_id
    elif kind == "update_field":
        step["field"], step["value"] = row.field, row.value
        if as_json:
            with suppress(ValueError):  # changed to text: sent as typed
                step["value"] = json.loads(row.value)
    elif kind == "call_webhook":
        step["endpoint_ids"] = [row.endpoint_id] if row.endpoint_id else []
    elif kind == "condition":
        step["rules"] = sf.to_rule(row.rule, registry, names)
        step["yes"] = branch(f"{row.key}:yes")
        step["no"] = branch(f"{row.key}:no")
    return step


def trigger_of(form: dict[str, Any]) -> dict[str, Any]:
    kind = str(form.get("trigger_type") or "contact_created")
    trigger: dict[str, Any] = {"type": kind}
    for key in ("tag_id", "list_id", "form_id", "field", "store_id"):
        if form.get(f"trigger_{key}"):
            trigger[key] = str(form.get(f"trigger_{key}"))
    if kind == "order_placed":
        trigger["first_order_only"] = form.get("trigger_first_order_only") == "on"
    if kind == "date_anniversary":
        days = str(form.get("trigger_days") or "0")
        trigger["days"] = int(days) if days.lstrip("-").isdecimal() else days
        trigger["time"] = str(form.get("trigger_time") or "09:00")
    return trigger
