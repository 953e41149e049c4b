"""Key (or assistant token) authentication, the hourly write limit and the audit of writes,
for every `/api/v1` request, before routing or body parsing (so a bad key is 401 whatever the
body).

A key's `last_used_at` is recorded after the response has been sent, at most once a minute per
key, and skipped when the database's one write connection (SQLite) is busy: a read never waits
for a writer, and the request never fails because of it (a later request records it).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Callable

from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.pool import QueuePool
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mailroom.accounts import service as accounts_service
from mailroom.assistants import service as assistants_service
from mailroom.audit import service as audit_service
from mailroom.core import logs, metrics
from mailroom.core.auth import UNAUTHORIZED, Principal
from mailroom.core.errors import ApiError
from mailroom.db import Database
from mailroom.ratelimits import service as ratelimits
from mailroom.web.deps import counts_as_write, operation_of
from mailroom.web.permissions import route_for

log = logging.getLogger("mailroom.api")

API_PREFIX = "/api/v1"
WRITE_WINDOW_SECONDS = 3600
BUSY_RETRY_AFTER = 5  # seconds


def server_busy() -> ApiError:
    """No pooled database connection came free in time: overload, not the client's fault."""
    metrics.DB_POOL_TIMEOUTS.inc()
    return ApiError(
        503,
        f"The server is busy. Retry in {BUSY_RETRY_AFTER} seconds.",
        headers={"Retry-After": str(BUSY_RETRY_AFTER)},
    )


async def check_key(db: Database, key: str | None) -> accounts_service.KeyCheck | None:
    """A request's key looked up in a short read transaction (for /api/v1 and /mcp alike).
    Raises the 503 `server_busy()` if no connection comes free in time."""
    try:
        async with db.session(write=False) as session:
            return await accounts_service.authenticate_key(session, key)
    except PoolTimeout:
        raise server_busy() from None


async def check_token(db: Database, token: str | None) -> assistants_service.TokenCheck | None:
    """An assistant's bearer token looked up as a key is (see `check_key`)."""
    try:
        async with db.session(write=False) as session:
            return await assistants_service.authenticate_token(session, token)
    except PoolTimeout:
        raise server_busy() from None


Check = accounts_service.KeyCheck | assistants_service.TokenCheck


async def authenticate(db: Database, headers: Headers) -> Check | None:
    """`x-api-key`, else `Authorization: Bearer <assistant access token>`; None for neither."""
    key = headers.get("x-api-key")
    if key is not None:
        return await check_key(db, key)
    token = assistants_service.bearer_of(headers.get("authorization"))
    return await check_token(db, token) if token else None


# Keys and assistants whose last_used_at is being written, per database: one write per
# caller at a time.
_touching: weakref.WeakKeyDictionary[Database, set[str]] = weakref.WeakKeyDictionary()


async def touch_later(db: Database, principal: Principal) -> None:
    """Record the key's (or assistant's) use, unless that would mean waiting for SQLite's
    write connection. Called once the response has been sent; never raises."""
    touch: Callable[[AsyncSession, str], Awaitable[None]]
    if principal.key_id:
        caller, touch = principal.key_id, accounts_service.touch_key
    elif principal.assistant_id:
        caller, touch = principal.assistant_id, assistants_service.touch
    else:
        return
    pool = db.write_engine.pool
    if db.is_sqlite and isinstance(pool, QueuePool) and pool.checkedout():
        return  # a writer holds it: skip rather than queue behind it
    busy = _touching.setdefault(db, set())
    if caller in busy:
        return
    busy.add(caller)
    try:
        async with db.transaction() as session:
            await touch(session, caller)
    except Exception:  # bookkeeping only: the request has been answered already
        log.warning("could not record last_used_at of %s", caller, exc_info=True)
    finally:
        busy.discard(caller)


def is_api_path(path: str) -> bool:
    return path == API_PREFIX or path.startswith(API_PREFIX + "/")


# Operations whose body is the credential (a one-use grant): no key is asked for.
NO_KEY_PATHS = frozenset({f"{API_PREFIX}/assistants/grants/exchange"})


class ApiKeyMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_api_path(scope["path"]):
            await self.app(scope, receive, send)
            return
        if "\x00" in scope["path"]:  # no id contains NUL: nothing is there
            await JSONResponse({"error": "Not Found"}, status_code=404)(scope, receive, send)
            return
        if b"%00" in scope.get("query_string", b""):
            await JSONResponse(
                {"error": "Query parameters must not contain NUL characters"}, status_code=400
            )(scope, receive, send)
            return
        if scope["path"] in NO_KEY_PATHS:
            await self.app(scope, receive, send)
            return
        db: Database = scope["app"].state.db
        try:
            check = await authenticate(db, Headers(scope=scope))
        except ApiError as busy:
            await _error(busy)(scope, receive, send)
            return
        if check is None:
            await JSONResponse({"error": UNAUTHORIZED}, status_code=401)(scope, receive, send)
            return
        principal = check.principal
        scope.setdefault("state", {})["principal"] = principal
        logs.WORKSPACE_ID.set(principal.workspace_id)  # on this request's log lines
        await self._authorized(scope, receive, send, db, principal)
        if check.needs_touch:
            await touch_later(db, principal)

    async def _authorized(
        self, scope: Scope, receive: Receive, send: Send, db: Database, principal: Principal
    ) -> None:
        target = route_for(scope["app"], scope["method"], scope["path"])
        is_write = counts_as_write(scope["method"], target.route if target else None)
        if target is not None and target.permission and not principal.allows(target.permission):
            # Before the body is read and before the write is counted (see web.permissions).
            scope["route"] = target.route
            body = {"error": f"Forbidden: {target.permission} permission required"}
            await JSONResponse(body, status_code=403)(scope, receive, send)
            if is_write:
                await self._audit(db, scope, principal, 403)
            return
        limit = principal.plan.writes_per_hour
        if is_write and limit is not None:
            try:
                async with db.transaction() as session:
                    decision = await ratelimits.hit(
                        session,
                        f"writes:{principal.workspace_id}",
                        limit=limit,
                        window_seconds=WRITE_WINDOW_SECONDS,
                    )
            except PoolTimeout:
                # Not audited: that would wait for a connection again.
                await _error(server_busy())(scope, receive, send)
                return
            if not decision.allowed:
                body = {
                    "error": f"Hourly write limit reached ({limit} on the "
                    f"{principal.plan.label} plan). Retry in {decision.retry_after} seconds."
                }
                headers = {"Retry-After": str(decision.retry_after)}
                await JSONResponse(body, status_code=429, headers=headers)(scope, receive, send)
                return

        status: dict[str, int] = {}

        async def send_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        except PoolTimeout:
            # Overload, not a fault: 503 with Retry-After rather than a 500 (when nothing has
            # been sent yet; otherwise the server can only drop the connection).
            if "code" in status:
                raise
            await _error(server_busy())(scope, receive, send)
            return  # not audited: that would wait for a connection again
        except Exception:
            if is_write:
                await self._audit(db, scope, principal, 500)
            raise
        if not is_write:
            return
        # Writes that went through a unit of work were audited inside its transaction; this
        # records the rest (refusals, and writes that touch no database row).
        if not scope.get("state", {}).get("audit_recorded"):
            await self._audit(db, scope, principal, status.get("code", 500))

    async def _audit(self, db: Database, scope: Scope, principal: Principal, code: int) -> None:
        try:
            path_params = scope.get("path_params") or {}
            target = next(iter(path_params.values()), None)
            async with db.transaction() as session:
                session.add(
                    audit_service.new_entry(
                        principal,
                        operation=operation_of(scope),
                        method=scope["method"],
                        path=scope["path"],
                        target_id=str(target) if target is not None else None,
                        status=code,
                    )
                )
        except Exception:  # an audit hiccup must not turn a 4xx into a 500
            log.exception("could not record audit entry")


def _error(error: ApiError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers or None)
