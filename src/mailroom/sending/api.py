from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request

from mailroom.core.context import Context
from mailroom.sending import service, transactional
from mailroom.sending.schemas import (
    SEND_DESCRIPTION,
    IdentityUpdate,
    MessageEnvelope,
    SendingEnvelope,
    SendRequest,
)
from mailroom.web.deps import set_audit_target, use
from mailroom.web.openapi import errors

router = APIRouter(prefix="/api/v1", tags=["Sending"])


@router.get(
    "/sending",
    response_model=SendingEnvelope,
    summary="Get the sender identity and sending state",
    description="The workspace's sender identity (used when a send names none), whether "
    "sending is paused (by whom, why), and the plan's hourly ceiling and monthly allowance "
    "with what is used of them.",
)
async def get_sending(ctx: Annotated[Context, use("campaigns:read")]) -> dict[str, Any]:
    return {"sending": await service.describe(ctx)}


@router.patch(
    "/sending",
    response_model=SendingEnvelope,
    summary="Set the sender identity",
    description="`from_email`, `from_name`, `reply_to` (an empty string clears). Its domain is "
    "checked when something is sent, like a campaign's.",
    responses=errors(400),
)
async def update_sending(
    body: IdentityUpdate, ctx: Annotated[Context, use("campaigns:write")]
) -> dict[str, Any]:
    row = await service.update_identity(ctx, body.model_dump(exclude_unset=True))
    return {"sending": await service.describe(ctx, row)}


@router.post(
    "/sending/pause",
    response_model=SendingEnvelope,
    summary="Pause sending",
    description="No message of this workspace is sent until it resumes (campaigns stay "
    "`sending`; `/send` is refused 403). Fires `workspace.paused`.",
)
async def pause_sending(ctx: Annotated[Context, use("campaigns:send")]) -> dict[str, Any]:
    return {"sending": await service.describe(ctx, await service.pause(ctx))}


@router.post(
    "/sending/resume",
    response_model=SendingEnvelope,
    summary="Resume sending",
    description="Fires `workspace.resumed`. A pause by the operator cannot be lifted with a "
    "key (403).",
    responses=errors(),
)
async def resume_sending(ctx: Annotated[Context, use("campaigns:send")]) -> dict[str, Any]:
    return {"sending": await service.describe(ctx, await service.resume(ctx))}


@router.post(
    "/send",
    status_code=202,
    response_model=MessageEnvelope,
    summary="Send one transactional message",
    description=f"{SEND_DESCRIPTION} Needs `transactional:send` (or `campaigns:send`).",
    responses=errors(400, 404, 413, 422),
)
async def send_message(
    body: SendRequest, request: Request, ctx: Annotated[Context, use("transactional:send")]
) -> dict[str, Any]:
    row = await transactional.queue(ctx, body.model_dump(exclude_unset=True))
    set_audit_target(request, row.id)
    return {"message": transactional.as_dict(row)}


@router.get(
    "/send/{id}",
    response_model=MessageEnvelope,
    summary="Get a transactional message",
    description="Its status as it moves: queued, sent, delivered, failed, skipped, bounced, "
    "complained (delivery reports and complaints that come back move it on).",
    responses=errors(404, e404="Message not found"),
)
async def get_message(
    id: str, ctx: Annotated[Context, use("transactional:send")]
) -> dict[str, Any]:
    return {"message": transactional.as_dict(await transactional.get_message(ctx, id))}
