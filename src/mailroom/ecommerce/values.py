"""The values a shop sends, checked one by one with the exact message for a wrong one: money,
currency, the shop's ids, links, times and lines. Each reader takes the raw JSON value and the
field's name; the schemas in `schemas.py` publish the same rules.

Money is held in minor units (cents): `"19.90"`, `"19.9"`, `19.9` and `19.90` are all 1990.
A JSON number is read as the decimal it is written as (its shortest repr), as a JSON Schema
validator reads `multipleOf: 0.01` exactly: `19.9` is two places at most, `0.125` is not.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from mailroom.core.emails import MAX_EMAIL_LENGTH, is_valid_email, normalize_email
from mailroom.core.errors import ApiError

MAX_MONEY_CENTS = 99_999_999_999_999  # 999,999,999,999.99
MAX_MONEY = "999999999999.99"
MONEY_PATTERN = r"^[0-9]{1,12}(\.[0-9]{1,2})?$"
_MONEY = re.compile(MONEY_PATTERN)
CURRENCY_PATTERN = r"^[A-Z]{3}$"
_CURRENCY = re.compile(CURRENCY_PATTERN)
# The shop's own ids travel in paths: letters, digits and a few marks, never a leading dot (a
# `.` or `..` segment would be read as a relative path on the way).
EXTERNAL_ID_PATTERN = r"^[A-Za-z0-9_:@~+-][A-Za-z0-9._:@~+-]{0,254}$"
_EXTERNAL_ID = re.compile(EXTERNAL_ID_PATTERN)
URL_PATTERN = r"^https?://"
_URL = re.compile(URL_PATTERN)
MAX_URL = 2000
MAX_QUANTITY = 1_000_000
MAX_LINES = 500


def cents_text(cents: int) -> str:
    """1990 -> "19.90": money as the API shows it, never a float."""
    return f"{cents // 100}.{cents % 100:02d}"


def money_shown(total: str, currency: str | None) -> str:
    """A two-place amount as people read it on a page: "1234.50", "EUR" -> "1,234.50 EUR"."""
    return f"{Decimal(total):,.2f} {currency or ''}".strip()


def money(value: Any, field: str, *, required: bool = True) -> int | None:
    """An amount in cents from a decimal string or a JSON number with at most two places."""
    if value is None:
        if required:
            raise ApiError(400, f"{field} is required")
        return None
    problem = (
        f'{field} must be an amount with at most two decimal places (e.g. "19.90"), '
        f"from 0 to {MAX_MONEY}"
    )
    if isinstance(value, bool):
        raise ApiError(400, problem)
    if isinstance(value, str):
        if not _MONEY.match(value):
            raise ApiError(400, problem)
        amount = Decimal(value)
    elif isinstance(value, int):
        amount = Decimal(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ApiError(400, problem)
        amount = Decimal(repr(value))
    else:
        raise ApiError(400, problem)
    try:
        cents = amount * 100
        if cents != cents.to_integral_value() or not 0 <= cents <= MAX_MONEY_CENTS:
            raise ApiError(400, problem)
    except InvalidOperation:
        raise ApiError(400, problem) from None
    return int(cents)


def currency(value: Any, field: str = "currency") -> str:
    if not isinstance(value, str) or not _CURRENCY.match(value):
        raise ApiError(400, f"{field} must be an ISO 4217 code of three capital letters (e.g. EUR)")
    return value


def external_id(value: Any, field: str = "external_id") -> str:
    if value is None or value == "":
        raise ApiError(400, f"{field} is required")
    if not isinstance(value, str) or not _EXTERNAL_ID.match(value):
        raise ApiError(
            400,
            f"{field} must be 1 to 255 letters, digits or . _ : @ ~ + - (not starting with a dot)",
        )
    return value


def url(value: Any, field: str) -> str | None:
    """An http(s) link, or None."""
    if value is None:
        return None
    if not isinstance(value, str) or not _URL.match(value) or len(value) > MAX_URL:
        raise ApiError(
            400, f"{field} must be an http(s) URL of {MAX_URL} characters or fewer, or null"
        )
    return value


def email(value: Any, field: str = "email") -> str | None:
    """A customer's address, normalised, or None (an order may come without one)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ApiError(400, f"{field} must be a string or null")
    address = normalize_email(value)
    if len(address) > MAX_EMAIL_LENGTH:
        raise ApiError(400, f"{field} must be {MAX_EMAIL_LENGTH} characters or fewer")
    if not is_valid_email(address):
        raise ApiError(400, f"{field} is not a valid email address")
    return address


def moment(value: Any, field: str) -> datetime:
    """An ISO 8601 date-time as UTC (one without an offset is taken as UTC)."""
    problem = f"{field} must be an ISO 8601 date-time (e.g. 2026-03-15T10:30:00Z)"
    if not isinstance(value, str) or len(value) < 10:
        raise ApiError(400, problem)
    try:
        # RFC 3339 allows a lower-case `t` and `z`; Python 3.11 reads only capitals.
        parsed = datetime.fromisoformat(value[:10] + value[10:].upper())
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except (ValueError, OverflowError):  # overflow: year 1 or 9999 moved to UTC
        raise ApiError(400, problem) from None


def whole(value: Any, field: str, low: int, high: int) -> int:
    """An integer from `low` to `high` (a JSON number like 2.0 is the integer 2)."""
    problem = f"{field} must be a whole number from {low:,} to {high:,}"
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ApiError(400, problem)
    return value


@dataclass(frozen=True, slots=True)
class Line:
    product_id: str  # the product's external id
    quantity: int
    price: int  # unit price, cents

    def as_stored(self) -> dict[str, Any]:
        return {"product_id": self.product_id, "quantity": self.quantity, "price": self.price}


def lines(value: Any, field: str = "lines") -> tuple[Line, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ApiError(400, f"{field} must be an array of lines")
    if len(value) > MAX_LINES:
        raise ApiError(400, f"{field} may have at most {MAX_LINES} items")
    found = []
    for i, raw in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(raw, dict):
            raise ApiError(400, f"{where} must be an object with product_id, quantity and price")
        found.append(
            Line(
                external_id(raw.get("product_id"), f"{where}.product_id"),
                whole(raw.get("quantity"), f"{where}.quantity", 0, MAX_QUANTITY),
                money(raw.get("price"), f"{where}.price") or 0,
            )
        )
    return tuple(found)


def stored_lines(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Lines as the API shows them (prices as decimal strings)."""
    return [
        {
            "product_id": row["product_id"],
            "quantity": row["quantity"],
            "price": cents_text(int(row["price"])),
        }
        for row in rows
    ]
