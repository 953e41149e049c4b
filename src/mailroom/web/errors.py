"""One error shape for every refusal: `{"error": message, **extras}`.

`ApiError` from any layer, Starlette's own 404/405, request validation (rendered as 400 with a
sentence a person can act on) and malformed JSON all go through here. An unhandled exception is
answered (500, `internal_error()`) and logged by web.observe, inside the request's context.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError, IntegrityError
from starlette.exceptions import HTTPException as StarletteHTTPException

from mailroom.core.errors import ApiError
from mailroom.web.methods import allowed_methods

log = logging.getLogger("mailroom.errors")

# Where a field sits (`body`, `query`, `path`) is not part of its name for the client.
_LOCATIONS = {"body", "query", "path", "header", "cookie"}


def _field_name(loc: Sequence[Any]) -> str:
    # Only the first element says where the field sits; a field may itself be named `body`.
    if loc and isinstance(loc[0], str) and loc[0] in _LOCATIONS:
        loc = loc[1:]
    parts = [str(p) for p in loc]
    name = ""
    for part in parts:
        if part.isdecimal():
            name += f"[{part}]"
        else:
            name += f".{part}" if name else part
    return name


def _expected_choices(ctx: dict[str, Any]) -> str:
    expected = str(ctx.get("expected", ""))
    for token in ("'", '"'):
        expected = expected.replace(token, "")
    return expected.replace(" or ", ", ")


def validation_message(errors: Sequence[dict[str, Any]]) -> str:
    """The first problem of a failed validation, phrased like the spec's messages."""
    extra = [_field_name(e["loc"]) for e in errors if e.get("type") == "extra_forbidden"]
    if extra:
        return f"Unknown field(s): {', '.join(extra)}"
    if not errors:
        return "Invalid request"
    error = errors[0]
    kind = str(error.get("type", ""))
    loc = tuple(error.get("loc", ()))
    ctx: dict[str, Any] = error.get("ctx") or {}
    field = _field_name(loc)
    if kind == "json_invalid":
        return "Invalid JSON in request body"
    if kind in ("value_error", "assertion_error"):
        message = str(error.get("msg", ""))
        for prefix in ("Value error, ", "Assertion failed, "):
            message = message.removeprefix(prefix)
        return message
    if not field:
        if kind == "missing":
            return "Request body is required"
        return "Request body must be a JSON object"
    simple = {
        "missing": f"{field} is required",
        "string_type": f"{field} must be a string",
        "bool_type": f"{field} must be true or false",
        "bool_parsing": f"{field} must be true or false",
        "int_type": f"{field} must be an integer",
        "int_parsing": f"{field} must be an integer",
        "int_from_float": f"{field} must be an integer",
        "float_type": f"{field} must be a number",
        "float_parsing": f"{field} must be a number",
        "finite_number": f"{field} must be a finite number",
        "list_type": f"{field} must be an array",
        "dict_type": f"{field} must be an object",
        "model_type": f"{field} must be an object",
        "model_attributes_type": f"{field} must be an object",
        "uuid_type": f"{field} must be a valid id",
        "uuid_parsing": f"{field} must be a valid id",
        "datetime_type": f"{field} must be an ISO 8601 timestamp",
        "datetime_parsing": f"{field} must be an ISO 8601 timestamp",
        "datetime_from_date_parsing": f"{field} must be an ISO 8601 timestamp",
        "date_parsing": f"{field} must be a date (YYYY-MM-DD)",
        "date_from_datetime_parsing": f"{field} must be a date (YYYY-MM-DD)",
        "url_parsing": f"{field} must be a valid URL",
        "url_type": f"{field} must be a valid URL",
    }
    if kind in simple:
        return simple[kind]
    if kind == "string_too_long":
        return f"{field} must be {ctx.get('max_length')} characters or fewer"
    if kind == "string_too_short":
        if ctx.get("min_length") == 1:
            return f"{field} must not be empty"
        return f"{field} must be at least {ctx.get('min_length')} characters"
    if kind == "too_long":
        return f"{field} may have at most {ctx.get('max_length')} items"
    if kind == "too_short":
        return f"{field} must have at least {ctx.get('min_length')} item(s)"
    if kind in ("greater_than_equal", "greater_than"):
        bound = ctx.get("ge", ctx.get("gt"))
        return (
            f"{field} must be at least {bound}"
            if kind == "greater_than_equal"
            else (f"{field} must be greater than {bound}")
        )
    if kind in ("less_than_equal", "less_than"):
        bound = ctx.get("le", ctx.get("lt"))
        return (
            f"{field} must be at most {bound}"
            if kind == "less_than_equal"
            else (f"{field} must be less than {bound}")
        )
    if kind in ("literal_error", "enum"):
        return f"{field} must be one of {_expected_choices(ctx)}"
    if kind == "string_pattern_mismatch":
        return f"{field} has an invalid format"
    return f"{field}: {error.get('msg', 'invalid value')}"


def error_response(
    status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=headers)


async def _api_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.body(), exc.headers or None)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(exc.headers or {})
    message = str(exc.detail)
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(allowed_methods(request.app, request.url.path))
    return error_response(exc.status_code, {"error": message}, headers or None)


async def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return error_response(400, {"error": validation_message(list(exc.errors()))})


# PostgreSQL refuses text it cannot store (a NUL character): the client's input, so a 400.
_BAD_TEXT_STATES = {"22021", "22P05"}


async def _database_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DBAPIError)
    orig = exc.orig
    state = str(getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None) or "")
    if state in _BAD_TEXT_STATES:
        return error_response(400, {"error": "Text must not contain NUL (\\u0000) characters"})
    if isinstance(exc, IntegrityError):
        # A unique rule broken by a concurrent request that passed the same checks.
        return error_response(
            409, {"error": "The request conflicts with a concurrent change; retry it"}
        )
    return await _unexpected(request, exc)


INTERNAL_ERROR = "Internal server error"


def internal_error() -> JSONResponse:
    """The answer to a failure of ours: the message only, never the exception's text."""
    return error_response(500, {"error": INTERNAL_ERROR})


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    """A database failure no other rule explains: logged here, inside the request (its id and
    workspace on the line), and answered as a 500."""
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return internal_error()


async def _server_error(_request: Request, _exc: Exception) -> JSONResponse:
    """Starlette's ServerErrorMiddleware (outside every middleware of ours) calls this for what
    escapes them. web.observe already answered and logged any exception of a request (inside
    its context); what still reaches here broke a response already started (nothing can be
    sent) or came from outside our middleware, and the server logs what is raised on to it:
    so no line here, or the traceback would be written twice."""
    return internal_error()


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(DBAPIError, _database_error)
    app.add_exception_handler(Exception, _server_error)
