"""Reading fields out of a platform's JSON, strictly about types and loosely about absence.

Every reader takes the value and a `where` (the field's path, for the error message). A
missing or null value is None; a value of the wrong type is a `PayloadError` naming the path.
Platforms add fields over time and leave optional ones out, so only types are held to account.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from mailroom.core.emails import is_valid_email, normalize_email

from .actions import PayloadError

# Amounts as the platforms write them in strings ("199.00", "3", "0.5"): plain decimal text
# only, so "1e3", "NaN" or "1_000" (all of which Decimal() would take) are refused.
_MONEY = re.compile(r"^-?[0-9]{1,15}(?:\.[0-9]{1,20})?$")
MAX_MONEY = Decimal("999999999999.99")
TWO_PLACES = Decimal("0.01")
MAX_QUANTITY = 1_000_000
MAX_ID_LENGTH = 255
# What the e-commerce API accepts (its values/products rules): a platform's valid data is fitted
# to them here, so that a long tag or a wholesale order is never refused with a 400 the
# platform would retry until it gives up on the webhook.
MAX_URL = 2000
MAX_TITLE = 500
MAX_CATEGORIES = 50
MAX_CATEGORY = 100
MAX_LINES = 500
_CURRENCY = re.compile(r"^[A-Za-z]{3}$")
_WHOLE = re.compile(r"^[0-9]{1,9}$")


def parse_json(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, numbers with a fraction as Decimal (never a float, so an
    amount sent as a number keeps its exact digits)."""
    try:
        payload = json.loads(body, parse_float=Decimal, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as problem:  # JSONDecodeError and bad UTF-8 both
        raise PayloadError("body is not valid JSON") from problem
    if not isinstance(payload, dict):
        raise PayloadError("body must be a JSON object")
    return payload


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def obj(value: Any, where: str) -> Mapping[str, Any]:
    """An object, or {} when missing. PHP encodes an empty associative array as `[]`, so
    WooCommerce may send `[]` where an object belongs: that reads as {} too."""
    if value is None or value == []:
        return {}
    if not isinstance(value, dict):
        raise PayloadError(f"{where} must be an object")
    return value


def items(value: Any, where: str) -> list[Any]:
    """A list, or [] when missing."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise PayloadError(f"{where} must be a list")
    return value


def text(value: Any, where: str) -> str | None:
    """A string, trimmed; None when missing or blank."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise PayloadError(f"{where} must be a string")
    return value.strip() or None


def flag(value: Any, where: str) -> bool | None:
    if value is None:
        return None
    if not isinstance(value, bool):
        raise PayloadError(f"{where} must be true or false")
    return value


def identifier(value: Any, where: str) -> str | None:
    """A platform id as text: both send integers; strings are taken as they are."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise PayloadError(f"{where} must be an id (a whole number or a string)")
    found = str(value).strip()
    if len(found) > MAX_ID_LENGTH:
        raise PayloadError(f"{where} is longer than {MAX_ID_LENGTH} characters")
    return found or None


def product_identifier(value: Any, where: str) -> str | None:
    """A line's product id; WooCommerce writes 0 for a product since deleted: no product."""
    found = identifier(value, where)
    return None if found == "0" else found


def required_id(value: Any, where: str) -> str:
    found = identifier(value, where)
    if found is None:
        raise PayloadError(f"{where} is required")
    return found


def money(value: Any, where: str) -> Decimal | None:
    """An amount from the platform's decimal text or JSON number, not yet rounded.

    Text must be plain decimal notation ("199.00", "3", "0.5"). A JSON number is taken as
    written (WooCommerce sends a line's `price` as `3.3333333333333335`); a float only
    reaches here when a caller parsed the JSON itself, and its shortest repr is the text
    the platform sent, so nothing is lost taking that.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise PayloadError(f"{where} must be an amount")
    if isinstance(value, float):
        value = Decimal(repr(value))
    if isinstance(value, int):
        value = Decimal(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise PayloadError(f"{where} must be a decimal amount")
        amount = value
    elif isinstance(value, str):
        written = value.strip()
        if not written:
            return None  # WooCommerce sends "" for a product without a price
        if not _MONEY.match(written):
            raise PayloadError(f"{where} must be a decimal amount")
        amount = Decimal(written)
    else:
        raise PayloadError(f"{where} must be an amount")
    if amount < 0:
        raise PayloadError(f"{where} must not be negative")
    if amount > MAX_MONEY:
        raise PayloadError(f"{where} is too large")
    return amount.copy_abs()  # "-0.00" reads as 0.00


def two_places(amount: Decimal) -> str:
    """`"19.9"` -> `"19.90"`; a third place rounds half up, as a till would."""
    try:
        return str(amount.quantize(TWO_PLACES, rounding=ROUND_HALF_UP))
    except InvalidOperation as problem:  # pragma: no cover - bounded by MAX_MONEY
        raise PayloadError("amount out of range") from problem


def quantity(value: Any, where: str) -> int:
    """A line's quantity: a whole number, 0 when missing."""
    if value is None:
        return 0
    if isinstance(value, str) and _WHOLE.match(value.strip()):
        value = int(value.strip())
    if isinstance(value, Decimal | float) and not isinstance(value, bool):
        # 2.0 (a number written with a fraction); compared before int() so that 1e100000000
        # is refused without building the integer
        finite = value.is_finite() if isinstance(value, Decimal) else math.isfinite(value)
        if not finite or not (0 <= value <= MAX_QUANTITY) or value != int(value):
            raise PayloadError(f"{where} must be a whole number between 0 and {MAX_QUANTITY}")
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise PayloadError(f"{where} must be a whole number")
    if not 0 <= value <= MAX_QUANTITY:
        raise PayloadError(f"{where} must be a whole number between 0 and {MAX_QUANTITY}")
    return value


def currency(value: Any, where: str) -> str | None:
    code = text(value, where)
    if code is None:
        return None
    if not _CURRENCY.match(code):
        raise PayloadError(f"{where} must be a three-letter currency code")
    return code.upper()


def timestamp(value: Any, where: str) -> datetime | None:
    """An ISO 8601 date-time as UTC. One without an offset is taken as UTC (WooCommerce's
    `*_gmt` fields are UTC written without one)."""
    written = text(value, where)
    if written is None:
        return None
    try:
        moment = datetime.fromisoformat(written)
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError) as problem:  # overflow: year 1 or 9999 moved to UTC
        raise PayloadError(f"{where} must be an ISO 8601 date-time") from problem


def email(value: Any, where: str) -> str | None:
    """An address in Mailroom's stored form, or None when missing or not an address: a shop
    may hold a typo, and an order is worth keeping without its address."""
    written = text(value, where)
    if written is None:
        return None
    normalized = normalize_email(written)
    return normalized if is_valid_email(normalized) else None


def url(value: Any, where: str) -> str | None:
    """A web address, kept only when it is http(s): it goes into emails as a link."""
    written = text(value, where)
    if written is None:
        return None
    if written.startswith("//"):  # protocol-relative image URLs (Shopify's CDN has used them)
        written = "https:" + written
    scheme, separator, rest = written.partition("://")
    if not separator or scheme.lower() not in ("http", "https") or len(written) > MAX_URL:
        return None
    return f"{scheme.lower()}://{rest}"


def title(value: Any, where: str, *, entities: bool = False) -> str | None:
    """A name to show, cut to what the API stores (Shopify allows 255, WooCommerce more).

    `entities`: WordPress hands names out HTML-escaped (`Ship Your Idea &ndash; Black`,
    `Tea &amp; Cake`); Mailroom stores text and escapes it where it renders it.
    """
    written = text(value, where)
    if written and entities:
        written = html.unescape(written)
    folded = " ".join(written.split()) if written else ""
    return folded[:MAX_TITLE] or None


def categories(names: list[str | None]) -> tuple[str, ...]:
    """Distinct names in order, at most MAX_CATEGORIES; a name longer than MAX_CATEGORY (a
    tag used as a note) is left out rather than cut into something the shop never said."""
    unique: dict[str, None] = {}
    for name in names:
        if name and len(name) <= MAX_CATEGORY:
            unique.setdefault(name, None)
    return tuple(unique)[:MAX_CATEGORIES]


def first(*values: str | None) -> str | None:
    return next((value for value in values if value), None)
