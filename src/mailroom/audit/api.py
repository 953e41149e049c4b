from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from mailroom.audit import service
from mailroom.audit.schemas import AuditEntryOut, AuditLogPage
from mailroom.core.auth import Principal
from mailroom.core.loose import Doc, text
from mailroom.core.route_auth import require
from mailroom.web.deps import Session
from mailroom.web.openapi import errors

router = APIRouter(prefix="/api/v1/account", tags=["Audit log"])


@router.get(
    "/audit-log",
    response_model=AuditLogPage,
    summary="List the audit log",
    description="Every authenticated write of this workspace (who: `key_id`, or `person_id` "
    "for the dashboard, or `assistant_id` with the `person_id` it acts for; operation, "
    "target, HTTP status, time), newest first, kept for 12 months. Cursor-paged: pass the "
    "returned `next_cursor` as `cursor` for the next page; it is null on the last page.",
    responses=errors(400),
)
async def list_audit_log(
    session: Session,
    principal: Annotated[Principal, require("audit:read")],
    cursor: Annotated[
        str | None,
        Query(description="`next_cursor` of the previous page."),
        Doc(text(pattern=service.CURSOR_PATTERN)),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=100, description="Entries per page, 1-100.")] = 50,
) -> AuditLogPage:
    page = await service.list_entries(session, principal, cursor=cursor, limit=limit)
    return AuditLogPage(
        entries=[AuditEntryOut.model_validate(e) for e in page.entries],
        next_cursor=page.next_cursor,
    )
