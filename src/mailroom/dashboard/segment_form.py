"""The rule builder's form and the API's rule, both ways (segments, and automations' condition
steps, which carry one rule each under their own prefix).

The form is a flat list of condition rows (`field_i`, `op_i`, `value_i`, `group_i`,
`campaign_i` for email activity, `days_i` for a purchase's window) and the groups they sit in:
the rule itself (`match_top`) and nested groups (`gparent_<id>`, `match_<id>`), a group inside
a group at most, as the API nests three levels. A row's group may be `new` or `new:<id>` to
open a group there. Values are typed for the rule (numbers, day counts, lists of values); tags
and lists are named in the form and sent as ids. `segments.rules` judges the result, so a
refusal is the API's own message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mailroom.core.errors import ApiError
from mailroom.segments import rules as r

TEXT_ENTRY_OPS = frozenset({"in"})
DAY_OPS = frozenset({"within_last", "not_within_last", "anniversary_in", "before_last"})
NUMBER_FIELDS = frozenset({"ecommerce.total_spent", "ecommerce.orders_count"})
# Fields whose value may stay empty (an optional window, or no value at all).
OPTIONAL_VALUE = frozenset({"activity", "ecommerce.cart"})
COMMERCE_LABELS = {
    "ecommerce.total_spent": "total spent (shop)",
    "ecommerce.orders_count": "number of orders (shop)",
    "ecommerce.last_order": "last order (shop)",
    "ecommerce.purchased": "purchased (shop)",
    "ecommerce.cart": "cart (shop)",
}
GROUP_ID = re.compile(r"^g[0-9]{1,3}$")
NEW = "new"


# Operators as a person reads them in the builder (the form still posts the API's names).
OP_LABELS = {
    "eq": "is",
    "neq": "is not",
    "in": "is one of",
    "contains": "contains",
    "not_contains": "does not contain",
    "starts_with": "starts with",
    "ends_with": "ends with",
    "is_set": "has a value",
    "is_not_set": "has no value",
    "before": "is before",
    "after": "is after",
    "within_last": "within the last (days)",
    "not_within_last": "not within the last (days)",
    "anniversary_in": "anniversary within (days)",
    "gt": "is more than",
    "gte": "is at least",
    "lt": "is less than",
    "lte": "is at most",
    "is_true": "is yes",
    "is_false": "is no",
    "has_any": "has any of",
    "has_all": "has all of",
    "has_none": "has none of",
    "member": "is a member of",
    "confirmed_member": "is a confirmed member of",
    "not_member": "is not a member of",
    "received": "received",
    "opened": "opened",
    "clicked": "clicked",
    "not_opened": "did not open",
    "before_last": "more than (days) ago",
    "product": "the product (its id)",
    "category": "a product in the category",
    "abandoned": "was abandoned",
}


def op_label(op: str) -> str:
    return OP_LABELS.get(op, op.replace("_", " "))


@dataclass
class Row:
    field: str = "email"
    op: str = "contains"
    value: str = ""
    group: str = ""  # "" is the rule itself
    campaign: str = ""  # activity: one campaign, or any
    days: str = ""  # purchased: within the last days, or ever


@dataclass
class Builder:
    name: str = ""
    match: dict[str, str] = field(default_factory=lambda: {"": "all"})
    parents: dict[str, str] = field(default_factory=dict)  # group id -> its parent ("" top)
    rows: list[Row] = field(default_factory=list)

    def new_group(self, parent: str) -> str:
        number = 1
        while f"g{number}" in self.parents:
            number += 1
        self.parents[f"g{number}"] = parent
        self.match[f"g{number}"] = "all"
        return f"g{number}"

    def children(self, parent: str) -> list[str]:
        return [g for g, p in self.parents.items() if p == parent]

    def labels(self) -> dict[str, str]:
        """Each group's name as shown: group 1, group 2, group 1.1 (numbered in rule order)."""
        named: dict[str, str] = {}
        for n, top in enumerate(self.children(""), start=1):
            named[top] = f"group {n}"
            for m, inner in enumerate(self.children(top), start=1):
                named[inner] = f"group {n}.{m}"
        return named

    def group_choices(self) -> list[tuple[str, str]]:
        """(value, text) for a row's "In" picker: where it is, and where a group can open."""
        named = self.labels()
        choices = [("", "the rule")] + [(g, named[g]) for g in named]
        choices.append((NEW, "a new group"))
        choices += [(f"{NEW}:{g}", f"a new group in {named[g]}") for g in self.children("")]
        return choices


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
    chosen += [(name, COMMERCE_LABELS[name], ops) for name, ops in r.ECOMMERCE_FIELDS.items()]
    chosen += [
        (f"{r.CUSTOM_PREFIX}{key}", f"{key} (custom)", r.CUSTOM_OPS.get(kind, r.TEXT_OPS))
        for key, (kind, _options) in registry.items()
    ]
    return chosen


def from_form(form: dict[str, Any], prefix: str = "") -> Builder:
    builder = Builder(name=str(form.get(f"{prefix}name") or "").strip())
    chosen = str(form.get(f"{prefix}match_top") or "all")
    builder.match[""] = chosen if chosen in ("all", "any") else "all"
    stated = {
        key.removeprefix(f"{prefix}gparent_"): str(value or "")
        for key, value in form.items()
        if key.startswith(f"{prefix}gparent_")
    }
    # Two levels of groups under the rule: a parent is the rule or a group directly under it.
    for group, parent in sorted(stated.items(), key=lambda item: (len(item[0]), item[0])):
        top_level = parent == "" or (GROUP_ID.match(parent) and stated.get(parent) == "")
        if GROUP_ID.match(group) and top_level:
            builder.parents[group] = parent
    for group in builder.parents:
        match = str(form.get(f"{prefix}match_{group}") or "all")
        builder.match[group] = match if match in ("all", "any") else "all"
    i = 0
    while f"{prefix}field_{i}" in form and i < r.MAX_CONDITIONS:
        row = Row(
            field=str(form.get(f"{prefix}field_{i}") or ""),
            op=str(form.get(f"{prefix}op_{i}") or ""),
            value=str(form.get(f"{prefix}value_{i}") or "").strip(),
            group=str(form.get(f"{prefix}group_{i}") or ""),
            campaign=str(form.get(f"{prefix}campaign_{i}") or ""),
            days=str(form.get(f"{prefix}days_{i}") or "").strip(),
        )
        if form.get(f"{prefix}remove_{i}") != "on":
            place(builder, row)
            builder.rows.append(row)
        i += 1
    _prune(builder)
    return builder


def place(builder: Builder, row: Row) -> None:
    """Put the row in the group it names, opening a new one if it asks for that."""
    if row.group == NEW:
        row.group = builder.new_group("")
    elif row.group.startswith(f"{NEW}:"):
        parent = row.group.removeprefix(f"{NEW}:")
        ok = builder.parents.get(parent) == ""
        row.group = builder.new_group(parent if ok else "")
    elif row.group not in builder.parents:
        row.group = ""


def _prune(builder: Builder) -> None:
    """Groups left without conditions (in them or in a group inside) are gone."""
    used = {row.group for row in builder.rows}
    used |= {builder.parents[g] for g in used if g}
    for group in [g for g in builder.parents if g not in used]:
        del builder.parents[group]
        builder.match.pop(group, None)


def blank(row: Row) -> bool:
    """A row still being filled in: no value yet where its operator needs one."""
    return not row.value and row.op not in r.NO_VALUE_OPS and row.field not in OPTIONAL_VALUE


def filled(builder: Builder) -> Builder:
    """The builder without the rows still being filled in: what the live count judges, so a
    new page or a condition just added is not answered with an error. Saving judges every
    row (a blank one is refused there, with the API's message)."""
    kept = Builder(
        name=builder.name,
        match=dict(builder.match),
        parents=dict(builder.parents),
        rows=[row for row in builder.rows if not blank(row)],
    )
    _prune(kept)
    return kept


def _value(row: Row, registry: r.Registry, names: dict[str, dict[str, str]]) -> Any:
    """The row's text as the rule's value for its field and operator."""
    text = row.value
    if row.field == "activity":
        activity: dict[str, Any] = {"campaign_id": row.campaign} if row.campaign else {}
        if text:
            activity["within_days"] = int(text) if text.isdecimal() else text
        return activity or None
    if row.field in ("ecommerce.purchased", "ecommerce.cart"):
        window: dict[str, Any] = {row.op: text} if row.field == "ecommerce.purchased" else {}
        days = row.days if row.field == "ecommerce.purchased" else text
        if days:
            window["within_days"] = int(days) if days.isdecimal() else days
        return window or None
    if row.field in NUMBER_FIELDS:
        return _number(text)
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
    if row.op in DAY_OPS:
        return int(text) if text.isdecimal() else text
    if row.op in TEXT_ENTRY_OPS:
        return [v.strip() for v in text.split(",") if v.strip()]
    if row.field.startswith(r.CUSTOM_PREFIX):
        kind = registry.get(row.field.removeprefix(r.CUSTOM_PREFIX), ("text", None))[0]
        if kind == "number":
            return _number(text)
    return text


def _number(text: str) -> Any:
    """A number as typed (the text itself when it is none: the API names the problem)."""
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() else number


def to_rule(
    builder: Builder, registry: r.Registry, names: dict[str, dict[str, str]]
) -> dict[str, Any]:
    def conditions_of(group: str) -> list[dict[str, Any]]:
        made: list[dict[str, Any]] = []
        for row in (row for row in builder.rows if row.group == group):
            condition = {"field": row.field, "op": row.op}
            value = _value(row, registry, names)
            if value is not None or (row.field == "activity" and row.op not in r.NO_VALUE_OPS):
                condition["value"] = value
            made.append(condition)
        for inner in builder.children(group):
            nested = conditions_of(inner)
            if nested:
                made.append({"match": builder.match.get(inner, "all"), "conditions": nested})
        return made

    top = conditions_of("")
    if not top:
        raise ApiError(400, "Add at least one condition.")
    return {"match": builder.match[""], "conditions": top}


def _text(condition: dict[str, Any], ids: dict[str, dict[str, str]]) -> str:
    value = condition.get("value")
    if condition.get("field") == "tags" and isinstance(value, list):
        return ", ".join(ids["tags"].get(str(v), str(v)) for v in value)
    if condition.get("field") == "lists" and isinstance(value, str):
        return ids["lists"].get(value, value)
    if isinstance(value, dict):  # activity, carts: the window; a purchase: what was bought
        if condition.get("field") == "ecommerce.purchased":
            return str(value.get(str(condition.get("op"))) or "")
        return str(value.get("within_days") or "")
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


def from_rule(name: str, rule: dict[str, Any], ids: dict[str, dict[str, str]]) -> Builder:
    """A saved rule as the form, every nested group kept."""
    builder = Builder(name=name)
    builder.match[""] = str(rule.get("match") or "all")

    def read(conditions: list[dict[str, Any]], group: str) -> None:
        for item in conditions:
            if "conditions" in item:
                inner = builder.new_group(group)
                builder.match[inner] = str(item.get("match") or "all")
                read(item.get("conditions") or [], inner)
                continue
            value = item.get("value")
            campaign = value.get("campaign_id") if isinstance(value, dict) else None
            days = ""
            if item["field"] == "ecommerce.purchased" and isinstance(value, dict):
                days = str(value.get("within_days") or "")
            builder.rows.append(
                Row(
                    str(item["field"]),
                    str(item["op"]),
                    _text(item, ids),
                    group,
                    campaign or "",
                    days,
                )
            )

    read(rule.get("conditions") or [], "")
    return builder
