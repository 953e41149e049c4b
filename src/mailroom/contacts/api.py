from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request

from mailroom.contacts import bulk, exporter, importer, service
from mailroom.contacts.query import parse_filter
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
from mailroom.core.auth import Principal, require
from mailroom.core.context import Context
from mailroom.core.pagination import Pagination
from mailroom.web.deps import Paging, set_audit_target, use
from mailroom.web.downloads import csv_download
from mailroom.web.openapi import errors
from mailroom.web.uploads import read_upload

router = APIRouter(prefix="/api/v1/contacts", tags=["Contacts"])


@router.get(
    "",
    response_model=ContactList,
    summary="List contacts",
    description="Newest first by default. Archived contacts are left out unless "
    "`status=archived`. Filters combine (all must hold).",
    responses=errors(400),
)
async def list_contacts(
    ctx: Annotated[Context, use("contacts:read")],
    paging: Paging,
    sort: Annotated[
        str | None, Query(description="created (default), name, email or status.")
    ] = None,
    dir: Annotated[
        str | None, Query(description="asc or desc; default desc for created, else asc.")
    ] = None,
    q: Annotated[
        str | None, Query(description="Case-insensitive substring of email, first or last name.")
    ] = None,
    status: Annotated[str | None, Query(description="A contact status.")] = None,
    tag: Annotated[str | None, Query(description="Tag id.")] = None,
    list: Annotated[str | None, Query(description="List id (with tag, both must hold).")] = None,
    source: Annotated[
        str | None, Query(description="Exact source, e.g. form, import, api.")
    ] = None,
    date_from: Annotated[
        str | None, Query(alias="from", description="YYYY-MM-DD: added on or after.")
    ] = None,
    date_to: Annotated[
        str | None, Query(alias="to", description="YYYY-MM-DD: added on or before (whole day).")
    ] = None,
) -> dict[str, Any]:
    f = parse_filter(
        {
            "q": q,
            "status": status,
            "tag": tag,
            "list": list,
            "source": source,
            "from": date_from,
            "to": date_to,
        }
    )
    rows, total = await service.list_contacts(ctx, f, paging, sort, dir)
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
    "`status=archived`), streamed. Columns: email, first_name, last_name, status, source, "
    "language, tags, lists, created_at, subscribed_at, unsubscribed_at, then `custom.<key>` per "
    "custom field in use. Every cell is quoted; a cell starting with =, +, - or @ gets a "
    "leading single quote.",
    responses={
        200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "CSV"},
        **errors(400),
    },
)
async def export_contacts(
    request: Request,
    principal: Annotated[Principal, require("contacts:export")],
    q: Annotated[str | None, Query(description="Substring of email or name.")] = None,
    status: Annotated[str | None, Query(description="A contact status.")] = None,
    tag: Annotated[str | None, Query(description="Tag id.")] = None,
    list: Annotated[str | None, Query(description="List id.")] = None,
    source: Annotated[str | None, Query(description="Exact source.")] = None,
    date_from: Annotated[str | None, Query(alias="from", description="YYYY-MM-DD.")] = None,
    date_to: Annotated[str | None, Query(alias="to", description="YYYY-MM-DD.")] = None,
) -> Any:
    f = parse_filter(
        {
            "q": q,
            "status": status,
            "tag": tag,
            "list": list,
            "source": source,
            "from": date_from,
            "to": date_to,
        }
    )
    return csv_download(
        request, principal, "contacts.csv", lambda ctx: exporter.export_filtered(ctx, f)
    )


@router.post(
    "/bulk",
    summary="Act on many contacts",
    description="One action (`unsubscribe`, `archive`, `restore`, `delete`, `erase`, `add_tag`, "
    "`remove_tag`, `add_to_list`, `remove_from_list`, `export`) over `contact_ids` or a `filter` "
    "(the list query's keys; up to 50,000 contacts, archived only with status archived). All of "
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
    parsed = bulk.parse_request(body.model_dump(exclude_unset=True), ctx.principal)
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
    "rows are written in one transaction or none.",
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
