"""Shared constants and small helpers for the black-box spec checks (HTTP and CLI only)."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

ZERO_ID = "00000000-0000-0000-0000-000000000000"

# Spec, Authentication 5: the 24 permission strings, in the spec's order.
PERMISSIONS = [
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
]

# Spec, Authentication 1: a fixed prefix ending in `live_`, 8 lookup characters, `_`, 32 more.
KEY_SHAPE = re.compile(r"^[A-Za-z0-9_]*?live_([A-Za-z0-9]{8})_([A-Za-z0-9]{32})$")

UNAUTHORIZED = {"error": "Unauthorized"}

# Every route the spec names with its permission (Endpoints tables and Authentication 7-8),
# plus the tag and list routes the issue designed in the same style.
ROUTES: list[tuple[str, str, str]] = [
    ("GET", "/api/v1/contacts", "contacts:read"),
    ("POST", "/api/v1/contacts", "contacts:write"),
    ("GET", f"/api/v1/contacts/{ZERO_ID}", "contacts:read"),
    ("PATCH", f"/api/v1/contacts/{ZERO_ID}", "contacts:write"),
    ("DELETE", f"/api/v1/contacts/{ZERO_ID}", "contacts:write"),
    ("GET", f"/api/v1/contacts/{ZERO_ID}/tags", "tags:read"),
    ("POST", f"/api/v1/contacts/{ZERO_ID}/tags", "tags:write"),
    ("DELETE", f"/api/v1/contacts/{ZERO_ID}/tags/{ZERO_ID}", "tags:write"),
    ("POST", "/api/v1/contacts/bulk", "contacts:write"),
    ("GET", "/api/v1/contacts/export", "contacts:export"),
    ("POST", "/api/v1/contacts/import", "contacts:write"),
    ("GET", "/api/v1/tags", "tags:read"),
    ("POST", "/api/v1/tags", "tags:write"),
    ("GET", f"/api/v1/tags/{ZERO_ID}", "tags:read"),
    ("PATCH", f"/api/v1/tags/{ZERO_ID}", "tags:write"),
    ("DELETE", f"/api/v1/tags/{ZERO_ID}", "tags:write"),
    ("GET", "/api/v1/lists", "lists:read"),
    ("POST", "/api/v1/lists", "lists:write"),
    ("GET", f"/api/v1/lists/{ZERO_ID}", "lists:read"),
    ("PATCH", f"/api/v1/lists/{ZERO_ID}", "lists:write"),
    ("DELETE", f"/api/v1/lists/{ZERO_ID}", "lists:write"),
    ("GET", f"/api/v1/lists/{ZERO_ID}/contacts", "lists:read"),
    ("GET", "/api/v1/custom-fields", "contacts:read"),
    ("POST", "/api/v1/custom-fields", "contacts:write"),
    ("PATCH", "/api/v1/custom-fields/some_key", "contacts:write"),
    ("DELETE", "/api/v1/custom-fields/some_key", "contacts:write"),
    ("POST", "/api/v1/custom-fields/scan", "contacts:write"),
    ("GET", "/api/v1/suppressions", "contacts:read"),
    ("POST", "/api/v1/suppressions", "contacts:write"),
    ("GET", "/api/v1/suppressions/list", "contacts:read"),
    ("GET", "/api/v1/suppressions/export", "contacts:export"),
    ("POST", "/api/v1/suppressions/lift", "contacts:write"),
    ("GET", "/api/v1/webhooks", "webhooks:read"),
    ("POST", "/api/v1/webhooks", "webhooks:write"),
    ("PATCH", f"/api/v1/webhooks/{ZERO_ID}", "webhooks:write"),
    ("DELETE", f"/api/v1/webhooks/{ZERO_ID}", "webhooks:write"),
    ("POST", f"/api/v1/webhooks/{ZERO_ID}/rotate-secret", "webhooks:write"),
    ("GET", f"/api/v1/webhooks/{ZERO_ID}/deliveries", "webhooks:read"),
    ("POST", f"/api/v1/webhooks/{ZERO_ID}/test", "webhooks:write"),
    ("GET", "/api/v1/media", "campaigns:read"),
    ("POST", "/api/v1/media", "campaigns:write"),
    ("DELETE", "/api/v1/media/abcdefgh.png", "campaigns:write"),
    ("GET", "/api/v1/account/audit-log", "audit:read"),
]


def route_id(route: tuple[str, str, str]) -> str:
    return f"{route[0]} {route[1].replace(ZERO_ID, '{id}')}"


async def call(
    client: httpx.AsyncClient,
    method: str,
    path: str,
    headers: dict[str, str],
    body: Any = None,
) -> httpx.Response:
    """One request; writes carry a JSON object body (`{}` unless given)."""
    if method in {"POST", "PATCH", "PUT"}:
        return await client.request(
            method, path, json={} if body is None else body, headers=headers
        )
    return await client.request(method, path, headers=headers)


def cli_json(result: Any) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def error_of(response: httpx.Response) -> str:
    body = response.json()
    assert isinstance(body, dict), body
    assert isinstance(body.get("error"), str), body
    return str(body["error"])
