"""Checking one contact field at a time, with the spec's messages."""

from __future__ import annotations

from typing import Any

from mailroom.core.emails import MAX_EMAIL_LENGTH, is_valid_email, normalize_email
from mailroom.core.errors import ApiError
from mailroom.core.languages import reduce_language

MAX_NAME = 100
MAX_SOURCE = 40
PATCH_STATUSES = ("subscribed", "unsubscribed", "bounced", "complained", "archived")


def clean_email(value: Any) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ApiError(400, "email is required")
    if not isinstance(value, str):
        raise ApiError(400, "email must be a string")
    email = normalize_email(value)
    if len(email) > MAX_EMAIL_LENGTH:
        raise ApiError(400, f"email must be {MAX_EMAIL_LENGTH} characters or fewer")
    if not is_valid_email(email):
        raise ApiError(400, "Invalid email address")
    return email


def clean_name(field: str, value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ApiError(400, f"{field} must be a string")
    value = value.strip()
    if len(value) > MAX_NAME:
        raise ApiError(400, f"{field} must be {MAX_NAME} characters or fewer")
    return value


def clean_source(value: Any, default: str = "api") -> str:
    if value is None:
        return default
    if not isinstance(value, str):
        raise ApiError(400, "source must be a string")
    value = value.strip()
    if len(value) > MAX_SOURCE:
        raise ApiError(400, f"source must be {MAX_SOURCE} characters or fewer")
    return value or default


def clean_language(value: Any) -> str | None:
    """ISO 639-1, reduced from regional forms; null or empty means none."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise ApiError(400, "language must be a string")
    code = reduce_language(value)
    if code is None:
        raise ApiError(400, f"language must be an ISO 639-1 code (for example en, fr, pt): {value}")
    return code


def clean_patch_status(value: Any) -> str:
    if value not in PATCH_STATUSES:
        raise ApiError(400, "status must be one of subscribed, unsubscribed, bounced, complained")
    return str(value)
