from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from mailroom.automations import service
from mailroom.automations.schemas import (
    RUN_STATUS,
    STEPS_TEXT,
    AutomationCreate,
    AutomationDeleted,
    AutomationEnvelope,
    AutomationList,
    AutomationUpdate,
    EnrolBody,
    Enrolled,
    RunList,
)
from mailroom.core.context import Context
from mailroom.core.loose import Doc, choice
from mailroom.core.pagination import Pagination
from mailroom.models import AUTOMATION_STATUSES
from mailroom.web.deps import Paging, set_audit_target, use
from mailroom.web.openapi import errors

router = APIRouter(prefix="/api/v1/automations", tags=["Automations"])

CAP = "Your plan allows <n> live automations across your workspaces. Pause one or upgrade."


async def _one(ctx: Context, automation: Any) -> dict[str, Any]:
    stats = await service.stats_of(ctx, [automation.id])
    return {"automation": service.as_dict(automation, stats[automation.id])}


@router.get(
    "",
    response_model=AutomationList,
    summary="List automations",
    description="Newest first, with each one's run statistics.",
    responses=errors(400),
)
async def list_automations(
    ctx: Annotated[Context, use("automations:read")],
    paging: Paging,
    q: Annotated[str | None, Query(description="Case-insensitive substring of the name.")] = None,
    status: Annotated[
        str | None, Query(description="Only this status."), Doc(choice(*AUTOMATION_STATUSES))
    ] = None,
) -> dict[str, Any]:
    rows, total = await service.list_automations(ctx, paging, q, status)
    stats = await service.stats_of(ctx, [a.id for a in rows])
    return {
        "automations": [service.as_dict(a, stats[a.id]) for a in rows],
        "pagination": Pagination.of(paging, total),
    }


@router.post(
    "",
    status_code=201,
    response_model=AutomationEnvelope,
    summary="Create an automation",
    description=f"Created as a `draft`: activate it to start enrolling. {STEPS_TEXT}",
    responses=errors(400, 409, e409="An automation with this name already exists"),
)
async def create_automation(
    body: AutomationCreate, request: Request, ctx: Annotated[Context, use("automations:write")]
) -> dict[str, Any]:
    automation = await service.create_automation(ctx, body.model_dump(exclude_unset=True))
    set_audit_target(request, automation.id)
    return await _one(ctx, automation)


@router.get(
    "/{id}", response_model=AutomationEnvelope, summary="Get an automation", responses=errors(404)
)
async def get_automation(
    id: str, ctx: Annotated[Context, use("automations:read")]
) -> dict[str, Any]:
    return await _one(ctx, await service.get_automation(ctx, id))


@router.patch(
    "/{id}",
    response_model=AutomationEnvelope,
    summary="Change an automation",
    description="Also while active: runs stay on their step (by id); a run whose step was "
    f"removed exits when it next moves. {STEPS_TEXT}",
    responses=errors(400, 404, 409),
)
async def update_automation(
    id: str, body: AutomationUpdate, ctx: Annotated[Context, use("automations:write")]
) -> dict[str, Any]:
    automation = await service.update_automation(ctx, id, body.model_dump(exclude_unset=True))
    return await _one(ctx, automation)


@router.delete(
    "/{id}",
    response_model=AutomationDeleted,
    summary="Delete an automation",
    description="With its runs; emails already queued still go.",
    responses=errors(404),
)
async def delete_automation(
    id: str, ctx: Annotated[Context, use("automations:write")]
) -> dict[str, Any]:
    await service.delete_automation(ctx, id)
    return {"success": True, "id": id}


@router.post(
    "/{id}/activate",
    response_model=AutomationEnvelope,
    summary="Activate an automation",
    description="Enrols from now on and runs its steps. Counts against the plan's live "
    f"automations per workspace: over it, 403 `{CAP}`. 409 when it has no step yet.",
    responses=errors(403, 404, 409),
)
async def activate_automation(
    id: str, ctx: Annotated[Context, use("automations:write")]
) -> dict[str, Any]:
    return await _one(ctx, await service.activate(ctx, id))


@router.post(
    "/{id}/pause",
    response_model=AutomationEnvelope,
    summary="Pause an automation",
    description="No new enrolments, no steps run; runs keep their place until it is "
    "activated again.",
    responses=errors(404),
)
async def pause_automation(
    id: str, ctx: Annotated[Context, use("automations:write")]
) -> dict[str, Any]:
    return await _one(ctx, await service.pause(ctx, id))


@router.post(
    "/{id}/enrol",
    response_model=Enrolled,
    summary="Enrol contacts",
    description="For a `manual` automation that is active: the given contacts (up to 1,000 "
    "ids) or every contact a segment matches. Only subscribed contacts enter, once at a time. "
    "409 for an automation that is not active or not `manual`.",
    responses=errors(400, 404, 409),
)
async def enrol_contacts(
    id: str, body: EnrolBody, ctx: Annotated[Context, use("automations:write")]
) -> dict[str, Any]:
    started = await service.enrol_manually(ctx, id, body.model_dump(exclude_unset=True))
    return {"enrolled": started}


@router.get(
    "/{id}/runs",
    response_model=RunList,
    summary="List an automation's runs",
    description="Newest first: each contact's place (`step_id`), state, next moment and "
    "history. A run whose contact is gone or no longer subscribed shows `exited`.",
    responses=errors(400, 404),
)
async def list_runs(
    id: str,
    ctx: Annotated[Context, use("automations:read")],
    paging: Paging,
    status: Annotated[str | None, Query(description="Only this state."), Doc(RUN_STATUS)] = None,
) -> dict[str, Any]:
    rows, total = await service.runs(ctx, id, paging, status)
    return {"runs": rows, "pagination": Pagination.of(paging, total)}
