"""Dependencies every router shares: the request's unit of work, pagination, audit target."""

from __future__ import annotations

from collections.abc import AsyncIterator, MutableMapping
from typing import Annotated, Any

from fastapi import Depends, Query, Request, Response
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.audit import service as audit_service
from mailroom.core.auth import Principal
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.core.route_auth import require
from mailroom.db import Database
from mailroom.settings import Settings
from mailroom.web import idempotency

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# `openapi_extra` of a POST that only reads (previews): never counted against the hourly write
# limit, no audit entry, a read-only unit of work. Shown in the document as `x-read-only`.
READ_ONLY = {"x-read-only": True}


def counts_as_write(method: str, route: Any) -> bool:
    extra = getattr(route, "openapi_extra", None) or {}
    return method in WRITE_METHODS and not extra.get("x-read-only")


def get_db(request: Request) -> Database:
    db: Database = request.app.state.db
    return db


def get_settings_dep(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def operation_of(scope: MutableMapping[str, Any]) -> str:
    """The operation id of the route that served `scope` (ids are handler names, see app.py);
    for a method the route does not serve, `METHOD path`."""
    route = scope.get("route")
    methods = getattr(route, "methods", None) or ()
    if route is None or scope.get("method") not in methods:
        return f"{scope.get('method')} {scope.get('path')}"
    return str(getattr(route, "name", None) or "unknown")


def set_audit_target(request: Request, target_id: str | None) -> None:
    """Name the row a write acted on, when the path does not (e.g. a create)."""
    request.state.audit_target = target_id


def set_audit_operation(request: Request, operation: str) -> None:
    """Audit the write under `operation` rather than the route's name, when one route does
    something worth telling apart (e.g. `skip_warmup` through PATCH /domains/{id})."""
    request.state.audit_operation = operation


def set_status(request: Request, response: Response, status: int) -> None:
    """Answer `status` instead of the route's usual one (e.g. 202 for a request held for
    approval), and audit the write under it."""
    response.status_code = status
    request.state.audit_status = status


def _audit_target(request: Request) -> str | None:
    explicit = getattr(request.state, "audit_target", None)
    if explicit:
        return str(explicit)
    params = request.path_params
    for name in ("id", "key", "tag_id", "tagId"):
        if name in params:
            return str(params[name])
    return str(next(iter(params.values()))) if params else None


async def unit_of_work(request: Request) -> AsyncIterator[AsyncSession]:
    """One session per request, committed once at the end of a successful write.

    A successful key-authenticated write gets its audit entry in the same transaction as the
    change (a crash cannot keep one without the other); refused writes are audited by the
    middleware once the response status is known.
    """
    db = get_db(request)
    write = counts_as_write(request.method, request.scope.get("route"))
    async with db.session(write=write) as session:
        try:
            yield session
        except BaseException:
            await session.rollback()
            raise
        if not write:
            await session.rollback()
            return
        principal = getattr(request.state, "principal", None)
        key = None
        if isinstance(principal, Principal):
            route = request.scope.get("route")
            session.add(
                audit_service.new_entry(
                    principal,
                    operation=getattr(request.state, "audit_operation", None)
                    or operation_of(request.scope),
                    method=request.method,
                    path=request.url.path,
                    target_id=_audit_target(request),
                    status=int(
                        getattr(request.state, "audit_status", None)
                        or getattr(route, "status_code", None)
                        or 200
                    ),
                )
            )
            # The request's Idempotency-Key commits with its work, or neither does.
            key = idempotency.reservation(request.scope.get("state", {}), principal)
            if key is not None:
                # The work's own conflicts surface first, as themselves; what fails after is
                # the key: an identical request (another process) reserved it first, and this
                # one's work is taken back.
                await session.flush()
                session.add(key)
                try:
                    await session.flush()
                except IntegrityError:
                    raise ApiError(409, idempotency.IN_PROGRESS) from None
        await session.commit()
        request.state.audit_recorded = True
        if key is not None:
            request.scope["state"][idempotency.RESERVED] = True


# Function scope: the commit happens before the response is sent, so a client that got its
# 201 can read the row back at once, and a failed commit is a 500, not a false success.
Session = Annotated[AsyncSession, Depends(unit_of_work, scope="function")]


# Any page from 1 is valid (past the end it is just empty); the bound only keeps
# OFFSET = (page - 1) * limit inside a 64-bit integer.
MAX_PAGE = 10**15


def page_params(
    page: Annotated[int, Query(ge=1, le=MAX_PAGE, description="Page number, from 1.")] = 1,
    limit: Annotated[int, Query(ge=1, le=100, description="Items per page, 1-100.")] = 50,
) -> PageParams:
    return PageParams(page, limit)


Paging = Annotated[PageParams, Depends(page_params)]


def use(permission: str, *, admin: bool = False) -> Any:
    """Route dependency giving the service `Context` (session, principal, settings) after
    checking `permission` (and the admin role for people, with `admin`):
    `ctx: Annotated[Context, use("contacts:write")]`."""
    permission_dependency = require(permission, admin=admin)

    async def dependency(
        request: Request,
        session: Session,
        principal: Principal = permission_dependency,
    ) -> Context:
        return Context(session, principal, get_settings_dep(request))

    dependency.permission = permission  # type: ignore[attr-defined]  # read by web.openapi
    return Depends(dependency)
