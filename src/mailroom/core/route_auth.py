"""The FastAPI side of `core.auth`: the security schemes (an `x-api-key`, or an assistant's
bearer token) and the route dependencies.

Kept apart so that `core.auth` (imported by every service, and so by every `mailroom`
command) does not import FastAPI: only routers import this module.
"""

from __future__ import annotations

from typing import Any

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPBearer

from mailroom.core.auth import PERMISSIONS, UNAUTHORIZED, Principal
from mailroom.core.errors import ApiError

api_key_header = APIKeyHeader(
    name="x-api-key",
    auto_error=False,
    scheme_name="ApiKey",
    description="Workspace API key, `mr_live_<8 lookup chars>_<32 chars>`.",
)
# Either scheme authenticates (OpenAPI lists them as alternatives); the middleware checked it.
assistant_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="AssistantToken",
    description="An assistant's access token (`mr_at_...`), from OAuth at `/oauth/token` or "
    "a one-use grant's exchange; it lives an hour.",
)


def current_principal(request: Request) -> Principal:
    principal = getattr(request.state, "principal", None)
    if not isinstance(principal, Principal):
        raise ApiError(401, UNAUTHORIZED)
    return principal


def authenticated() -> Any:
    """Route dependency for operations any valid key may call."""

    async def dependency(
        request: Request,
        _key: str | None = Security(api_key_header),
        _token: Any = Security(assistant_bearer),
    ) -> Principal:
        return current_principal(request)

    return Depends(dependency)


def require(permission: str, *, admin: bool = False) -> Any:
    """Route dependency: the caller's principal, refused with 403 without `permission`."""
    if permission not in PERMISSIONS:
        raise ValueError(f"unknown permission {permission}")

    async def dependency(
        request: Request,
        _key: str | None = Security(api_key_header),
        _token: Any = Security(assistant_bearer),
    ) -> Principal:
        principal = current_principal(request)
        principal.check(permission)
        if admin:
            principal.check_admin()
        return principal

    dependency.permission = permission  # type: ignore[attr-defined]  # read by web.openapi
    return Depends(dependency)
