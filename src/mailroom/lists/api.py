from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from mailroom.core.context import Context
from mailroom.core.loose import Doc, choice
from mailroom.core.pagination import Pagination
from mailroom.lists import confirmation, service
from mailroom.lists.schemas import (
    AddMembers,
    ConfirmationSent,
    ListCreate,
    ListDeleted,
    ListEnvelope,
    ListMemberPage,
    ListPage,
    ListUpdate,
    MembersAdded,
    Success,
)
from mailroom.web.deps import Paging, set_audit_target, use
from mailroom.web.openapi import errors

router = APIRouter(prefix="/api/v1/lists", tags=["Lists"])


async def _one(ctx: Context, mailing_list: Any) -> dict[str, Any]:
    counts = await service.member_counts(ctx, [mailing_list.id])
    return {"list": service.as_dict(ctx, mailing_list, counts[mailing_list.id])}


@router.get(
    "",
    response_model=ListPage,
    summary="List lists",
    description="Lists by name, with confirmed and unconfirmed member counts.",
    responses=errors(400),
)
async def list_lists(ctx: Annotated[Context, use("lists:read")], paging: Paging) -> dict[str, Any]:
    rows, total = await service.list_lists(ctx, paging)
    counts = await service.member_counts(ctx, [r.id for r in rows])
    return {
        "lists": [service.as_dict(ctx, r, counts[r.id]) for r in rows],
        "pagination": Pagination.of(paging, total),
    }


@router.post(
    "",
    status_code=201,
    response_model=ListEnvelope,
    summary="Create a list",
    responses=errors(400, 409),
)
async def create_list(
    body: ListCreate, request: Request, ctx: Annotated[Context, use("lists:write")]
) -> dict[str, Any]:
    mailing_list = await service.create_list(ctx, body.model_dump(exclude_unset=True))
    set_audit_target(request, mailing_list.id)
    return await _one(ctx, mailing_list)


@router.get("/{id}", response_model=ListEnvelope, summary="Get a list", responses=errors(404))
async def get_list(id: str, ctx: Annotated[Context, use("lists:read")]) -> dict[str, Any]:
    return await _one(ctx, await service.get_list(ctx, id))


@router.patch(
    "/{id}",
    response_model=ListEnvelope,
    summary="Update a list",
    responses=errors(400, 404, 409),
)
async def update_list(
    id: str, body: ListUpdate, ctx: Annotated[Context, use("lists:write")]
) -> dict[str, Any]:
    mailing_list = await service.update_list(ctx, id, body.model_dump(exclude_unset=True))
    return await _one(ctx, mailing_list)


@router.delete(
    "/{id}",
    response_model=ListDeleted,
    summary="Delete a list",
    description="Removes the list and its memberships (the contacts stay).",
    responses=errors(404),
)
async def delete_list(id: str, ctx: Annotated[Context, use("lists:write")]) -> dict[str, Any]:
    removed = await service.delete_list(ctx, id)
    return {"success": True, "id": id, "members_removed": removed}


@router.get(
    "/{id}/contacts",
    response_model=ListMemberPage,
    summary="List a list's contacts",
    description="Members, most recently joined first, each with its membership state.",
    responses=errors(400, 404),
)
async def list_list_contacts(
    id: str,
    ctx: Annotated[Context, use("lists:read")],
    paging: Paging,
    status: Annotated[
        str | None,
        Query(description="confirmed or unconfirmed."),
        Doc(choice("confirmed", "unconfirmed")),
    ] = None,
) -> dict[str, Any]:
    members, total = await service.list_members(ctx, id, paging, status)
    return {"contacts": members, "pagination": Pagination.of(paging, total)}


@router.post(
    "/{id}/contacts",
    response_model=MembersAdded,
    summary="Add contacts to a list",
    description="Only subscribed contacts join: confirmed on a single opt-in list (fires "
    "`contact.list_joined`), unconfirmed on a double opt-in list and on every list of a "
    "Free-plan workspace. No confirmation email is sent by this call.",
    responses=errors(400, 404),
)
async def add_list_contacts(
    id: str, body: AddMembers, ctx: Annotated[Context, use("lists:write")]
) -> dict[str, Any]:
    return asdict(await service.add_members(ctx, id, body.contact_ids))


@router.delete(
    "/{id}/contacts/{contact_id}",
    response_model=Success,
    summary="Remove a contact from a list",
    description="Fires `contact.list_left`.",
    responses=errors(404),
)
async def remove_list_contact(
    id: str, contact_id: str, ctx: Annotated[Context, use("lists:write")]
) -> dict[str, Any]:
    await service.remove_member(ctx, id, contact_id)
    return {"success": True}


@router.post(
    "/{id}/contacts/{contact_id}/confirmation",
    status_code=202,
    response_model=ConfirmationSent,
    summary="Send a list confirmation email",
    description="Double opt-in: emails the contact a link (valid 7 days) that confirms an "
    "unconfirmed membership, from the workspace's sender identity (it counts against the "
    "monthly allowance like any send). 404 when the contact is not on the list; 409 when the "
    "membership is already confirmed; 403/422 as `POST /api/v1/send` when sending is paused, "
    "over the allowance or not configured.",
    responses=errors(403, 404, 409, 422, 429),
)
async def send_list_confirmation(
    id: str, contact_id: str, ctx: Annotated[Context, use("lists:write")]
) -> dict[str, Any]:
    await confirmation.request_confirmation(ctx, id, contact_id)
    return {"sent": True}
