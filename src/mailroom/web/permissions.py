"""The permission each `/api/v1` route needs, known before routing.

The route's own `require(...)` dependency stays the rule; this index lets the middleware refuse a
key without the permission (403) before the body is read or validated, so a caller who may not
call a route learns only that, whatever they sent, and a refused call never counts as a write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.routing import compile_path


@dataclass(frozen=True)
class RoutePermission:
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


def _index(app: FastAPI) -> list[RoutePermission]:
    index = getattr(app.state, "route_permissions", None)
    if index is None:
        index = []
        for context in iter_route_contexts(app.routes):
            if isinstance(context.original_route, APIRoute) and context.path:
                pattern, _format, _convertors = compile_path(context.path)
                index.append(
                    RoutePermission(
                        pattern,
                        frozenset(context.methods or ()),
                        permission_of(context.original_route),
                        context.original_route,
                    )
                )
        app.state.route_permissions = index
    return list(index)


def route_for(app: FastAPI, method: str, path: str) -> RoutePermission | None:
    """The route Starlette will pick for `method path` (first full match, in order)."""
    for entry in _index(app):
        if method in entry.methods and entry.pattern.match(path):
            return entry
    return None
