"""Public operational routes (no key): health."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlalchemy import text

from mailroom import API_VERSION, __version__
from mailroom.db import Database

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
