"""Which column of an import file means what: header folding and aliases (rule 1), an explicit
`mapping` (rule 12), and `new_fields` declarations. Pure functions, no database."""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from mailroom.core.errors import ApiError
from mailroom.custom_fields import values as cf

SINGLE_TARGETS = (
    "email",
    "first_name",
    "last_name",
    "status",
    "tags",
    "source",
    "consent_ip",
    "consent_source",
)
# Date targets may take several columns: the first usable date wins (rule 12).
DATE_TARGETS = ("subscribed_at", "unsubscribed_at", "consent_at")
MAPPING_TARGETS = (*SINGLE_TARGETS, *DATE_TARGETS, "ignore", "custom")
# Where consent columns land among custom fields (rule 4).
CONSENT_KEYS = {
    "consent_ip": "consent_ip",
    "consent_at": "consent_confirmed_at",
    "consent_source": "consent_source",
}

ALIASES: dict[str, str] = {
    **{a: "email" for a in ("email", "email_address", "e_mail", "e_mail_address", "emailaddress")},
    **{a: "first_name" for a in ("first_name", "firstname", "fname", "given_name")},
    **{a: "last_name" for a in ("last_name", "lastname", "lname", "surname", "family_name")},
    "status": "status",
    **{a: "tags" for a in ("tags", "tag")},
    **{
        a: "subscribed_at"
        for a in ("subscribed_at", "opted_in_at", "signup_at", "optin_time", "created_at")
    },
    **{a: "unsubscribed_at" for a in ("unsubscribed_at", "opted_out_at", "unsub_time")},
    "source": "source",
    "consent_ip": "consent_ip",
    "consent_at": "consent_at",
    "consent_source": "consent_source",
}


def fold_header(header: str) -> str:
    """Case-insensitive, spaces and punctuation folded to underscores: `Email Address` ->
    `email_address`, `Prénom` -> `prenom`."""
    ascii_text = unicodedata.normalize("NFKD", header).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "_", ascii_text.strip().lower()).strip("_")


@dataclass
class ColumnPlan:
    """Column indexes per target. Date targets may take several columns (first usable wins)."""

    single: dict[str, int] = field(default_factory=dict)
    dates: dict[str, list[int]] = field(default_factory=lambda: {t: [] for t in DATE_TARGETS})
    custom: list[tuple[int, str]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    @property
    def email(self) -> int | None:
        return self.single.get("email")


def plan_from_headers(headers: list[str]) -> ColumnPlan:
    plan = ColumnPlan()
    used_keys: set[str] = set()
    for index, header in enumerate(headers):
        key = fold_header(header)
        target = ALIASES.get(key)
        if target in DATE_TARGETS:
            plan.dates[target].append(index)
        elif target is not None:
            if target in plan.single:
                plan.dropped.append(header)  # a second column for a one-column target
            else:
                plan.single[target] = index
        elif (
            cf.REGISTRY_KEY.match(key)
            and key not in cf.RESERVED_KEYS
            and key not in used_keys
            and key not in CONSENT_KEYS.values()
            and len(plan.custom) < cf.MAX_KEYS
        ):
            plan.custom.append((index, key))
            used_keys.add(key)
        else:
            plan.dropped.append(header)
    return plan


def _parse_json_array(raw: str, name: str) -> list[Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        raise ApiError(400, f"{name} must be a JSON array") from None
    except RecursionError:  # "[[[[...": the decoder recurses once per level
        raise ApiError(400, f"{name} is nested too deeply") from None
    if not isinstance(value, list):
        raise ApiError(400, f"{name} must be a JSON array")
    return value


def plan_from_mapping(raw: str, column_count: int) -> ColumnPlan:
    """Rule 12: exactly one email column; one column per single-value target; dates may take
    several; a custom key once and never a consent key; unlisted columns are ignored."""
    entries = _parse_json_array(raw, "mapping")
    plan = ColumnPlan()
    seen_columns: set[int] = set()
    seen_keys: set[str] = set()
    for i, entry in enumerate(entries):
        where = f"mapping[{i}]"
        if not isinstance(entry, dict):
            raise ApiError(400, f"{where} must be an object with column and target")
        column, target = entry.get("column"), entry.get("target")
        if (
            isinstance(column, bool)
            or not isinstance(column, int)
            or not 0 <= column < column_count
        ):
            raise ApiError(
                400, f"{where}.column must be a column index from 0 to {column_count - 1}"
            )
        if target not in MAPPING_TARGETS:
            raise ApiError(400, f"{where}.target must be one of {', '.join(MAPPING_TARGETS)}")
        if column in seen_columns:
            raise ApiError(400, f"mapping uses column {column} more than once")
        seen_columns.add(column)
        if target == "ignore":
            continue
        if target in DATE_TARGETS:
            plan.dates[target].append(column)
        elif target == "custom":
            key = entry.get("key")
            if not isinstance(key, str) or not cf.REGISTRY_KEY.match(key):
                raise ApiError(400, f"{where}.key must be 1-64 letters, digits or underscores")
            if key in set(CONSENT_KEYS) | set(CONSENT_KEYS.values()):
                raise ApiError(400, f"{where}.key {key} is reserved for consent columns")
            if key in seen_keys:
                raise ApiError(400, f"mapping uses custom key {key} more than once")
            seen_keys.add(key)
            plan.custom.append((column, key))
        else:
            if target in plan.single:
                raise ApiError(400, f"mapping maps more than one column to {target}")
            plan.single[target] = column
    if "email" not in plan.single:
        raise ApiError(400, "mapping must map exactly one column to email")
    return plan


@dataclass(frozen=True)
class NewField:
    key: str
    type: str
    label: str | None
    options: list[str] | None


def parse_new_fields(raw: str) -> list[NewField]:
    entries = _parse_json_array(raw, "new_fields")
    fields: list[NewField] = []
    for i, entry in enumerate(entries):
        where = f"new_fields[{i}]"
        if not isinstance(entry, dict):
            raise ApiError(400, f"{where} must be an object with key and type")
        key, kind = entry.get("key"), entry.get("type", "text")
        if not isinstance(key, str) or not cf.REGISTRY_KEY.match(key):
            raise ApiError(400, f"{where}.key must be 1-64 letters, digits or underscores")
        if kind not in cf.FIELD_TYPES:
            raise ApiError(400, f"{where}.type must be one of {', '.join(cf.FIELD_TYPES)}")
        label, options = entry.get("label"), entry.get("options")
        if label is not None and not isinstance(label, str):
            raise ApiError(400, f"{where}.label must be a string")
        if options is not None and not (
            isinstance(options, list) and all(isinstance(o, str) for o in options)
        ):
            raise ApiError(400, f"{where}.options must be an array of strings")
        fields.append(NewField(key, kind, label, options))
    return fields
