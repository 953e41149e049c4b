from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from mailroom.core.context import Context
from mailroom.core.pagination import Pagination
from mailroom.tags import service
from mailroom.tags.schemas import (
    ContactTagAttach,
    ContactTagCreated,
    ContactTagList,
    Success,
    TagCreate,
    TagDeleted,
    TagEnvelope,
    TagList,
    TagUpdate,
)
from mailroom.web.deps import Paging, set_audit_target, use
from mailroom.web.openapi import errors

router = APIRouter(prefix="/api/v1", tags=["Tags"])


@router.get(
    "/tags",
    response_model=TagList,
    summary="List tags",
    description="Tags of the workspace by name, each with the number of contacts carrying it.",
    responses=errors(400),
)
async def list_tags(
    ctx: Annotated[Context, use("tags:read")],
    paging: Paging,
    q: Annotated[str | None, Query(description="Case-insensitive substring of the name.")] = None,
) -> dict[str, Any]:
    tags, total = await service.list_tags(ctx, paging, q)
    counts = await service.contact_counts(ctx, [t.id for t in tags])
    return {
        "tags": [service.as_dict(t, counts.get(t.id, 0)) for t in tags],
        "pagination": Pagination.of(paging, total),
    }


@router.post(
    "/tags",
    status_code=201,
    response_model=TagEnvelope,
    summary="Create a tag",
    responses=errors(400, 409, e409="A tag with this name already exists"),
)
async def create_tag(
    body: TagCreate, request: Request, ctx: Annotated[Context, use("tags:write")]
) -> dict[str, Any]:
    tag = await service.create_tag(ctx, body.name, body.color)
    set_audit_target(request, tag.id)
    return {"tag": service.as_dict(tag, 0)}


@router.get("/tags/{id}", response_model=TagEnvelope, summary="Get a tag", responses=errors(404))
async def get_tag(id: str, ctx: Annotated[Context, use("tags:read")]) -> dict[str, Any]:
    tag = await service.get_tag(ctx, id)
    counts = await service.contact_counts(ctx, [tag.id])
    return {"tag": service.as_dict(tag, counts.get(tag.id, 0))}


@router.patch(
    "/tags/{id}",
    response_model=TagEnvelope,
    summary="Rename or recolour a tag",
    responses=errors(400, 404, 409),
)
async def update_tag(
    id: str, body: TagUpdate, ctx: Annotated[Context, use("tags:write")]
) -> dict[str, Any]:
    tag = await service.update_tag(ctx, id, body.model_dump(exclude_unset=True))
    counts = await service.contact_counts(ctx, [tag.id])
    return {"tag": service.as_dict(tag, counts.get(tag.id, 0))}


@router.delete(
    "/tags/{id}",
    response_model=TagDeleted,
    summary="Delete a tag",
    description="Removes the tag from every contact, then the tag.",
    responses=errors(404),
)
async def delete_tag(id: str, ctx: Annotated[Context, use("tags:write")]) -> dict[str, Any]:
    untagged = await service.delete_tag(ctx, id)
    return {"success": True, "id": id, "contacts_untagged": untagged}


@router.get(
    "/contacts/{id}/tags",
    response_model=ContactTagList,
    summary="List a contact's tags",
    responses=errors(404, e404="Contact not found"),
)
async def list_contact_tags(id: str, ctx: Annotated[Context, use("tags:read")]) -> dict[str, Any]:
    return {"tags": await service.tags_of_contact(ctx, id)}


@router.post(
    "/contacts/{id}/tags",
    status_code=201,
    response_model=ContactTagCreated,
    summary="Tag a contact",
    description="Attach a tag (by `tag_id`) to the contact. Fires `contact.tag_added`.",
    responses=errors(
        400, 404, 409, e404="Contact not found / Tag not found", e409="Contact already has this tag"
    ),
)
async def add_contact_tag(
    id: str, body: ContactTagAttach, ctx: Annotated[Context, use("tags:write")]
) -> dict[str, Any]:
    link = await service.attach(ctx, id, body.tag_id)
    return {
        "contact_tag": {
            "contact_id": link.contact_id,
            "tag_id": link.tag_id,
            "created_at": link.created_at,
        }
    }


@router.delete(
    "/contacts/{id}/tags/{tagId}",
    response_model=Success,
    summary="Untag a contact",
    description="Fires `contact.tag_removed`.",
    responses=errors(
        404, e404="Contact not found / Tag not found / This tag is not associated with the contact"
    ),
)
async def remove_contact_tag(
    id: str, tagId: str, ctx: Annotated[Context, use("tags:write")]
) -> dict[str, Any]:
    await service.detach(ctx, id, tagId)
    return {"success": True}
