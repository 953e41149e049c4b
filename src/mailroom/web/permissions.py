"""The permission each `/api/v1` route needs, known before routing.

The route's own `require(...)` dependency stays the rule; this index lets the middleware refuse a
key without the permission (403) before the body is read or validated, so a caller who may not
call a route learns only that, whatever they sent, and a refused call never counts as a write.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.routing import compile_path


@dataclass(frozen=True)
class RoutePermission:
    path: str
    pattern: re.Pattern[str]
    methods: frozenset[str]
    permission: str | None
    route: Any


def permission_of(route: Any) -> str | None:
    """The permission named by the route's `require(...)` dependency, if any."""
    for dependency in route.dependant.dependencies:
        permission = getattr(dependency.call, "permission", None)
        if permission:
            return str(permission)
    return None


def iter_api_routes(app: FastAPI) -> Iterator[tuple[str, frozenset[str], APIRoute]]:
    """(served path, methods, route) of every API route, included routers flattened."""
    for context in iter_route_contexts(app.routes):
        if isinstance(context.original_route, APIRoute) and context.path:
            yield context.path, frozenset(context.methods or ()), context.original_route


def _index(app: FastAPI) -> list[RoutePermission]:
    index = getattr(app.state, "route_permissions", None)
    if index is None:
        index = [
            RoutePermission(path, compile_path(path)[0], methods, permission_of(route), route)
            for path, methods, route in iter_api_routes(app)
        ]
        app.state.route_permissions = index
    return list(index)


def route_for(app: FastAPI, method: str, path: str) -> RoutePermission | None:
    """The route that serves `method path`: a fixed path's own routes only (see web.methods),
    else the router's first full match, in order."""
    index = _index(app)
    fixed = [entry for entry in index if entry.path == path]
    for entry in fixed or index:
        if method in entry.methods and entry.pattern.match(path):
            return entry
    return None
