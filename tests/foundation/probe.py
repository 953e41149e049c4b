"""A router of probe operations mounted only in tests: real dependencies (keys, permissions,
unit of work, audit, write limit) on routes whose own behaviour is trivial."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from mailroom.core.auth import Principal
from mailroom.core.errors import ApiError
from mailroom.core.route_auth import require
from mailroom.models import Job
from mailroom.web.deps import Session, set_audit_target

router = APIRouter(prefix="/api/v1/probe")


class ProbeBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(max_length=10)
    flag: StrictBool = False
    count: int = 0


@router.post("/jobs", status_code=201)
async def create_probe(
    body: ProbeBody,
    request: Request,
    session: Session,
    principal: Annotated[Principal, require("contacts:write")],
) -> dict[str, str]:
    job = Job(kind="probe", workspace_id=principal.workspace_id, payload={"name": body.name})
    session.add(job)
    await session.flush()
    set_audit_target(request, job.id)
    if body.name == "boom":
        raise ApiError(409, "Probe conflict")
    return {"id": job.id}


@router.delete("/jobs/{id}")
async def delete_probe(
    id: str, principal: Annotated[Principal, require("contacts:write")]
) -> dict[str, bool]:
    return {"ok": True}


@router.get("/export")
async def probe_export(
    principal: Annotated[Principal, require("contacts:export")],
) -> dict[str, bool]:
    return {"ok": True}


@router.get("/forms")
async def probe_forms(principal: Annotated[Principal, require("forms:write")]) -> dict[str, bool]:
    return {"ok": True}


@router.get("/contacts")
async def probe_read(principal: Annotated[Principal, require("contacts:read")]) -> dict[str, str]:
    return {"workspace_id": principal.workspace_id}
