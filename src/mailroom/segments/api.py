from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from mailroom.core.context import Context
from mailroom.core.pagination import Pagination
from mailroom.segments import service
from mailroom.segments.schemas import (
    SegmentCreate,
    SegmentDeleted,
    SegmentEnvelope,
    SegmentList,
    SegmentPreview,
    SegmentPreviewBody,
    SegmentUpdate,
)
from mailroom.web.deps import READ_ONLY, Paging, set_audit_target, use
from mailroom.web.openapi import errors

router = APIRouter(prefix="/api/v1/segments", tags=["Segments"])

RULE_ERRORS = (
    "A bad rule names its place, e.g. `conditions[2].op: gt is not valid for a text field`; "
    "tag and list ids must be this workspace's."
)
PREVIEW_TEXT = (
    "`count` of the contacts the rule matches now, and the first 10 of them, newest first. "
    "A read: never counted against the hourly write limit, not audited."
)


@router.get(
    "",
    response_model=SegmentList,
    summary="List segments",
    description="Segments of the workspace, newest first.",
    responses=errors(400),
)
async def list_segments(
    ctx: Annotated[Context, use("segments:read")],
    paging: Paging,
    q: Annotated[str | None, Query(description="Case-insensitive substring of the name.")] = None,
) -> dict[str, Any]:
    rows, total = await service.list_segments(ctx, paging, q)
    return {
        "segments": [service.as_dict(s) for s in rows],
        "pagination": Pagination.of(paging, total),
    }


@router.post(
    "",
    status_code=201,
    response_model=SegmentEnvelope,
    summary="Create a segment",
    description="A named rule over contacts, evaluated live wherever it is used (contact list, "
    f"export and bulk actions with `segment`, campaign audiences). {RULE_ERRORS}",
    responses=errors(400, 409, e409="A segment with this name already exists"),
)
async def create_segment(
    body: SegmentCreate, request: Request, ctx: Annotated[Context, use("segments:write")]
) -> dict[str, Any]:
    segment = await service.create_segment(ctx, body.model_dump(exclude_unset=True))
    set_audit_target(request, segment.id)
    return {"segment": service.as_dict(segment)}


@router.post(
    "/preview",
    response_model=SegmentPreview,
    summary="Preview a rule",
    description=f"{PREVIEW_TEXT} The rule is checked as on save; nothing is stored. {RULE_ERRORS}",
    responses=errors(400),
    openapi_extra=READ_ONLY,
)
async def preview_segment_rules(
    body: SegmentPreviewBody, ctx: Annotated[Context, use("segments:read")]
) -> dict[str, Any]:
    return await service.preview_rules(ctx, body.rules)


@router.get("/{id}", response_model=SegmentEnvelope, summary="Get a segment", responses=errors(404))
async def get_segment(id: str, ctx: Annotated[Context, use("segments:read")]) -> dict[str, Any]:
    return {"segment": service.as_dict(await service.get_segment(ctx, id))}


@router.get(
    "/{id}/preview",
    response_model=SegmentPreview,
    summary="Preview a segment",
    description=PREVIEW_TEXT,
    responses=errors(404),
)
async def preview_segment(id: str, ctx: Annotated[Context, use("segments:read")]) -> dict[str, Any]:
    return await service.preview_segment(ctx, id)


@router.patch(
    "/{id}",
    response_model=SegmentEnvelope,
    summary="Rename a segment or change its rule",
    description=RULE_ERRORS,
    responses=errors(400, 404, 409),
)
async def update_segment(
    id: str, body: SegmentUpdate, ctx: Annotated[Context, use("segments:write")]
) -> dict[str, Any]:
    segment = await service.update_segment(ctx, id, body.model_dump(exclude_unset=True))
    return {"segment": service.as_dict(segment)}


@router.delete(
    "/{id}",
    response_model=SegmentDeleted,
    summary="Delete a segment",
    description="The rule goes; no contact changes.",
    responses=errors(404),
)
async def delete_segment(id: str, ctx: Annotated[Context, use("segments:write")]) -> dict[str, Any]:
    await service.delete_segment(ctx, id)
    return {"success": True, "id": id}
