from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from mailroom.core.auth import Principal
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.loose import Doc, choice
from mailroom.core.pagination import Pagination
from mailroom.core.route_auth import require
from mailroom.suppressions import exporter, importer, service
from mailroom.suppressions.schemas import (
    EMAIL,
    IMPORT_BODY,
    AddressCheck,
    LiftRequest,
    LiftResult,
    SuppressionImportResult,
    SuppressionPage,
    SuppressionSummary,
)
from mailroom.web.deps import Paging, use
from mailroom.web.downloads import csv_download
from mailroom.web.openapi import errors
from mailroom.web.uploads import is_multipart, read_upload

router = APIRouter(prefix="/api/v1/suppressions", tags=["Suppressions"])


@router.get(
    "",
    response_model=SuppressionSummary | AddressCheck,
    summary="Suppression totals, or check one address",
    description="Without parameters: `{count, by_reason}`. With `email`: whether that address is "
    "suppressed, its reason and when it was added.",
    responses=errors(400),
)
async def get_suppressions(
    ctx: Annotated[Context, use("contacts:read")],
    email: Annotated[
        str | None,
        Query(description="Address to check (case and spaces ignored)."),
        Doc(EMAIL),
    ] = None,
) -> dict[str, Any]:
    if email is not None:
        return await service.check_address(ctx, email)
    return await service.summary(ctx)


@router.post(
    "",
    response_model=SuppressionImportResult,
    summary="Add addresses to the suppression list",
    description="JSON `{reason?, entries}` (1-5,000 strings or `{email, reason}` objects) or "
    "multipart with a CSV `file`. A stronger reason replaces a weaker one, never the reverse; "
    "subscribed contacts with these addresses take the imported status; no contact is created. "
    "Work is committed in batches of 200: after a failure part-way, repeating is safe. "
    "`received = added + upgraded + unchanged + invalid`. A CSV is limited to 5 MB and 50,000 "
    "rows (413); at most 1,000 distinct addresses or domains in an unusual form (non-ASCII or "
    "odd punctuation) per request (400).",
    openapi_extra={"requestBody": IMPORT_BODY},
    responses=errors(400, 413, 422, 500),
)
async def import_suppressions(
    request: Request, ctx: Annotated[Context, use("contacts:write")]
) -> dict[str, Any]:
    if is_multipart(request):
        upload = await read_upload(
            request, max_bytes=importer.MAX_CSV_BYTES, too_large=importer.CSV_TOO_LARGE
        )
        fallback = importer.default_reason(upload.fields.get("reason"))
        # Decoding and splitting up to 50,000 rows is CPU work: off the event loop.
        pairs = await asyncio.to_thread(importer.entries_from_csv, upload.content)
    else:
        try:
            body = json.loads(await request.body() or b"null")
        except ValueError:
            raise ApiError(400, "Invalid JSON in request body") from None
        pairs, fallback = importer.entries_from_json(body)
    counts = await importer.import_entries(ctx, pairs, fallback)
    return counts.as_dict()


@router.get(
    "/list",
    response_model=SuppressionPage,
    summary="List suppressed addresses",
    description="Newest first. Each row has the hash, reason, masked address and domain, the "
    "contact still carrying the address (the only place a full address appears) and whether "
    "it can be lifted.",
    responses=errors(400),
)
async def list_suppressions(
    ctx: Annotated[Context, use("contacts:read")],
    paging: Paging,
    reason: Annotated[
        str | None,
        Query(description="unsubscribed, bounced, complained or deleted."),
        Doc(choice(*service.REASONS)),
    ] = None,
    domain: Annotated[
        str | None, Query(description="Case-insensitive substring of the domain.")
    ] = None,
) -> dict[str, Any]:
    chosen = service.parse_reason_filter(reason)
    views, total = await service.list_page(
        ctx, reason=chosen, domain=domain, offset=paging.offset, limit=paging.limit
    )
    return {
        "suppressions": [view.as_dict() for view in views],
        "pagination": Pagination.of(paging, total),
        "details_available": True,
    }


@router.get(
    "/export",
    summary="Export the suppression list as CSV",
    description="Columns email (only where a contact row carries it), email_masked, domain, "
    "reason, source, added_at, contact_id; newest first; every cell quoted and formula-safe.",
    responses={
        200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "CSV"},
        **errors(400),
    },
)
async def export_suppressions(
    request: Request,
    principal: Annotated[Principal, require("contacts:export")],
    reason: Annotated[
        str | None,
        Query(description="unsubscribed, bounced, complained or deleted."),
        Doc(choice(*service.REASONS)),
    ] = None,
    domain: Annotated[str | None, Query(description="Substring of the domain.")] = None,
) -> Any:
    chosen = service.parse_reason_filter(reason)
    return csv_download(
        request,
        principal,
        exporter.filename(chosen),
        lambda ctx: exporter.export_csv(ctx, chosen, domain),
    )


@router.post(
    "/lift",
    response_model=LiftResult,
    summary="Lift a suppression",
    description="Only a row written by a plain contact delete can be lifted. Bounces and "
    "complaints are permanent, an unsubscribe needs new consent (resubscribe), an erasure is "
    "final: those are 409 with `reason`.",
    responses=errors(400, 404, 409),
)
async def lift_suppression(
    body: LiftRequest, ctx: Annotated[Context, use("contacts:write")]
) -> dict[str, Any]:
    reason = await service.lift(ctx, email=body.email, email_hash=body.email_hash)
    return {"lifted": True, "reason": reason}
