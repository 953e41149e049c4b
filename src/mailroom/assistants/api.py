"""Assistants over the API: one-use grants (created with a key, exchanged without one) and the
workspace's connected assistants."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request

from mailroom.assistants import listing, service
from mailroom.assistants.schemas import (
    AssistantList,
    AssistantOut,
    AssistantRevoked,
    GrantCreate,
    GrantCreated,
    GrantExchange,
    TokenAnswer,
)
from mailroom.core.auth import Principal
from mailroom.core.pagination import Pagination
from mailroom.core.route_auth import authenticated
from mailroom.web.deps import Paging, Session, get_db, get_settings_dep, set_audit_target
from mailroom.web.openapi import errors

router = APIRouter(prefix="/api/v1/assistants", tags=["Assistants"])

MANAGE_NOTE = (
    " Needs a key holding every permission (people: workspace admins), as managing API keys."
)


@router.post(
    "/grants",
    status_code=201,
    response_model=GrantCreated,
    summary="Create a one-use grant for an assistant",
    description="For an agent that cannot open a browser: the answer shows the grant code "
    "once, with instructions to paste to the agent, which exchanges it (without any key) at "
    "`POST /api/v1/assistants/grants/exchange` for its own tokens. The permissions must be a "
    "subset of the calling key's (403 naming the first it lacks).",
    responses=errors(400, 403),
)
async def create_grant(
    body: GrantCreate,
    request: Request,
    session: Session,
    principal: Annotated[Principal, authenticated()],
) -> dict[str, Any]:
    created = await service.create_grant(
        session,
        principal,
        name=body.name,
        permissions=body.permissions,
        expires_in=body.expires_in,
        requires_approval=body.requires_approval,
        daily_recipient_budget=body.daily_recipient_budget,
    )
    grant = created.grant
    set_audit_target(request, grant.id)
    public_url = get_settings_dep(request).public_url
    return {
        "grant": {
            "code": created.code,
            "expires_at": grant.expires_at,
            "permissions": list(grant.permissions),
            "name": grant.name,
            "requires_approval": grant.requires_approval,
            "daily_recipient_budget": grant.daily_recipient_budget,
            "instructions": service.instructions(public_url, created.code, grant.expires_at),
        }
    }


@router.post(
    "/grants/exchange",
    response_model=TokenAnswer,
    summary="Exchange a one-use grant for tokens",
    description="Needs no key: the grant is the credential, once. 400 `Grant already used`, "
    "`Grant expired` or `Invalid grant` otherwise. The access token is sent as "
    "`Authorization: Bearer <token>` to `/api/v1` and `/mcp`.",
    responses=errors(400, 429),
    openapi_extra={"security": [], "x-no-key": True},
)
async def exchange_grant(body: GrantExchange, request: Request) -> dict[str, Any]:
    async with get_db(request).transaction() as session:
        pair = await service.exchange_grant(session, body.grant)
        return {
            **pair.answer(),
            "workspace_id": pair.assistant.workspace_id,
            "assistant_id": pair.assistant.id,
        }


@router.get(
    "",
    response_model=AssistantList,
    summary="List connected assistants",
    description="Agents connected by OAuth or a one-use grant, newest first." + MANAGE_NOTE,
    responses=errors(403),
)
async def list_assistants(
    session: Session, principal: Annotated[Principal, authenticated()], paging: Paging
) -> dict[str, Any]:
    service.check_can_manage(principal)
    rows, total = await listing.page(session, principal, paging)
    return {
        "assistants": await listing.describe(session, rows),
        "pagination": Pagination.of(paging, total),
    }


@router.get(
    "/{id}",
    response_model=AssistantOut,
    summary="Get an assistant",
    description="One connected assistant." + MANAGE_NOTE,
    responses=errors(403, 404),
)
async def get_assistant(
    id: str, session: Session, principal: Annotated[Principal, authenticated()]
) -> dict[str, Any]:
    service.check_can_manage(principal)
    row = await listing.get(session, principal, id)
    return (await listing.describe(session, [row]))[0]


@router.delete(
    "/{id}",
    response_model=AssistantRevoked,
    summary="Revoke an assistant",
    description="Its tokens answer 401 at once; it is no longer listed." + MANAGE_NOTE,
    responses=errors(403, 404),
)
async def revoke_assistant(
    id: str, request: Request, session: Session, principal: Annotated[Principal, authenticated()]
) -> dict[str, Any]:
    service.check_can_manage(principal)
    row = await listing.get(session, principal, id)
    await service.revoke(session, row)
    set_audit_target(request, row.id)
    return {"success": True, "id": row.id}
