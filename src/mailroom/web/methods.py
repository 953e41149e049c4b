"""Which methods a path supports, answered the same way for OPTIONS, for 405 and in `Allow`.

Starlette matches routes in order, so `/api/v1/contacts/bulk` (POST) is also matched by
`/api/v1/contacts/{id}` (GET, PATCH, DELETE), and `GET /contacts/bulk` would reach
`get_contact` with id `bulk`. Here a path that names a fixed route is that resource alone: a
method it does not serve is a 405 listing exactly its methods, and OPTIONS answers 204 with
the same list. Paths with parameters keep the router's own matching.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.responses import JSONResponse, Response
from starlette.routing import compile_path
from starlette.types import ASGIApp, Receive, Scope, Send

from mailroom.web.permissions import iter_api_routes


@dataclass(frozen=True)
class _Resource:
    fixed: dict[str, frozenset[str]]  # path without parameters -> its methods
    patterns: list[tuple[Any, frozenset[str]]]  # compiled path with parameters -> methods


def _resources(app: Any) -> _Resource:
    found = getattr(app.state, "method_index", None)
    if found is None:
        fixed: dict[str, set[str]] = {}
        patterns: list[tuple[Any, frozenset[str]]] = []
        for path, methods, _route in iter_api_routes(app):
            if "{" in path:
                patterns.append((compile_path(path)[0], frozenset(methods)))
            else:
                fixed.setdefault(path, set()).update(methods)
        found = _Resource({p: frozenset(m) for p, m in fixed.items()}, patterns)
        app.state.method_index = found
    return found


def allowed_methods(app: Any, path: str) -> list[str]:
    """The methods `path` supports (none: no such resource). FastAPI serves no implicit HEAD,
    so none is listed; OPTIONS is answered for every resource and not listed either."""
    index = _resources(app)
    if path in index.fixed:
        return sorted(index.fixed[path])
    matches = [(p.groups, m) for p, m in index.patterns if p.match(path)]
    # A path several templates match is the most literal one's: `.../orders/batch` is the
    # batch route, not an order whose id is `batch`.
    fewest = min((groups for groups, _ in matches), default=0)
    methods: set[str] = set()
    for groups, route_methods in matches:
        if groups == fewest:
            methods |= route_methods
    return sorted(methods)


class MethodMiddleware:
    """OPTIONS and unsupported methods on `/api/v1` resources (see the module docstring)."""

    def __init__(self, app: ASGIApp, prefix: str = "/api/v1") -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        index = _resources(scope["app"])
        if method != "OPTIONS" and (path not in index.fixed or method in index.fixed[path]):
            await self.app(scope, receive, send)
            return
        allowed = allowed_methods(scope["app"], path)
        if not allowed:  # no such resource: the router's 404
            await self.app(scope, receive, send)
            return
        headers = {"Allow": ", ".join(allowed)}
        response: Response
        if method == "OPTIONS":
            response = Response(status_code=204, headers=headers)
        else:
            response = JSONResponse({"error": "Method Not Allowed"}, 405, headers=headers)
        await response(scope, receive, send)
