"""Segment shapes. The rule is parsed loosely (the service answers each mistake with its place,
`conditions[1].op: ...`) and documented precisely: each field family with its operators and
the value they take, nested at most three levels."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from mailroom.contacts.schemas import ContactOut
from mailroom.core.loose import Doc, body_config, name_field, nullable, text
from mailroom.core.pagination import Pagination
from mailroom.custom_fields.values import MAX_INT
from mailroom.ecommerce.values import EXTERNAL_ID_PATTERN, MAX_MONEY
from mailroom.models import CONTACT_STATUSES
from mailroom.segments import rules as r

TEXT = text(r.MAX_TEXT, min_length=1)
NO_VALUE = {"type": "null"}
ID = text(min_length=1)


def _array(items: dict[str, Any], max_items: int = r.MAX_VALUES) -> dict[str, Any]:
    return {"type": "array", "minItems": 1, "maxItems": max_items, "items": items}


def _days(low: int, high: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": low, "maximum": high}


NUMBER = {"type": "number", "minimum": -MAX_INT, "maximum": MAX_INT}
MOMENT = {
    "anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}]
}
DAYS = _days(1, r.MAX_DAYS)
CUSTOM_FIELD = {
    "type": "string",
    "pattern": rf"^{r.CUSTOM_PREFIX.replace('.', '[.]')}.{{1,{r.MAX_KEY}}}$",
    "description": "`custom_fields.<key>`: takes the operators of the key's registered type "
    "(an unregistered key is text).",
}


def _leaf(
    fields: Any, ops: tuple[str, ...], value: dict[str, Any] | None, *, optional: bool = False
) -> dict[str, Any]:
    field = fields if isinstance(fields, dict) else {"enum": list(fields)}
    schema: dict[str, Any] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["field", "op"],
        "properties": {"field": field, "op": {"enum": list(ops)}},
    }
    if value is None:
        schema["properties"]["value"] = NO_VALUE
    else:
        schema["properties"]["value"] = value
        if not optional:
            schema["required"].append("value")
    return schema


def _text_leaves(fields: Any, equal: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """A text field: `equal` is what eq, neq and in take (any text by default)."""
    one = equal or TEXT
    likes = ("contains", "not_contains", "starts_with", "ends_with")
    return [
        _leaf(fields, ("eq", "neq"), one),
        _leaf(fields, ("in",), _array(one)),
        _leaf(fields, likes, TEXT),
        _leaf(fields, ("is_set", "is_not_set"), None),
    ]


ACTIVITY_VALUE = {
    "anyOf": [
        NO_VALUE,
        {
            "type": "object",
            "additionalProperties": False,
            # Either given as null is not given, as the rule reader takes it.
            "properties": {"campaign_id": nullable(ID), "within_days": nullable(DAYS)},
        },
    ],
    "description": "Optional: only messages of this campaign, sent in the last `within_days`.",
}
WITHIN_DAYS = nullable(DAYS)  # given as null is not given, as the rule reader takes it
AMOUNT = {
    "type": "number",
    "minimum": 0,
    "maximum": float(MAX_MONEY),
    "multipleOf": 0.01,
    "description": "In major units (100 means 100.00), over every store of the workspace.",
}
ORDERS = {"type": "integer", "minimum": 0, "maximum": r.MAX_ORDERS}


def _purchase(key: str, what: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [key],
        "properties": {key: what, "within_days": WITHIN_DAYS},
    }


PRODUCT = text(
    pattern=EXTERNAL_ID_PATTERN,
    description="The product's id in its store (any store of the workspace).",
)
CATEGORY = text(r.MAX_CATEGORY, min_length=1, description="A category name, in any case.")
CART_VALUE = {
    "anyOf": [
        NO_VALUE,
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {"within_days": WITHIN_DAYS},
        },
    ],
    "description": "Optional: abandoned in the last `within_days`.",
}
# Cancelled and refunded orders are not purchases; a contact without orders has spent 0.
COMMERCE_CONDITIONS = [
    _leaf(("ecommerce.total_spent",), r.FIGURE_OPS, AMOUNT),
    _leaf(("ecommerce.orders_count",), r.FIGURE_OPS, ORDERS),
    _leaf(("ecommerce.last_order",), r.LAST_ORDER_OPS, DAYS),
    _leaf(("ecommerce.purchased",), ("product",), _purchase("product", PRODUCT)),
    _leaf(("ecommerce.purchased",), ("category",), _purchase("category", CATEGORY)),
    _leaf(("ecommerce.cart",), r.CART_OPS, CART_VALUE, optional=True),
]
TEXT_COLUMNS = tuple(f for f in r.TEXT_FIELDS if f != "status")
CONDITIONS: list[dict[str, Any]] = [
    *_text_leaves(TEXT_COLUMNS),
    *_text_leaves(("status",), {"enum": list(CONTACT_STATUSES)}),
    _leaf(r.TIMESTAMP_FIELDS, ("before", "after"), MOMENT),
    _leaf(r.TIMESTAMP_FIELDS, ("within_last", "not_within_last"), DAYS),
    _leaf(CUSTOM_FIELD, ("eq", "neq"), {"anyOf": [TEXT, NUMBER]}),
    _leaf(CUSTOM_FIELD, ("in",), _array(TEXT)),
    _leaf(CUSTOM_FIELD, ("contains", "not_contains", "starts_with", "ends_with"), TEXT),
    _leaf(CUSTOM_FIELD, ("is_set", "is_not_set", "is_true", "is_false"), None),
    _leaf(CUSTOM_FIELD, ("gt", "gte", "lt", "lte"), NUMBER),
    _leaf(CUSTOM_FIELD, ("before", "after"), MOMENT),
    _leaf(CUSTOM_FIELD, ("within_last",), DAYS),
    _leaf(CUSTOM_FIELD, ("anniversary_in",), _days(0, r.MAX_ANNIVERSARY_DAYS)),
    _leaf(("tags",), r.TAG_OPS, _array(ID)),
    _leaf(("lists",), r.LIST_OPS, ID),
    _leaf(("activity",), r.ACTIVITY_OPS, ACTIVITY_VALUE, optional=True),
    *COMMERCE_CONDITIONS,
]


def rule_schema(depth: int = 1) -> dict[str, Any]:
    """A rule at `depth` (1 is the top): its conditions, or rules one level deeper."""
    items = CONDITIONS if depth == r.MAX_DEPTH else [*CONDITIONS, rule_schema(depth + 1)]
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["conditions"],
        "properties": {
            "match": {"enum": ["all", "any"], "default": "all"},
            "conditions": _array({"anyOf": items}, r.MAX_CONDITIONS),
        },
    }


RULES_TEXT = (
    '`{"match": "all"|"any", "conditions": [...]}`; a condition is `{field, op, value}` or a '
    "nested rule (3 levels at most, the top one included; 50 conditions in all). Text "
    "comparisons ignore case; negative operators (neq, not_contains, is_not_set, has_none, "
    "not_member, not_within_last) match contacts without the value. A date means the whole "
    "day (UTC). Matches contacts of every status unless the rule names `status`. "
    "`ecommerce.*` fields read the contact's orders and carts in every store of the "
    "workspace: cancelled and refunded orders are not purchases, a contact without orders "
    "has spent 0 in 0 orders and has no last order, and a cart converted after it was "
    "abandoned is no longer abandoned."
)
RULES_EXAMPLE = {
    "match": "all",
    "conditions": [
        {"field": "status", "op": "eq", "value": "subscribed"},
        {"field": "created_at", "op": "within_last", "value": 90},
        {
            "match": "any",
            "conditions": [
                {"field": "custom_fields.plan", "op": "in", "value": ["pro", "business"]},
                {"field": "activity", "op": "opened", "value": {"within_days": 30}},
            ],
        },
    ],
}
Rules = Annotated[Any, Doc(rule_schema())]


class SegmentCreate(BaseModel):
    model_config = body_config(
        "name", "rules", example={"name": "Engaged this quarter", "rules": RULES_EXAMPLE}
    )
    name: Annotated[Any, Doc(name_field(100))] = Field(
        None, description="Up to 100 characters, unique ignoring case."
    )
    rules: Rules = Field(None, description=RULES_TEXT)


class SegmentUpdate(BaseModel):
    model_config = body_config(forbid_extra=True, rules=[{"minProperties": 1}])
    name: Annotated[Any, Doc(name_field(100))] = None
    rules: Rules = Field(None, description=RULES_TEXT)


class SegmentPreviewBody(BaseModel):
    model_config = body_config("rules", example={"rules": RULES_EXAMPLE})
    rules: Rules = Field(None, description=RULES_TEXT)


class SegmentOut(BaseModel):
    id: str
    name: str
    rules: dict[str, Any] = Field(description="The rule as saved (`match` filled in).")
    created_at: datetime
    updated_at: datetime


class SegmentEnvelope(BaseModel):
    segment: SegmentOut


class SegmentList(BaseModel):
    segments: list[SegmentOut]
    pagination: Pagination


class SegmentDeleted(BaseModel):
    success: bool
    id: str


class SegmentPreview(BaseModel):
    count: int = Field(description="Contacts the rule matches now.")
    contacts: list[ContactOut] = Field(description="The first 10 of them, newest first.")
