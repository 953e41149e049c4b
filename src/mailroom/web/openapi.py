"""The OpenAPI 3.1 document: error responses in our shape, auth and limits on every operation.

Routes declare their own domain errors with `errors(404, 409)`; this module adds what holds for
every `/api/v1` operation (401, 403, 429 on writes, 400 for validation), replaces FastAPI's
422 validation schema (we answer 400), and records each operation's permission as
`x-permission` so agents (MCP) and people can see it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import BaseModel, ConfigDict

from mailroom import API_VERSION
from mailroom.web.permissions import permission_of


class ErrorBody(BaseModel):
    """Every error: a message, plus named extras on some (`violations`, `reason`, ...)."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"additionalProperties": True})
    error: str


DESCRIPTIONS = {
    400: "Validation problem in the request",
    401: "Missing, malformed, unknown or revoked API key or assistant token",
    403: "Missing permission, or a plan limit",
    404: "Not found in this workspace",
    409: "Conflict with the current state",
    413: "Body or upload over its size limit",
    415: "Unsupported media type",
    422: "The target must change first",
    429: "Rate limited; see Retry-After",
    500: "Unexpected failure",
    503: "Temporarily unavailable",
}


def errors(*codes: int, **described: str) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route: each code answers `ErrorBody`; `described` overrides text,
    e.g. `errors(404, e409="Contact already has this tag")`."""
    responses: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        text = described.get(f"e{code}", DESCRIPTIONS.get(code, "Error"))
        responses[code] = {"model": ErrorBody, "description": text}
    return responses


ERROR_REF = {"$ref": "#/components/schemas/ErrorBody"}


def _error_response(code: int) -> dict[str, Any]:
    return {
        "description": DESCRIPTIONS[code],
        "content": {"application/json": {"schema": ERROR_REF}},
    }


def api_routes(app: FastAPI) -> Iterator[Any]:
    """Every API route as served (path with its router's prefix), included routers flattened."""
    for context in iter_route_contexts(app.routes):
        if isinstance(context.original_route, APIRoute):
            yield context


def _permissions_by_operation(app: FastAPI) -> dict[str, str]:
    found: dict[str, str] = {}
    for route in api_routes(app):
        permission = permission_of(route)
        if permission:
            found[route.name] = permission
    return found


# The API refuses a NUL character in any query parameter (web.middleware) before routing.
NO_NUL = r"^[^\x00]*$"


def _document_query_rules(operation: dict[str, Any]) -> None:
    """Query parameters as sent: never null (an absent one takes its default), and never
    carrying a NUL character."""
    for parameter in operation.get("parameters", []):
        if parameter.get("in") != "query":
            continue
        schema = parameter.get("schema", {})
        branches = [b for b in schema.pop("anyOf", []) if b.get("type") != "null"]
        if len(branches) == 1:
            schema.update(branches[0])
        elif branches:
            schema["anyOf"] = branches
        if schema.get("type") == "string" and "enum" not in schema and "pattern" not in schema:
            schema["pattern"] = NO_NUL


IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "Any string of yours (1-255 printable ASCII characters), e.g. a UUID. A "
    "retry with the same key within 24 hours answers the first response again (same status, "
    "identical body) without doing the work twice; the same key with a different request is "
    "409 `Idempotency-Key reused with a different request`. Keys are per workspace; a "
    "refused (4xx) request leaves no key.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[ -~]+$"},
}


def build_openapi(app: FastAPI) -> dict[str, Any]:
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title,
        version=API_VERSION,
        description=app.description,
        routes=app.routes,
        tags=app.openapi_tags,
    )
    components = schema.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    schemas["ErrorBody"] = ErrorBody.model_json_schema()
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    permissions = _permissions_by_operation(app)
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            auto_422 = responses.get("422", {})
            if "HTTPValidationError" in str(auto_422):
                del responses["422"]
                responses.setdefault("400", _error_response(400))
            if not path.startswith("/api/v1"):
                continue
            _document_query_rules(operation)
            no_key = operation.pop("x-no-key", False)
            if not no_key:
                responses.setdefault("401", _error_response(401))
            permission = permissions.get(operation.get("operationId", ""))
            if permission:
                operation["x-permission"] = permission
                responses.setdefault("403", _error_response(403))
                note = f"Requires the `{permission}` permission."
                description = operation.get("description", "")
                if note not in description:
                    operation["description"] = f"{description}\n\n{note}".strip()
            if method.upper() in {"POST", "PUT", "PATCH", "DELETE"} and not operation.get(
                "x-read-only"
            ):
                responses.setdefault("429", _error_response(429))
            # Idempotency keys are kept per workspace: an operation without a key has none.
            if method.upper() == "POST" and not no_key:
                operation.setdefault("parameters", []).append(IDEMPOTENCY_KEY)
                responses.setdefault("400", _error_response(400))  # a malformed key
                responses.setdefault("409", _error_response(409))
            operation["responses"] = dict(sorted(responses.items()))
    app.openapi_schema = schema
    return schema
