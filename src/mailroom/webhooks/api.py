from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from mailroom.core.context import Context
from mailroom.core.pagination import Pagination
from mailroom.models import Workspace
from mailroom.web.deps import Paging, set_audit_target, use
from mailroom.web.openapi import errors
from mailroom.webhooks import log, service, testing
from mailroom.webhooks.schemas import (
    DeliveryPage,
    TestRequest,
    TestResult,
    WebhookCreate,
    WebhookDeleted,
    WebhookList,
    WebhookOut,
    WebhookUpdate,
    WebhookWithSecret,
)

router = APIRouter(prefix="/api/v1/webhooks", tags=["Webhooks"])

ADMIN_NOTE = " Workspace admins only."


@router.get(
    "",
    response_model=WebhookList,
    summary="List webhook endpoints",
    description="Every endpoint with its health (consecutive failures, last success, last "
    "failure, why it was disabled). Secrets are never listed." + ADMIN_NOTE,
)
async def list_webhooks(
    ctx: Annotated[Context, use("webhooks:read", admin=True)],
) -> dict[str, Any]:
    return {"webhooks": [service.as_dict(e) for e in await service.list_endpoints(ctx)]}


@router.post(
    "",
    status_code=201,
    response_model=WebhookWithSecret,
    summary="Register a webhook endpoint",
    description="https only, publicly reachable, no credentials in the URL. Deliveries are "
    "signed with the `secret` returned here (and only here): header `X-Mailroom-Signature: "
    "t=<unix>,v1=<hex HMAC-SHA256 of '<t>.<raw body>'>`. Slack incoming-webhook and Teams "
    "Workflows URLs receive readable messages for the seven chat events instead." + ADMIN_NOTE,
    responses=errors(400, 403),
)
async def create_webhook(
    body: WebhookCreate,
    request: Request,
    ctx: Annotated[Context, use("webhooks:write", admin=True)],
) -> dict[str, Any]:
    endpoint = await service.create_endpoint(ctx, body.model_dump(exclude_unset=True))
    set_audit_target(request, endpoint.id)
    return service.as_dict(endpoint, with_secret=True)


@router.patch(
    "/{id}",
    response_model=WebhookOut,
    summary="Update a webhook endpoint",
    description="Change url, description, event_types, filters or enabled. Re-enabling clears "
    "the failure count and reason (missed events are not replayed); disabling abandons queued "
    "deliveries." + ADMIN_NOTE,
    responses=errors(400, 404),
)
async def update_webhook(
    id: str, body: WebhookUpdate, ctx: Annotated[Context, use("webhooks:write", admin=True)]
) -> dict[str, Any]:
    endpoint = await service.update_endpoint(ctx, id, body.model_dump(exclude_unset=True))
    return service.as_dict(endpoint)


@router.delete(
    "/{id}",
    response_model=WebhookDeleted,
    summary="Delete a webhook endpoint",
    description="Removes the endpoint and its delivery log; nothing more is sent." + ADMIN_NOTE,
    responses=errors(404),
)
async def delete_webhook(
    id: str, ctx: Annotated[Context, use("webhooks:write", admin=True)]
) -> dict[str, Any]:
    await service.delete_endpoint(ctx, id)
    return {"success": True, "id": id}


@router.post(
    "/{id}/rotate-secret",
    response_model=WebhookWithSecret,
    summary="Rotate a webhook's signing secret",
    description="Issues a new secret, returned here; the old one stops working at once (the "
    "next attempt is signed with the new one)." + ADMIN_NOTE,
    responses=errors(404),
)
async def rotate_webhook_secret(
    id: str, ctx: Annotated[Context, use("webhooks:write", admin=True)]
) -> dict[str, Any]:
    return service.as_dict(await service.rotate_secret(ctx, id), with_secret=True)


@router.get(
    "/{id}/deliveries",
    response_model=DeliveryPage,
    response_model_exclude_unset=True,  # `payload` only when asked for
    summary="List a webhook's deliveries",
    description="The delivery log, newest first. `include=payload` adds the JSON body sent."
    + ADMIN_NOTE,
    responses=errors(400, 404),
)
async def list_webhook_deliveries(
    id: str,
    ctx: Annotated[Context, use("webhooks:read", admin=True)],
    paging: Paging,
    include: Annotated[str | None, Query(description="`payload` to include the body.")] = None,
) -> dict[str, Any]:
    rows, total = await service.list_deliveries(ctx, id, paging)
    with_payload = include == "payload"
    events = await log.events_for(ctx.session, rows) if with_payload else {}
    return {
        "deliveries": [
            log.entry(d, events.get(d.event_id), with_payload=with_payload) for d in rows
        ],
        "pagination": Pagination.of(paging, total),
    }


@router.post(
    "/{id}/test",
    response_model=TestResult,
    response_model_exclude_none=True,
    summary="Send a test delivery",
    description="Sends one synthetic, signed delivery of `event` now: the real shape with fake "
    "values, `data.test: true` and an id starting `test_`. Not logged." + ADMIN_NOTE,
    responses=errors(400, 404),
)
async def test_webhook(
    id: str, body: TestRequest, ctx: Annotated[Context, use("webhooks:write", admin=True)]
) -> dict[str, Any]:
    endpoint = await service.get_endpoint(ctx, id)
    workspace = await ctx.session.get(Workspace, ctx.workspace_id)
    return await testing.send_test(ctx, endpoint, body.event, workspace.name if workspace else "")
