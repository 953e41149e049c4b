from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request

from mailroom.core.context import Context
from mailroom.core.pagination import Pagination
from mailroom.templates import service
from mailroom.templates.schemas import (
    MERGE_TAGS,
    TemplateCreate,
    TemplateDeleted,
    TemplateEnvelope,
    TemplateList,
    TemplatePreview,
    TemplatePreviewRequest,
    TemplateUpdate,
)
from mailroom.web.deps import READ_ONLY, Paging, set_audit_target, use
from mailroom.web.openapi import errors

router = APIRouter(prefix="/api/v1/templates", tags=["Templates"])

SAVE_RULES = (
    "Over-long `name`, `subject` or `preheader` is 400; `html_content` over 500,000 or "
    "`text_content` over 200,000 characters is 413, and nothing is stored. Every part is "
    "checked for syntax: 400 `Template syntax error in <field>, line <n>: <what>`."
)


@router.get(
    "",
    response_model=TemplateList,
    summary="List templates",
    description="Templates of the workspace, newest first.",
    responses=errors(400),
)
async def list_templates(
    ctx: Annotated[Context, use("templates:read")],
    paging: Paging,
    q: Annotated[str | None, Query(description="Case-insensitive substring of the name.")] = None,
) -> dict[str, Any]:
    templates, total = await service.list_templates(ctx, paging, q)
    return {
        "templates": [service.as_dict(t) for t in templates],
        "pagination": Pagination.of(paging, total),
    }


@router.post(
    "",
    status_code=201,
    response_model=TemplateEnvelope,
    summary="Create a template",
    description=f"{MERGE_TAGS}\n\n{SAVE_RULES}",
    responses=errors(400, 409, 413, e409="A template with this name already exists"),
)
async def create_template(
    body: TemplateCreate, request: Request, ctx: Annotated[Context, use("templates:write")]
) -> dict[str, Any]:
    template = await service.create_template(ctx, body.model_dump(exclude_unset=True))
    set_audit_target(request, template.id)
    return {"template": service.as_dict(template)}


@router.get(
    "/{id}", response_model=TemplateEnvelope, summary="Get a template", responses=errors(404)
)
async def get_template(id: str, ctx: Annotated[Context, use("templates:read")]) -> dict[str, Any]:
    return {"template": service.as_dict(await service.get_template(ctx, id))}


@router.patch(
    "/{id}",
    response_model=TemplateEnvelope,
    summary="Update a template",
    description=f"Changes the fields sent; unknown fields are 400. {SAVE_RULES}",
    responses=errors(400, 404, 409, 413),
)
async def update_template(
    id: str, body: TemplateUpdate, ctx: Annotated[Context, use("templates:write")]
) -> dict[str, Any]:
    template = await service.update_template(ctx, id, body.model_dump(exclude_unset=True))
    return {"template": service.as_dict(template)}


@router.delete(
    "/{id}", response_model=TemplateDeleted, summary="Delete a template", responses=errors(404)
)
async def delete_template(
    id: str, ctx: Annotated[Context, use("templates:write")]
) -> dict[str, Any]:
    await service.delete_template(ctx, id)
    return {"success": True, "id": id}


@router.post(
    "/{id}/preview",
    response_model=TemplatePreview,
    summary="Preview a template",
    description="The subject, HTML and text as the contact (`contact_id`) would receive them, "
    "or with sample values (Jane Doe, a value for each custom field) without one. A read: "
    "never counted against the hourly write limit, not audited. 422 `Template render failed "
    "in <field>: <reason>` when the render goes over its budget (1 second, 5,000,000 "
    "characters of output, 1,000,000 loop turns, 50 nested calls) or the template itself "
    "fails (a division by zero).",
    responses=errors(400, 404, 422, e404="Template not found / Contact not found"),
    openapi_extra=READ_ONLY,
)
async def preview_template(
    id: str,
    ctx: Annotated[Context, use("templates:read")],
    body: Annotated[TemplatePreviewRequest | None, Body()] = None,
) -> dict[str, Any]:
    contact_id = body.contact_id if body is not None else None
    rendered = await service.preview_template(ctx, id, contact_id)
    return {"subject": rendered.subject, "html": rendered.html, "text": rendered.text}
