from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request

from mailroom.contacts import bulk, exporter, importer, service
from mailroom.contacts.query import SORTS, ContactFilter, parse_filter
from mailroom.contacts.schemas import (
    IMPORT_BODY,
    BulkBody,
    BulkResult,
    ContactCreate,
    ContactEnvelope,
    ContactList,
    ContactUpdate,
    ContactUpdated,
    DeleteResult,
)
from mailroom.core.context import Context
from mailroom.core.loose import DAY, Doc, choice
from mailroom.core.pagination import Pagination
from mailroom.models import CONTACT_STATUSES
from mailroom.segments import service as segments
from mailroom.web.deps import Paging, set_audit_target, use
from mailroom.web.downloads import csv_download
from mailroom.web.openapi import errors
from mailroom.web.uploads import read_upload

router = APIRouter(prefix="/api/v1/contacts", tags=["Contacts"])

SEGMENT_TEXT = (
    "Segment id: only contacts its rule matches. The rule decides which statuses appear "
    "(archived included unless it or `status` says otherwise). 404 `Segment not found` for "
    "an id that is not this workspace's."
)


def filter_query(
    q: Annotated[
        str | None, Query(description="Case-insensitive substring of email, first or last name.")
    ] = None,
    status: Annotated[
        str | None,
        Query(description="A contact status; archived contacts only appear with `archived`."),
        Doc(choice(*CONTACT_STATUSES)),
    ] = None,
    tag: Annotated[str | None, Query(description="Tag id.")] = None,
    list: Annotated[str | None, Query(description="List id (with tag, both must hold).")] = None,
    source: Annotated[
        str | None, Query(description="Exact source, e.g. form, import, api.")
    ] = None,
    date_from: Annotated[
        str | None,
        Query(
            alias="from",
            description="Added on or after (YYYY-MM-DD); any other value is ignored.",
        ),
        Doc(DAY),
    ] = None,
    date_to: Annotated[
        str | None,
        Query(
            alias="to",
            description="Added on or before, the whole day (YYYY-MM-DD); any other value "
            "is ignored.",
        ),
        Doc(DAY),
    ] = None,
    segment: Annotated[str | None, Query(description=SEGMENT_TEXT)] = None,
) -> ContactFilter:
    """The list query's filter, shared by listing and export (its segment is resolved by the
    route, which has the unit of work: `segments.narrow`)."""
    return parse_filter(
        {
            "q": q,
            "status": status,
            "tag": tag,
            "list": list,
            "source": source,
            "from": date_from,
            "to": date_to,
            "segment": segment,
        }
    )


@router.get(
    "",
    response_model=ContactList,
    summary="List contacts",
    description="Newest first by default. Archived contacts are left out unless "
    "`status=archived` (or a `segment` whose rule takes them). Filters combine (all must "
    "hold).",
    responses=errors(400, 404, e404="Segment not found"),
)
async def list_contacts(
    ctx: Annotated[Context, use("contacts:read")],
    paging: Paging,
    contact_filter: Annotated[ContactFilter, Depends(filter_query)],
    sort: Annotated[
        str | None,
        Query(description="created (default), name (first then last), email or status."),
        Doc(choice(*SORTS)),
    ] = None,
    dir: Annotated[
        str | None,
        Query(description="asc or desc; default desc for created, else asc."),
        Doc(choice("asc", "desc")),
    ] = None,
) -> dict[str, Any]:
    contact_filter = await segments.narrow(ctx, contact_filter)
    rows, total = await service.list_contacts(ctx, contact_filter, paging, sort, dir)
    return {"contacts": rows, "pagination": Pagination.of(paging, total)}


@router.post(
    "",
    status_code=201,
    response_model=ContactEnvelope,
    summary="Create a contact",
    description="Creates a `subscribed` contact (counts toward the plan's contact cap). An "
    "address suppressed as `unsubscribed` needs `resubscribe: true`; bounced, complained and "
    "deleted addresses are refused (409).",
    responses=errors(400, 403, 409),
)
async def create_contact(
    body: ContactCreate, request: Request, ctx: Annotated[Context, use("contacts:write")]
) -> dict[str, Any]:
    contact = await service.create_contact(ctx, body.model_dump(exclude_unset=True))
    set_audit_target(request, contact.id)
    return {"contact": await service.describe(ctx, contact)}


@router.get(
    "/export",
    summary="Export contacts as CSV",
    description="Every contact the filters match (no page limit; archived only with "
    "`status=archived` or a `segment` whose rule takes them), streamed. Columns: email, first_name, last_name, status, source, "
    "language, tags, lists, created_at, subscribed_at, unsubscribed_at, then `custom.<key>` per "
    "custom field in use. Every cell is quoted; a cell starting with =, +, - or @ gets a "
    "leading single quote.",
    responses={
        200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "CSV"},
        **errors(400, 404, e404="Segment not found"),
    },
)
async def export_contacts(
    request: Request,
    ctx: Annotated[Context, use("contacts:export")],
    contact_filter: Annotated[ContactFilter, Depends(filter_query)],
) -> Any:
    # Resolved here, before the first byte: an unknown segment is a 404, not a broken CSV.
    contact_filter = await segments.narrow(ctx, contact_filter)
    return csv_download(
        request,
        ctx.principal,
        "contacts.csv",
        lambda ctx: exporter.export_filtered(ctx, contact_filter),
    )


@router.post(
    "/bulk",
    summary="Act on many contacts",
    description="One action (`unsubscribe`, `archive`, `restore`, `delete`, `erase`, `add_tag`, "
    "`remove_tag`, `add_to_list`, `remove_from_list`, `export`) over `contact_ids` or a `filter` "
    "(the list query's keys, `segment` included; up to 50,000 contacts, archived only with "
    "status archived or a segment whose rule takes them). All of "
    "it happens in one transaction, or none. `export` answers a CSV and needs `contacts:export`.",
    response_model=BulkResult,
    response_model_exclude_none=True,
    responses={
        200: {"content": {"text/csv": {"schema": {"type": "string"}}}},
        **errors(400, 403, 404, 500),
    },
)
async def bulk_contacts(
    body: BulkBody, request: Request, ctx: Annotated[Context, use("contacts:write")]
) -> Any:
    parsed = await bulk.resolve_segment(
        ctx, bulk.parse_request(body.model_dump(exclude_unset=True), ctx.principal)
    )
    if parsed.action != "export":
        return await bulk.run(ctx, parsed)
    await bulk.check_export(ctx, parsed)
    return csv_download(
        request,
        ctx.principal,
        "contacts-export.csv",
        lambda c: exporter.export_selected(c, parsed.contact_ids, parsed.filter, bulk.MAX_CONTACTS),
    )


@router.post(
    "/import",
    summary="Import contacts from CSV",
    description="multipart/form-data with a UTF-8 CSV `file` (5 MB, about 50,000 rows; comma, "
    "semicolon or tab detected from the header). Headers are matched case-insensitively with "
    "aliases (e.g. `Email Address`); other columns become custom fields. Options: "
    "`default_status`, `source`, `skip_duplicates` (default true), `run_automations`, "
    "`check_domains`, `tags`, `list_id`, `mapping`, `new_fields`. The import is atomic: all "
    "rows are written in one transaction or none. Limits: 5 MB and 50,000 rows (413 past "
    "either); at most 1,000 distinct addresses or domains in an unusual form (non-ASCII or odd "
    "punctuation) per file (400 past that: split the file).",
    openapi_extra={"requestBody": IMPORT_BODY},
    responses=errors(400, 403, 404, 409, 413, 422, 500),
)
async def import_contacts(
    request: Request, ctx: Annotated[Context, use("contacts:write")]
) -> dict[str, Any]:
    upload = await read_upload(request, max_bytes=importer.MAX_BYTES, too_large=importer.TOO_LARGE)
    options = importer.parse_options(upload.fields)
    report = await importer.run_import(ctx, upload.content, options)
    return report.as_dict()


@router.get(
    "/{id}",
    response_model=ContactEnvelope,
    summary="Get a contact",
    description="The contact with its tags.",
    responses=errors(404),
)
async def get_contact(id: str, ctx: Annotated[Context, use("contacts:read")]) -> dict[str, Any]:
    contact = await service.get_contact(ctx, id)
    return {"contact": await service.describe(ctx, contact)}


@router.patch(
    "/{id}",
    response_model=ContactUpdated,
    response_model_exclude_unset=True,
    summary="Update a contact",
    description="Change fields and status. `custom_fields` merges (null removes a key) unless "
    "`replace_custom_fields: true`. `suppress: true` (with status unsubscribed) also blocks the "
    "address; `resubscribe: true` returns an unsubscribed contact with fresh consent.",
    responses=errors(400, 403, 404, 409),
)
async def update_contact(
    id: str, body: ContactUpdate, ctx: Annotated[Context, use("contacts:write")]
) -> dict[str, Any]:
    result = await service.update_contact(ctx, id, body.model_dump(exclude_unset=True))
    answer: dict[str, Any] = {"contact": await service.describe(ctx, result.contact)}
    if result.suppressed is not None:
        answer["suppressed"] = result.suppressed
    return answer


@router.delete(
    "/{id}",
    response_model=DeleteResult,
    summary="Delete a contact",
    description="`mode=delete` (default): the row is removed and the address suppressed as "
    "`deleted` (masked form kept; liftable). `mode=erase`: the suppression row keeps only the "
    "hash and can never be lifted.",
    responses=errors(400, 404),
)
async def delete_contact(
    id: str,
    ctx: Annotated[Context, use("contacts:write")],
    mode: Annotated[Literal["delete", "erase"], Query(description="delete or erase.")] = "delete",
) -> dict[str, Any]:
    await service.delete_contact(ctx, id, mode)
    return {"success": True, "id": id, "mode": mode}
