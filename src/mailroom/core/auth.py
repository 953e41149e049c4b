"""Who is calling: API keys, permissions, and the one principal type the whole app uses.

A request is authenticated once (by the middleware in `mailroom.middleware`, before the body
is even read), which leaves a `Principal` on `request.state`. Routes declare what they need
with `require("contacts:write")`; services receive the principal, never raw headers.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import string
from dataclasses import dataclass

from mailroom.core.errors import ApiError
from mailroom.core.plans import Plan

PERMISSIONS: tuple[str, ...] = (
    "contacts:read",
    "contacts:write",
    "contacts:export",
    "tags:read",
    "tags:write",
    "lists:read",
    "lists:write",
    "campaigns:read",
    "campaigns:write",
    "campaigns:send",
    "templates:read",
    "templates:write",
    "automations:read",
    "automations:write",
    "forms:read",
    "forms:write",
    "segments:read",
    "segments:write",
    "webhooks:read",
    "webhooks:write",
    "transactional:send",
    "ecommerce:read",
    "ecommerce:write",
    "audit:read",
)

# Form management predates its own permissions: keys holding automations:write still manage
# forms (spec, Authentication 8). `/api/v1/send` takes transactional:send or campaigns:send
# (the spec names both).
LEGACY_EQUIVALENTS: dict[str, tuple[str, ...]] = {
    "forms:read": ("automations:write",),
    "forms:write": ("automations:write",),
    "transactional:send": ("campaigns:send",),
}

KEY_PREFIX = "mr_live_"
_LOOKUP_ALPHABET = string.ascii_lowercase + string.digits
_SECRET_ALPHABET = string.ascii_letters + string.digits
KEY_PATTERN = re.compile(r"^mr_live_([a-z0-9]{8})_([A-Za-z0-9]{32})$")

UNAUTHORIZED = "Unauthorized"


def parse_permissions(value: str | list[str] | tuple[str, ...] | None) -> list[str]:
    """`all`, a comma-separated string or a list, to a checked list in catalogue order."""
    if value is None or value == "all" or value == ["all"]:
        return list(PERMISSIONS)
    items = value.split(",") if isinstance(value, str) else list(value)
    wanted = {item.strip() for item in items if item.strip()}
    if not wanted:
        raise ApiError(400, "permissions must not be empty")
    unknown = sorted(wanted - set(PERMISSIONS))
    if unknown:
        raise ApiError(
            400,
            f"Unknown permission(s): {', '.join(unknown)}. "
            f"Valid permissions: all, {', '.join(PERMISSIONS)}",
        )
    return [p for p in PERMISSIONS if p in wanted]


def generate_key() -> tuple[str, str, str]:
    """A new key as (full key, lookup, sha256 hex). Only the hash and lookup are stored."""
    lookup = "".join(secrets.choice(_LOOKUP_ALPHABET) for _ in range(8))
    secret = "".join(secrets.choice(_SECRET_ALPHABET) for _ in range(32))
    key = f"{KEY_PREFIX}{lookup}_{secret}"
    return key, lookup, hash_key(key)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_lookup(key: str | None) -> str | None:
    """The lookup characters of a well-formed key, or None for anything malformed."""
    if not key:
        return None
    match = KEY_PATTERN.match(key)
    return match.group(1) if match else None


def key_matches(key: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_key(key), stored_hash)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller bound to one workspace: an API key, a person in the dashboard,
    or an assistant (an agent a person or an admin key connected; `person_id` is then the
    person it acts for)."""

    workspace_id: str
    account_id: str
    plan: Plan
    permissions: frozenset[str]
    key_id: str | None = None
    person_id: str | None = None
    role: str | None = None  # admin | member, for people
    assistant_id: str | None = None
    # An assistant whose audience sends wait for an admin's approval.
    approval_required: bool = False

    @property
    def is_admin(self) -> bool:
        """Keys are made by workspace admins and act with their authority; people by role."""
        return self.person_id is None or self.role == "admin"

    def allows(self, permission: str) -> bool:
        if permission in self.permissions:
            return True
        return any(p in self.permissions for p in LEGACY_EQUIVALENTS.get(permission, ()))

    def check(self, permission: str) -> None:
        if not self.allows(permission):
            raise ApiError(403, f"Forbidden: {permission} permission required")

    def check_admin(self) -> None:
        if not self.is_admin:
            raise ApiError(403, "Forbidden: workspace admin role required")
