from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from mailroom.core.context import Context
from mailroom.core.loose import Doc, text
from mailroom.media import service
from mailroom.media.schemas import UPLOAD_BODY, MediaDeleted, MediaLibrary, MediaUploaded
from mailroom.media.storage import LocalStore, make_store
from mailroom.web.deps import get_db, get_settings_dep, set_audit_target, use
from mailroom.web.openapi import errors
from mailroom.web.uploads import read_upload

router = APIRouter(prefix="/api/v1/media", tags=["Media"])
public_router = APIRouter(tags=["Media"], include_in_schema=False)


@router.get(
    "",
    response_model=MediaLibrary,
    summary="List hosted images",
    description="Always 200: `configured: false` and an empty list when image hosting is off. "
    "Newest first; `truncated` when more files exist than are listed.",
    responses=errors(503),
)
async def list_media(ctx: Annotated[Context, use("campaigns:read")]) -> dict[str, Any]:
    return await service.library(ctx)


@router.post(
    "",
    status_code=201,
    response_model=MediaUploaded,
    summary="Upload an image",
    description="multipart/form-data with a `file`: PNG, JPEG, GIF or WebP (told from the bytes, "
    "not the name), 2 MB at most, within the plan's storage quota and 120 uploads per hour. "
    "The returned `url` is public and permanent while the file exists.",
    openapi_extra={"requestBody": UPLOAD_BODY},
    responses=errors(400, 403, 413, 415, 429, 503),
)
async def upload_media(
    request: Request, ctx: Annotated[Context, use("campaigns:write")]
) -> dict[str, Any]:
    if service.store_for(ctx) is None:
        raise service.not_configured()
    upload = await read_upload(request, max_bytes=service.MAX_BYTES, too_large=service.TOO_LARGE)
    result = await service.upload(ctx, upload.content, upload.filename)
    set_audit_target(request, result["file"]["id"])
    return result


@router.delete(
    "/{id}",
    response_model=MediaDeleted,
    summary="Delete an image",
    description="Removes the bytes and the record; emails that show it get a broken picture.",
    responses=errors(404, 503),
)
async def delete_media(
    id: Annotated[str, Doc(text(pattern=service.ID_PATTERN.pattern))],
    ctx: Annotated[Context, use("campaigns:write")],
) -> dict[str, Any]:
    await service.remove(ctx, id)
    return {"ok": True, "id": id, "note": service.DELETE_NOTE}


@public_router.get("/media/{id}")
async def serve_media(id: str, request: Request) -> Response:
    """Public, permanent image URLs (local store): long-cached, never sniffed."""
    settings = get_settings_dep(request)
    store = make_store(settings)
    async with get_db(request).session(write=False) as session:
        media = await service.public_file(session, id)
    if store is None or media is None:
        return Response(
            status_code=404, content=b'{"error":"Not Found"}', media_type="application/json"
        )
    if not isinstance(store, LocalStore):
        return RedirectResponse(store.url(media.storage_key), status_code=301)
    data = await store.read(media.storage_key)
    if data is None:
        return Response(
            status_code=404, content=b'{"error":"Not Found"}', media_type="application/json"
        )
    return Response(
        data,
        media_type=media.type,
        headers={
            "Cache-Control": "public, max-age=31536000, immutable",
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'",
        },
    )
