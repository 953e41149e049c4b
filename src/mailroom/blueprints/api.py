from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from mailroom.blueprints import service
from mailroom.blueprints.schemas import (
    BlueprintApplied,
    BlueprintApply,
    BlueprintCreate,
    BlueprintDeleted,
    BlueprintEnvelope,
    BlueprintList,
    BlueprintUpdate,
)
from mailroom.core.auth import Principal
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import Pagination
from mailroom.core.route_auth import authenticated
from mailroom.web.deps import Paging, Session, get_db, get_settings_dep, set_audit_target
from mailroom.web.openapi import errors

router = APIRouter(prefix="/api/v1/blueprints", tags=["Blueprints"])
PERMISSIONS_NOTE = (
    "Each part needs its permission family, checked in this order: custom_fields `contacts:*`, "
    "tags `tags:*`, lists `lists:*`, segments `segments:*`, templates `templates:*`, "
    "automations `automations:*`, forms `forms:*`, webhooks `webhooks:*`, sending "
    "`campaigns:*` (`:read` to capture, `:write` to apply); 403 names the first missing."
)


async def _context(
    request: Request, session: Session, principal: Principal = authenticated()
) -> Context:
    """Any valid key: each operation checks the permissions of the parts it touches."""
    return Context(session, principal, get_settings_dep(request))


async def _reader(ctx: Annotated[Context, Depends(_context)]) -> Context:
    service.check_any_read(ctx)
    return ctx


Caller = Annotated[Context, Depends(_context)]
Reader = Annotated[Context, Depends(_reader)]


@router.get(
    "",
    response_model=BlueprintList,
    summary="List blueprints",
    description="The account's blueprints (every workspace of the account sees them), newest "
    "first. Needs the read permission of any one part.",
    responses=errors(400, 403),
)
async def list_blueprints(ctx: Reader, paging: Paging) -> dict[str, Any]:
    found, total = await service.list_blueprints(ctx, paging)
    return {
        "blueprints": [service.as_dict(b) for b in found],
        "pagination": Pagination.of(paging, total),
    }


@router.post(
    "",
    status_code=201,
    response_model=BlueprintEnvelope,
    summary="Capture a blueprint",
    description="Captures the key's workspace's set-up (`include`: the parts, default all) as "
    "a document that names everything, never an id. " + PERMISSIONS_NOTE,
    responses=errors(400, 403),
)
async def capture_blueprint(body: BlueprintCreate, request: Request, ctx: Caller) -> dict[str, Any]:
    blueprint = await service.capture(ctx, body.model_dump(exclude_unset=True))
    set_audit_target(request, blueprint.id)
    return {"blueprint": service.as_dict(blueprint)}


@router.post(
    "/import",
    status_code=201,
    response_model=BlueprintEnvelope,
    summary="Import a blueprint document",
    description='The body is a document, `{"mailroom_blueprint": 1, "name", "description"?, '
    '"parts": {...}}` (as `GET /blueprints/{id}/document` answers). 400 naming the path of '
    "the first problem: an unknown version or part, an object without its name, two objects "
    "of one name, a name referred to that the document does not hold. Needs the read "
    "permission of each part it holds.",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    },
    responses=errors(400, 403),
)
async def import_blueprint(request: Request, ctx: Caller) -> dict[str, Any]:
    try:
        raw = await request.json()
    except (ValueError, RecursionError):  # RecursionError: nested past Python's stack
        raise ApiError(400, "Invalid JSON in request body") from None
    blueprint = await service.import_document(ctx, raw)
    set_audit_target(request, blueprint.id)
    return {"blueprint": service.as_dict(blueprint)}


@router.get(
    "/{id}",
    response_model=BlueprintEnvelope,
    summary="Get a blueprint",
    responses=errors(403, 404),
)
async def get_blueprint(id: str, ctx: Reader) -> dict[str, Any]:
    return {"blueprint": service.as_dict(await service.get_blueprint(ctx, id))}


@router.get(
    "/{id}/document",
    summary="Download a blueprint's document",
    description="The plain JSON document: every object as the API's create body for it, "
    "each id replaced by the name of what it refers to. Webhook endpoints carry no secret.",
    response_model=dict[str, Any],
    responses=errors(403, 404),
)
async def blueprint_document(id: str, ctx: Reader) -> dict[str, Any]:
    document: dict[str, Any] = (await service.get_blueprint(ctx, id)).document
    return document


@router.patch(
    "/{id}",
    response_model=BlueprintEnvelope,
    summary="Rename a blueprint",
    description="`name` and `description`; the parts are what was captured or imported.",
    responses=errors(400, 403, 404),
)
async def update_blueprint(id: str, body: BlueprintUpdate, ctx: Reader) -> dict[str, Any]:
    blueprint = await service.update_blueprint(ctx, id, body.model_dump(exclude_unset=True))
    return {"blueprint": service.as_dict(blueprint)}


@router.delete(
    "/{id}",
    response_model=BlueprintDeleted,
    summary="Delete a blueprint",
    responses=errors(403, 404),
)
async def delete_blueprint(id: str, ctx: Reader) -> dict[str, Any]:
    await service.delete_blueprint(ctx, id)
    return {"success": True, "id": id}


@router.post(
    "/{id}/apply",
    response_model=BlueprintApplied,
    response_model_exclude_none=True,
    summary="Apply a blueprint to this workspace",
    description="The plan, one row per object: `create`, `unchanged`, `update` or `skip` (an "
    "object of that name exists with other content; `on_conflict` decides, default `skip`), "
    "or `conflict` (cannot be reconciled, with the reason). `dry_run` (default true) changes "
    "nothing. A real apply is all or nothing; one whose plan has a conflict is 409 `{error, "
    "plan}` and changes nothing; applying twice gives all `unchanged`. " + PERMISSIONS_NOTE,
    responses=errors(400, 403, 404, 409),
)
async def apply_blueprint(
    id: str, body: BlueprintApply, request: Request, ctx: Reader
) -> dict[str, Any]:
    document = await service.read_document(get_db(request), ctx, id)
    return await service.apply_blueprint(ctx, id, body.model_dump(exclude_unset=True), document)
