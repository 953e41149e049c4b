"""A segment's rule: its shape, checked and read into a tree the compiler turns into SQL.

A rule is `{"match": "all"|"any", "conditions": [...]}`; a condition is `{field, op, value}`
or a nested rule (3 levels at most, the top one included; 50 conditions in all). A refusal
names its place relative to the rule's root: `conditions[1].conditions[0].value: ...`.

Custom fields take the operators of the type the registry gives their key now. A saved rule
is read again at every use, leniently: a custom-field condition its key's current type no
longer takes, or whose key was registered when the rule was saved and has been deleted since,
matches no contact (the spec: such rules are left in place and stop matching).

E-commerce fields (`ecommerce.*`) ask about the contact's orders and carts in every store of
the workspace; amounts are in major units (100 means 100.00) and become cents here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from mailroom.custom_fields.values import is_number, match_option
from mailroom.ecommerce.values import EXTERNAL_ID_PATTERN, MAX_MONEY, MAX_MONEY_CENTS
from mailroom.models import CONTACT_STATUSES

MAX_DEPTH = 3
MAX_CONDITIONS = 50
MAX_VALUES = 100  # items of an `in` list or a tag list
MAX_TEXT = 254
MAX_DAYS = 36_500
MAX_ANNIVERSARY_DAYS = 366
MAX_KEY = 64
CUSTOM_PREFIX = "custom_fields."
# Stored beside the rule (never shown): the custom keys that were registered when it was saved.
REGISTERED_KEYS = "registered_keys"
ECOMMERCE_PREFIX = "ecommerce."
MAX_ORDERS = 1_000_000_000
MAX_CATEGORY = 100  # as a product's category names (ecommerce.products)
PRODUCT_ID = re.compile(EXTERNAL_ID_PATTERN)

TEXT_OPS = (
    "eq",
    "neq",
    "in",
    "contains",
    "not_contains",
    "starts_with",
    "ends_with",
    "is_set",
    "is_not_set",
)
TIMESTAMP_OPS = ("before", "after", "within_last", "not_within_last")
NUMBER_OPS = ("eq", "neq", "gt", "gte", "lt", "lte")
BOOLEAN_OPS = ("is_true", "is_false")
DATE_OPS = ("before", "after", "within_last", "anniversary_in")
DROPDOWN_OPS = ("eq", "neq", "in")
TAG_OPS = ("has_any", "has_all", "has_none")
LIST_OPS = ("member", "confirmed_member", "not_member")
ACTIVITY_OPS = ("received", "opened", "clicked", "not_opened")
FIGURE_OPS = ("gt", "gte", "lt", "lte", "eq")
LAST_ORDER_OPS = ("within_last", "before_last")
PURCHASED_OPS = ("product", "category")
CART_OPS = ("abandoned",)
# Each e-commerce field and its operators.
ECOMMERCE_FIELDS = {
    "ecommerce.total_spent": FIGURE_OPS,
    "ecommerce.orders_count": FIGURE_OPS,
    "ecommerce.last_order": LAST_ORDER_OPS,
    "ecommerce.purchased": PURCHASED_OPS,
    "ecommerce.cart": CART_OPS,
}

TEXT_FIELDS = ("email", "first_name", "last_name", "source", "language", "status")
TIMESTAMP_FIELDS = ("created_at", "subscribed_at", "unsubscribed_at")
CUSTOM_OPS = {
    "text": TEXT_OPS,
    "number": NUMBER_OPS,
    "boolean": BOOLEAN_OPS,
    "date": DATE_OPS,
    "dropdown": DROPDOWN_OPS,
}
NO_VALUE_OPS = frozenset({"is_set", "is_not_set", "is_true", "is_false"})

# The registry as the rules need it: key -> (type, dropdown options).
Registry = Mapping[str, tuple[str, list[str] | None]]


class RuleError(Exception):
    """A rule the service refuses: `path: problem`."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True)
class Boundary:
    """One end of a time range: `at`, itself included or not."""

    at: datetime
    inclusive: bool


@dataclass(frozen=True)
class Condition:
    path: str
    family: str  # text | timestamp | custom | tags | lists | activity | ecommerce
    field: str  # the column, the custom key, tags / lists / activity, or the e-commerce name
    op: str
    value: Any = None
    field_type: str = "text"  # custom fields: the registered type (text when unregistered)
    options: tuple[str, ...] = ()
    never: bool = False  # matches no contact


@dataclass(frozen=True)
class Group:
    match: str
    items: tuple[Group | Condition, ...]


@dataclass
class Parsed:
    tree: Group
    rule: dict[str, Any]  # the rule as stored and shown
    registered_keys: list[str] = field(default_factory=list)
    tag_ids: list[tuple[str, str]] = field(default_factory=list)  # (path, id)
    list_ids: list[tuple[str, str]] = field(default_factory=list)


def parse(
    raw: Any,
    registry: Registry,
    *,
    saved_registered: frozenset[str] | None = None,
    lenient: bool = False,
) -> Parsed:
    """The rule `raw` as a tree, or RuleError. `lenient` reads a saved rule (custom-field
    conditions that no longer fit match nobody instead of being refused);
    `saved_registered` are the custom keys registered when it was saved."""
    if not isinstance(raw, dict):
        raise RuleError("rules", "must be an object")
    reader = _Reader(registry, saved_registered or frozenset(), lenient)
    tree, rule = reader.group(raw, "", 1)
    if reader.leaves > MAX_CONDITIONS:
        raise RuleError("conditions", f"a rule has at most {MAX_CONDITIONS} conditions in all")
    return Parsed(tree, rule, sorted(reader.registered), reader.tag_ids, reader.list_ids)


def stored(raw: dict[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
    """A saved rule as shown, and the custom keys registered when it was saved."""
    shown = {k: v for k, v in raw.items() if k != REGISTERED_KEYS}
    return shown, frozenset(raw.get(REGISTERED_KEYS) or ())


def for_storage(parsed: Parsed) -> dict[str, Any]:
    return {**parsed.rule, REGISTERED_KEYS: parsed.registered_keys}


class _Reader:
    def __init__(self, registry: Registry, saved_registered: frozenset[str], lenient: bool):
        self.registry = registry
        self.saved_registered = saved_registered
        self.lenient = lenient
        self.leaves = 0
        self.registered: set[str] = set()
        self.tag_ids: list[tuple[str, str]] = []
        self.list_ids: list[tuple[str, str]] = []

    def group(self, raw: dict[str, Any], path: str, depth: int) -> tuple[Group, dict[str, Any]]:
        here = path or "rules"
        if depth > MAX_DEPTH:
            raise RuleError(here, f"rules nest at most {MAX_DEPTH} levels deep")
        _no_other_keys(raw, ("match", "conditions"), here)
        match = raw.get("match", "all")
        if match not in ("all", "any"):
            raise RuleError(_join(path, "match"), "must be all or any")
        conditions = raw.get("conditions")
        if not isinstance(conditions, list) or not conditions:
            raise RuleError(_join(path, "conditions"), "must be a non-empty array")
        items: list[Group | Condition] = []
        shown: list[dict[str, Any]] = []
        for index, entry in enumerate(conditions):
            where = f"{_join(path, 'conditions')}[{index}]"
            if not isinstance(entry, dict):
                raise RuleError(
                    where, "must be a condition {field, op, value} or a rule {match, conditions}"
                )
            item: Group | Condition
            if "conditions" in entry or "match" in entry:
                item, entry_shown = self.group(entry, where, depth + 1)
            else:
                self.leaves += 1
                item, entry_shown = self.condition(entry, where)
            items.append(item)
            shown.append(entry_shown)
        return Group(match, tuple(items)), {"match": match, "conditions": shown}

    def condition(self, raw: dict[str, Any], path: str) -> tuple[Condition, dict[str, Any]]:
        _no_other_keys(raw, ("field", "op", "value"), path)
        name, op, value = raw.get("field"), raw.get("op"), raw.get("value")
        if not isinstance(name, str) or not name:
            raise RuleError(f"{path}.field", "is required")
        if op is None or op == "":
            raise RuleError(f"{path}.op", "is required")
        shown = {"field": name, "op": op}
        if value is not None:
            shown["value"] = value
        vpath = f"{path}.value"
        if name in TEXT_FIELDS:
            _op_of(op, TEXT_OPS, "a text field", path)
            values = _text_value(op, value, vpath, statuses=name == "status")
            return Condition(path, "text", name, op, values), shown
        if name in TIMESTAMP_FIELDS:
            _op_of(op, TIMESTAMP_OPS, "a date field", path)
            return Condition(path, "timestamp", name, op, _time_value(op, value, vpath)), shown
        if name == "tags":
            _op_of(op, TAG_OPS, "tags", path)
            return Condition(path, "tags", name, op, self._tags(value, vpath)), shown
        if name == "lists":
            _op_of(op, LIST_OPS, "lists", path)
            if not isinstance(value, str) or not value:
                raise RuleError(vpath, "must be a list id")
            self.list_ids.append((vpath, value))
            return Condition(path, "lists", name, op, value), shown
        if name == "activity":
            _op_of(op, ACTIVITY_OPS, "activity", path)
            return Condition(path, "activity", name, op, _activity(value, vpath)), shown
        if name in ECOMMERCE_FIELDS:
            _op_of(op, ECOMMERCE_FIELDS[name], name, path)
            short = name.removeprefix(ECOMMERCE_PREFIX)
            return Condition(
                path, "ecommerce", short, op, _commerce(short, op, value, vpath)
            ), shown
        if name.startswith(CUSTOM_PREFIX):
            return self._custom(name.removeprefix(CUSTOM_PREFIX), op, value, path), shown
        raise RuleError(f"{path}.field", f"unknown field {name}")

    def _tags(self, value: Any, path: str) -> tuple[str, ...]:
        if (
            not isinstance(value, list)
            or not 1 <= len(value) <= MAX_VALUES
            or not all(isinstance(v, str) and v for v in value)
        ):
            raise RuleError(path, f"must be an array of 1 to {MAX_VALUES} tag ids")
        self.tag_ids.extend((f"{path}[{i}]", v) for i, v in enumerate(value))
        return tuple(dict.fromkeys(value))

    def _custom(self, key: str, op: Any, value: Any, path: str) -> Condition:
        if not 1 <= len(key) <= MAX_KEY:
            raise RuleError(f"{path}.field", f"custom field keys are 1-{MAX_KEY} characters")
        field_type, options = self.registry.get(key, ("text", None))
        registered = key in self.registry
        if registered:
            self.registered.add(key)
        elif key in self.saved_registered:  # deleted since the rule was saved
            return Condition(path, "custom", key, str(op), never=True)
        about = f"custom_fields.{key}"
        try:
            _op_of(op, CUSTOM_OPS.get(field_type, ()), f"{_article(field_type)} field", path)
            parsed = _custom_value(field_type, options or [], op, value, f"{path}.value")
        except RuleError as error:
            if self.lenient:  # the field's type changed since the rule was saved
                return Condition(path, "custom", key, str(op), never=True)
            raise RuleError(error.path, f"{error.problem} ({about})") from None
        return Condition(path, "custom", key, op, parsed, field_type, tuple(options or ()))


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _article(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def _no_other_keys(raw: dict[str, Any], allowed: tuple[str, ...], path: str) -> None:
    unknown = sorted(str(k) for k in raw if k not in allowed)
    if unknown:
        raise RuleError(path, f"unknown key(s): {', '.join(unknown)}")


def _op_of(op: Any, allowed: tuple[str, ...], what: str, path: str) -> None:
    if op not in allowed:
        raise RuleError(f"{path}.op", f"{op} is not valid for {what}")


def _no_value(op: str, value: Any, path: str) -> None:
    if value is not None:
        raise RuleError(path, f"{op} takes no value")


def _one_text(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_TEXT:
        raise RuleError(path, f"must be a non-empty string of at most {MAX_TEXT} characters")
    return value


def _text_value(op: str, value: Any, path: str, *, statuses: bool = False) -> Any:
    if op in NO_VALUE_OPS:
        _no_value(op, value, path)
        return None
    if op == "in":
        if not isinstance(value, list) or not 1 <= len(value) <= MAX_VALUES:
            raise RuleError(path, f"must be an array of 1 to {MAX_VALUES} strings")
        values = tuple(_one_text(v, f"{path}[{i}]") for i, v in enumerate(value))
    else:
        values = (_one_text(value, path),)
    if statuses and op in ("eq", "neq", "in"):
        for i, v in enumerate(values):
            if v.lower() not in CONTACT_STATUSES:
                where = f"{path}[{i}]" if op == "in" else path
                raise RuleError(where, f"must be one of {', '.join(CONTACT_STATUSES)}")
    return values if op == "in" else values[0]


def _days(value: Any, path: str, low: int, high: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise RuleError(path, f"must be a whole number of days from {low} to {high}")
    return value


def _moment(value: Any, path: str) -> date | datetime:
    """An ISO date (`YYYY-MM-DD`) or date-time (naive means UTC)."""
    problem = "must be an ISO date (YYYY-MM-DD) or date-time"
    if not isinstance(value, str):
        raise RuleError(path, problem)
    text = value.strip()
    try:
        if len(text) == 10:
            return date.fromisoformat(text)
        # RFC 3339 allows a lower-case separator and zone letter.
        moment = datetime.fromisoformat(text[:10] + text[10:].upper())
    except ValueError:
        raise RuleError(path, problem) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _time_value(op: str, value: Any, path: str) -> Any:
    """Timestamps: a date means the whole day (UTC): `before` is earlier than its start,
    `after` later than its end; a date-time is the instant."""
    if op in ("within_last", "not_within_last"):
        return _days(value, path, 1, MAX_DAYS)
    moment = _moment(value, path)
    if isinstance(moment, datetime):
        return Boundary(moment, inclusive=False)
    if op == "before":
        return Boundary(datetime.combine(moment, datetime.min.time(), UTC), inclusive=False)
    try:
        next_day = moment + timedelta(days=1)
    except OverflowError:  # after 9999-12-31: nothing is later
        return None
    return Boundary(datetime.combine(next_day, datetime.min.time(), UTC), inclusive=True)


def _activity(value: Any, path: str) -> tuple[str | None, int | None]:
    if value is None:
        return None, None
    if not isinstance(value, dict):
        raise RuleError(path, "must be an object with campaign_id and/or within_days")
    _no_other_keys(value, ("campaign_id", "within_days"), path)
    campaign = value.get("campaign_id")
    if campaign is not None and (not isinstance(campaign, str) or not campaign):
        raise RuleError(f"{path}.campaign_id", "must be a campaign id")
    days = value.get("within_days")
    if days is not None:
        days = _days(days, f"{path}.within_days", 1, MAX_DAYS)
    return campaign, days


def _custom_value(field_type: str, options: list[str], op: str, value: Any, path: str) -> Any:
    if field_type == "text":
        return _text_value(op, value, path)
    if op in NO_VALUE_OPS:
        _no_value(op, value, path)
        return None
    if field_type == "number":
        if not is_number(value):
            raise RuleError(path, "must be a number")
        return value
    if field_type == "date":
        if op in ("within_last", "anniversary_in"):
            low, high = (1, MAX_DAYS) if op == "within_last" else (0, MAX_ANNIVERSARY_DAYS)
            return _days(value, path, low, high)
        moment = _moment(value, path)
        return moment.date() if isinstance(moment, datetime) else moment
    # dropdown: one of its options (matched as the registry matches stored values)
    values = value if op == "in" else [value]
    if op == "in" and (not isinstance(value, list) or not 1 <= len(value) <= MAX_VALUES):
        raise RuleError(path, f"must be an array of 1 to {MAX_VALUES} options")
    chosen = []
    for i, v in enumerate(values):
        option = match_option(v, options) if isinstance(v, str) else None
        if option is None:
            where = f"{path}[{i}]" if op == "in" else path
            raise RuleError(where, f"must be one of {', '.join(options)}")
        chosen.append(option)
    return tuple(chosen) if op == "in" else chosen[0]


def _commerce(name: str, op: str, value: Any, path: str) -> Any:
    """An e-commerce condition's value as the compiler takes it: cents (total_spent), a
    number of orders, days (last_order), (product id or lower-cased category, days or None)
    for purchased, days or None for an abandoned cart."""
    if name == "total_spent":
        return _cents(value, path)
    if name == "orders_count":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ORDERS:
            raise RuleError(path, f"must be a whole number from 0 to {MAX_ORDERS}")
        return value
    if name == "last_order":
        return _days(value, path, 1, MAX_DAYS)
    if name == "purchased":
        if not isinstance(value, dict):
            raise RuleError(path, f"must be an object with {op} and optional within_days")
        _no_other_keys(value, (op, "within_days"), path)
        wanted = value.get(op)
        where = f"{path}.{op}"
        if wanted is None or wanted == "":
            raise RuleError(where, "is required")
        if op == "product":
            if not isinstance(wanted, str) or not PRODUCT_ID.fullmatch(wanted):
                raise RuleError(
                    where,
                    "must be a product id: 1 to 255 letters, digits or . _ : @ ~ + - "
                    "(not starting with a dot)",
                )
        else:
            if not isinstance(wanted, str) or len(wanted) > MAX_CATEGORY:
                raise RuleError(where, f"must be a category name of 1 to {MAX_CATEGORY} characters")
            # As products store their category names (spaces folded), in any case.
            wanted = " ".join(wanted.split()).lower()
        return wanted, _within(value, path)
    # cart: no value, or {within_days}
    if value is None:
        return None
    if not isinstance(value, dict):
        raise RuleError(path, "must be an object with optional within_days")
    _no_other_keys(value, ("within_days",), path)
    return _within(value, path)


def _within(value: dict[str, Any], path: str) -> int | None:
    days = value.get("within_days")
    return None if days is None else _days(days, f"{path}.within_days", 1, MAX_DAYS)


def _cents(value: Any, path: str) -> int:
    """An amount in major units (a JSON number with at most two decimal places, read as the
    decimal it is written as) in cents."""
    problem = f"must be a number from 0 to {MAX_MONEY} with at most two decimal places"
    if not is_number(value):
        raise RuleError(path, problem)
    cents = Decimal(repr(value)) * 100
    if cents != cents.to_integral_value() or not 0 <= cents <= MAX_MONEY_CENTS:
        raise RuleError(path, problem)
    return int(cents)
