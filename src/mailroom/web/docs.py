"""The API reference pages (`/docs` Swagger UI, `/redoc`) and the favicon, served from this
installation only: FastAPI's defaults load Swagger UI from a CDN, so `/docs` was blank on a
machine without internet access (and told a third party about every visit).

The files come from the `fastapi-offline` package (its `static/` folder, refreshed with each
release; 1.7.7 carries Swagger UI 5.32, which reads OpenAPI 3.1). Only its files are used:
its `FastAPIOffline()` factory would build the app, which `create_app()` does itself.
`swagger-ui-bundle` was the other candidate, but its last release (1.1.0) carries Swagger UI
4.15, which refuses an OpenAPI 3.1 document.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter, Response
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

ASSETS_PATH = "/docs/assets"
FAVICON = Path(__file__).parent / "favicon.ico"
# The only files served, with their types (never a path taken from the request).
_ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "redoc.standalone.js": "text/javascript",
}
# A day: the names carry no version, and an upgrade of the package should show within one.
_CACHE = {"Cache-Control": "public, max-age=86400"}

router = APIRouter(include_in_schema=False)


def _asset_dir() -> Path:
    return Path(str(files("fastapi_offline") / "static"))


@router.get("/docs")
async def swagger_ui() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="Mailroom API",
        swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
        swagger_favicon_url="/favicon.ico",
    )


@router.get("/redoc")
async def redoc() -> HTMLResponse:
    return get_redoc_html(
        openapi_url="/openapi.json",
        title="Mailroom API",
        redoc_js_url=f"{ASSETS_PATH}/redoc.standalone.js",
        redoc_favicon_url="/favicon.ico",
        with_google_fonts=False,
    )


@router.get(ASSETS_PATH + "/{name}")
async def docs_asset(name: str) -> Response:
    kind = _ASSETS.get(name)
    if kind is None:
        return Response(status_code=404)
    return FileResponse(_asset_dir() / name, media_type=kind, headers=_CACHE)


@router.get("/favicon.ico")
async def favicon() -> FileResponse:
    return FileResponse(FAVICON, media_type="image/x-icon", headers=_CACHE)
