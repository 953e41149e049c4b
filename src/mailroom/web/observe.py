"""Around every HTTP request (the outermost middleware): its id, its metrics and its access-log
line.

- `X-Request-ID`: taken from the request when well-formed (1-128 of letters, digits and
  `._:-`), else made; answered on every response and carried by every log line written while
  the request is answered (core.logs).
- Metrics (core.metrics) by the route's template, never its path (`/api/v1/contacts/{id}`), so
  the labels stay bounded whatever ids are asked for; a path no route matched is `unmatched`.
- One access-log line (`mailroom.access`): method, path, status, duration, route, the
  workspace of the key. The path's token-like parameters are redacted (subscriber links,
  sign-in links) and the query string is left out: it may carry a token.
- An exception a handler (or an inner middleware) did not handle is logged here once, at ERROR
  with its traceback, inside the request (its id, workspace and route on the line), and
  answered here as the usual `{"error": "Internal server error"}` 500 with its
  `X-Request-ID`: Starlette's own 500 (ServerErrorMiddleware) sits outside every middleware,
  so it would carry neither. A response already started cannot be replaced: the exception is
  logged and raised on (the server closes the connection).
"""

from __future__ import annotations

import logging
import re
import time
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mailroom.core import logs, metrics
from mailroom.web import errors

UNMATCHED = "unmatched"
REQUEST_ID_HEADER = b"x-request-id"
WELL_FORMED = re.compile(r"[A-Za-z0-9._:\-]{1,128}")
SECRET_PARAMS = ("token", "code", "secret")

access = logging.getLogger("mailroom.access")


def request_id_of(scope: Scope) -> str:
    for name, value in scope.get("headers") or ():
        if name == REQUEST_ID_HEADER:
            given = value.decode("latin-1")
            if WELL_FORMED.fullmatch(given):
                return given
            break
    return uuid.uuid4().hex


def shown_path(scope: Scope) -> str:
    """The path with the values of token-like path parameters replaced."""
    path: str = scope.get("path", "")
    for name, value in (scope.get("path_params") or {}).items():
        secret = any(word in name.lower() for word in SECRET_PARAMS)
        if secret and isinstance(value, str) and value:
            path = path.replace(value, logs.REDACTED)
    return logs.redact(path)


class ObserveMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = request_id_of(scope)
        token = logs.REQUEST_ID.set(request_id)
        workspace = logs.WORKSPACE_ID.set(None)  # the key check sets it
        status = 500  # an answer never started: the server's failure
        started_response = False
        header = (REQUEST_ID_HEADER, request_id.encode("latin-1"))

        async def sending(message: Message) -> None:
            nonlocal status, started_response
            if message["type"] == "http.response.start":
                status = message["status"]
                started_response = True
                message["headers"] = [*message.get("headers", ()), header]
            await send(message)

        try:
            try:
                await self.app(scope, receive, sending)
            except Exception as exc:
                _log_unexpected(scope, request_id, exc)
                if started_response:
                    raise
                await errors.internal_error()(scope, receive, sending)
        finally:
            seconds = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", None) or UNMATCHED
            method = scope["method"] if scope["method"] in metrics.METHODS else "OTHER"
            metrics.HTTP_REQUESTS.labels(route, method, str(status)).inc()
            metrics.HTTP_LATENCY.labels(route, method).observe(seconds)
            if access.isEnabledFor(logging.INFO):
                _log_access(scope, request_id, method, route, status, seconds)
            logs.REQUEST_ID.reset(token)
            logs.WORKSPACE_ID.reset(workspace)


def _log_access(
    scope: Scope, request_id: str, method: str, route: str, status: int, seconds: float
) -> None:
    principal = (scope.get("state") or {}).get("principal")
    path = shown_path(scope)
    access.info(
        "%s %s %s %.1f ms",
        method,
        path,
        status,
        seconds * 1000,
        extra={
            "request_id": request_id,
            "workspace_id": getattr(principal, "workspace_id", None),
            "method": method,
            "route": route,
            "path": path,
            "status": status,
            "duration_ms": round(seconds * 1000, 1),
        },
    )


def _log_unexpected(scope: Scope, request_id: str, exc: Exception) -> None:
    principal = (scope.get("state") or {}).get("principal")
    path = shown_path(scope)
    errors.log.error(
        "unhandled error on %s %s",
        scope["method"],
        path,
        exc_info=exc,
        extra={
            "request_id": request_id,
            "workspace_id": getattr(principal, "workspace_id", None) or logs.WORKSPACE_ID.get(),
            "method": scope["method"],
            "route": getattr(scope.get("route"), "path", None) or UNMATCHED,
            "path": path,
        },
    )
