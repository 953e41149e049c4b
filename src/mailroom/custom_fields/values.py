"""Custom-field values: the shape rules every contact write obeys, typing by the registry,
and type inference for scans. Pure functions, no database."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from typing import Any

from mailroom.core.errors import ApiError

MAX_KEYS = 50
MAX_KEY_LENGTH = 64
MAX_STRING = 200
RESERVED_KEYS = frozenset({"__proto__", "constructor", "prototype"})
FIELD_TYPES = ("text", "number", "boolean", "date", "dropdown")
# Keys a merge tag (`{{custom_fields.<key>}}`) can name; only these can be registered.
REGISTRY_KEY = re.compile(r"^[A-Za-z0-9_]{1,64}$")

_TRUE = {"true", "yes"}
_FALSE = {"false", "no"}
_DMY = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$")
_YMD = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


class Clear:
    """A typed field given an empty string: the key is removed."""


CLEAR = Clear()


# Numbers beyond what a double holds exactly as an integer are refused (as the published
# schema says): no client sends them on purpose, and past it every double is a whole number.
MAX_INT = 2**53


def is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) <= MAX_INT
    return isinstance(value, float) and math.isfinite(value) and abs(value) <= MAX_INT


def is_scalar(value: Any) -> bool:
    return isinstance(value, bool | str) or is_number(value)


def check_shape(raw: Any, *, field: str = "custom_fields") -> dict[str, Any]:
    """Rules 1-3. Returns the object with `None` values kept (the caller decides whether a null
    removes the key or is dropped)."""
    if not isinstance(raw, Mapping):
        raise ApiError(400, f"{field} must be an object")
    if sum(1 for v in raw.values() if v is not None) > MAX_KEYS:
        raise ApiError(400, f"{field} may have at most {MAX_KEYS} keys")
    for key, value in raw.items():
        if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY_LENGTH:
            raise ApiError(400, f"{field} keys must be 1-{MAX_KEY_LENGTH} characters")
        if key in RESERVED_KEYS:
            raise ApiError(400, f"{field}.{key} is not an allowed key")
        if value is None:
            continue
        if isinstance(value, str):
            if len(value) > MAX_STRING:
                raise ApiError(400, f"{field}.{key} must be {MAX_STRING} characters or fewer")
        elif not is_scalar(value):
            raise ApiError(400, f"{field}.{key} must be a string, number or boolean")
    return dict(raw)


def parse_date(value: Any) -> str | None:
    """`YYYY-MM-DD`, an ISO date-time or `DD/MM/YYYY` as `YYYY-MM-DD`; None if not a real date."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        if _YMD.match(text):
            return date.fromisoformat(text).isoformat()
        match = _DMY.match(text)
        if match:
            day, month, year = (int(g) for g in match.groups())
            return date(year, month, day).isoformat()
        if "T" in text or " " in text:
            return datetime.fromisoformat(text.replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        return None
    return None


def parse_number(value: Any) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value if is_number(value) else None
    if isinstance(value, str) and _NUMBER.match(value.strip()):
        number = float(value.strip())
        if not is_number(number):
            return None
        return (
            int(number)
            if number.is_integer() and "." not in value and "e" not in value.lower()
            else number
        )
    return None


def parse_boolean(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    return None


def match_option(value: Any, options: Iterable[str]) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    text = str(value).strip()
    choices = list(options)
    if text in choices:
        return text
    folded = text.casefold()
    return next((option for option in choices if option.casefold() == folded), None)


def type_requirement(field_type: str, options: list[str] | None) -> str:
    return {
        "number": "a number",
        "boolean": "true or false",
        "date": "a date (YYYY-MM-DD, an ISO date-time or DD/MM/YYYY)",
        "dropdown": "one of " + ", ".join(options or []),
    }.get(field_type, "text")


def coerce(field_type: str, options: list[str] | None, value: Any) -> Any:
    """The value to store for a registry-typed key, CLEAR for an empty string, or None when
    it does not fit."""
    if field_type == "text":
        return value
    if isinstance(value, str) and value.strip() == "":
        return CLEAR
    if field_type == "number":
        return parse_number(value)
    if field_type == "boolean":
        return parse_boolean(value)
    if field_type == "date":
        return parse_date(value)
    if field_type == "dropdown":
        return match_option(value, options or [])
    return value


def fits(field_type: str, options: list[str] | None, value: Any) -> bool:
    """Whether a stored value satisfies a type (stored values are never rewritten)."""
    return coerce(field_type, options, value) is not None


def coerce_or_refuse(key: str, field_type: str, options: list[str] | None, value: Any) -> Any:
    result = coerce(field_type, options, value)
    if result is None:
        raise ApiError(400, f"custom_fields.{key} must be {type_requirement(field_type, options)}")
    return result


def infer_type(values: Iterable[Any]) -> str:
    """Scan rule: a type only when every stored value agrees, else text."""
    seen = list(values)
    if not seen:
        return "text"
    if all(isinstance(v, bool) for v in seen):
        return "boolean"
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in seen):
        return "number"
    if all(isinstance(v, str) and _YMD.match(v) and parse_date(v) == v for v in seen):
        return "date"
    return "text"


def default_label(key: str) -> str:
    words = key.replace("_", " ").strip()
    return (words[:1].upper() + words[1:])[:80] if words else key[:80]
