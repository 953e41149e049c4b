"""The segment builder's form and the API's rule, both ways.

The form is a flat list of condition rows (`field_i`, `op_i`, `value_i`, `group_i`) with a
match for the top level and for two nested groups (`a`, `b`): that is the API's rule with up to
two groups inside it. Values are typed for the rule (numbers, day counts, lists of values);
tags and lists are named in the form and sent as ids. `segments.rules` judges the result, so
a refusal is the API's own message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mailroom.core.errors import ApiError
from mailroom.segments import rules as r

GROUPS = ("", "a", "b")  # the top level, then the two nested groups
TEXT_ENTRY_OPS = frozenset({"in"})
DAY_OPS = frozenset({"within_last", "not_within_last", "anniversary_in"})


@dataclass
class Row:
    field: str = "email"
    op: str = "contains"
    value: str = ""
    group: str = ""


@dataclass
class Builder:
    name: str = ""
    match: dict[str, str] = field(default_factory=lambda: dict.fromkeys(GROUPS, "all"))
    rows: list[Row] = field(default_factory=list)


def fields_of(registry: r.Registry) -> list[tuple[str, str, tuple[str, ...]]]:
    """(field, label, operators) for every field a condition can name."""
    chosen: list[tuple[str, str, tuple[str, ...]]] = [
        (name, name.replace("_", " "), r.TEXT_OPS) for name in r.TEXT_FIELDS
    ]
    chosen += [(name, name.replace("_", " "), r.TIMESTAMP_OPS) for name in r.TIMESTAMP_FIELDS]
    chosen += [
        ("tags", "tags", r.TAG_OPS),
        ("lists", "lists", r.LIST_OPS),
        ("activity", "email activity", r.ACTIVITY_OPS),
    ]
    chosen += [
        (f"{r.CUSTOM_PREFIX}{key}", f"{key} (custom)", r.CUSTOM_OPS.get(kind, r.TEXT_OPS))
        for key, (kind, _options) in registry.items()
    ]
    return chosen


def from_form(form: dict[str, Any]) -> Builder:
    builder = Builder(name=str(form.get("name") or "").strip())
    for group in GROUPS:
        chosen = str(form.get(f"match_{group or 'top'}") or "all")
        builder.match[group] = chosen if chosen in ("all", "any") else "all"
    i = 0
    while f"field_{i}" in form and i < r.MAX_CONDITIONS:
        row = Row(
            field=str(form.get(f"field_{i}") or ""),
            op=str(form.get(f"op_{i}") or ""),
            value=str(form.get(f"value_{i}") or "").strip(),
            group=str(form.get(f"group_{i}") or ""),
        )
        if row.group not in GROUPS:
            row.group = ""
        if form.get(f"remove_{i}") != "on":
            builder.rows.append(row)
        i += 1
    return builder


def _value(row: Row, registry: r.Registry, names: dict[str, dict[str, str]]) -> Any:
    """The row's text as the rule's value for its field and operator."""
    text = row.value
    if row.op in r.NO_VALUE_OPS:
        return None
    if row.field == "tags":
        found = []
        for name in (n.strip() for n in text.split(",") if n.strip()):
            tag_id = names["tags"].get(name.casefold())
            if tag_id is None:
                raise ApiError(400, f"No tag is named {name}")
            found.append(tag_id)
        return found
    if row.field == "lists":
        list_id = names["lists"].get(text.casefold())
        if list_id is None:
            raise ApiError(400, f"No list is named {text or '(empty)'}")
        return list_id
    if row.field == "activity":
        return {"within_days": int(text)} if text.isdigit() else None
    if row.op in DAY_OPS:
        return int(text) if text.isdigit() else text
    if row.op in TEXT_ENTRY_OPS:
        return [v.strip() for v in text.split(",") if v.strip()]
    if row.field.startswith(r.CUSTOM_PREFIX):
        kind = registry.get(row.field.removeprefix(r.CUSTOM_PREFIX), ("text", None))[0]
        if kind == "number":
            try:
                number = float(text)
            except ValueError:
                return text
            return int(number) if number.is_integer() else number
    return text


def to_rule(
    builder: Builder, registry: r.Registry, names: dict[str, dict[str, str]]
) -> dict[str, Any]:
    top: list[dict[str, Any]] = []
    nested: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
    for row in builder.rows:
        condition = {"field": row.field, "op": row.op}
        value = _value(row, registry, names)
        if value is not None or (row.field == "activity" and row.op not in r.NO_VALUE_OPS):
            condition["value"] = value
        (nested[row.group] if row.group else top).append(condition)
    for group in ("a", "b"):
        if nested[group]:
            top.append({"match": builder.match[group], "conditions": nested[group]})
    if not top:
        raise ApiError(400, "Add at least one condition.")
    return {"match": builder.match[""], "conditions": top}


def _text(condition: dict[str, Any], ids: dict[str, dict[str, str]]) -> str:
    value = condition.get("value")
    if condition.get("field") == "tags" and isinstance(value, list):
        return ", ".join(ids["tags"].get(str(v), str(v)) for v in value)
    if condition.get("field") == "lists" and isinstance(value, str):
        return ids["lists"].get(value, value)
    if isinstance(value, dict):  # activity
        return str(value.get("within_days") or "")
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


def from_rule(name: str, rule: dict[str, Any], ids: dict[str, dict[str, str]]) -> Builder:
    """A saved rule as the form (groups past the first two are shown as the top level's)."""
    builder = Builder(name=name)
    builder.match[""] = str(rule.get("match") or "all")
    groups = iter(("a", "b"))
    for item in rule.get("conditions") or []:
        if "conditions" in item:
            group = next(groups, "")
            if group:
                builder.match[group] = str(item.get("match") or "all")
            for inner in item.get("conditions") or []:
                if "conditions" not in inner:
                    builder.rows.append(
                        Row(str(inner["field"]), str(inner["op"]), _text(inner, ids), group)
                    )
        else:
            builder.rows.append(Row(str(item["field"]), str(item["op"]), _text(item, ids), ""))
    return builder
