"""Operational routes (no key): health, and metrics for loopback or a token."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4
from sqlalchemy import text

from mailroom import API_VERSION, __version__
from mailroom.db import Database
from mailroom.system import metrics

router = APIRouter(tags=["System"])


@router.get(
    "/healthz",
    summary="Health check",
    description="200 with `database: ok` when the database answers; 503 otherwise. No key.",
    responses={503: {"description": "The database does not answer"}},
)
async def healthz(request: Request) -> JSONResponse:
    db: Database = request.app.state.db
    try:
        async with db.session(write=False) as session:
            await session.execute(text("SELECT 1"))
    except Exception as exc:  # any failure to reach the database is "down"
        return JSONResponse(
            {"status": "error", "database": "unavailable", "error": type(exc).__name__},
            status_code=503,
        )
    return JSONResponse(
        {
            "status": "ok",
            "database": "ok",
            "database_backend": db.dialect,
            "version": __version__,
            "api_version": API_VERSION,
        }
    )


@router.get("/metrics", include_in_schema=False)
async def metrics_exposition(request: Request) -> Response:
    """Prometheus text exposition (system.metrics): loopback clients, or a Bearer token when
    MAILROOM_METRICS_TOKEN is set."""
    client = request.scope.get("client")
    metrics.check_access(request.app.state.settings, client[0] if client else None, request.headers)
    body = await metrics.exposition(request.app.state.db)
    return Response(
        body, media_type=CONTENT_TYPE_PLAIN_0_0_4, headers={"Cache-Control": "no-store"}
    )
