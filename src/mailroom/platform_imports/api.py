from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Request

from mailroom.contacts.importer import MAX_BYTES
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import Pagination
from mailroom.platform_imports import service
from mailroom.platform_imports.schemas import (
    IMPORT_BODY,
    PlatformImportEnvelope,
    PlatformImportList,
)
from mailroom.web.deps import Paging, set_audit_target, use
from mailroom.web.openapi import errors
from mailroom.web.uploads import is_multipart, read_upload

router = APIRouter(prefix="/api/v1/imports", tags=["Platform imports"])

Read = Annotated[Context, use("contacts:read")]
Write = Annotated[Context, use("contacts:write")]


@router.post(
    "",
    status_code=202,
    response_model=PlatformImportEnvelope,
    summary="Import from another email platform",
    description="Starts a job that moves a Mailchimp, listmonk, Brevo, Kit or Mautic audience "
    "into this workspace: multipart `platform` + `file` (the platform's own export: a CSV, or "
    "Mailchimp's .zip of subscribed / unsubscribed / cleaned files), or JSON `{platform, api}` "
    "to pull it from Mailchimp's Marketing API (`{key, list_id?}`) or listmonk's "
    "(`{url, username, token, list_ids?}`). Needs `contacts:write`, `lists:write` and "
    "`tags:write`. Statuses map with the suppression rules (who left is suppressed and never "
    "mailed; an address suppressed here stays so); fields become custom fields with inferred "
    "types, tags tags, lists lists; consent (opt-in time and IP) is kept. `dry_run: true` "
    "counts without writing. Follow the job with `GET /api/v1/imports/{id}`. Refused before "
    "any job: an unknown platform (400), a file that is not that platform's export (422), over "
    "the limits (413), an archive entry outside the archive (400), an API URL the outbound "
    "guard refuses (400). Wrong API credentials end the job `failed` with the platform's "
    "reason.",
    openapi_extra={"requestBody": IMPORT_BODY},
    responses=errors(400, 403, 404, 413, 422),
)
async def start_platform_import(request: Request, ctx: Write) -> dict[str, Any]:
    if is_multipart(request):
        upload = await read_upload(request, max_bytes=MAX_BYTES, too_large=service.TOO_LARGE)
        job = await service.start_file_import(
            ctx, filename=upload.filename, content=upload.content, fields=upload.fields
        )
    else:
        try:
            body = orjson.loads(await request.body())
        except orjson.JSONDecodeError:
            raise ApiError(
                400, "Expected multipart/form-data with a `file` field, or a JSON body"
            ) from None
        job = await service.start_api_import(ctx, body)
    set_audit_target(request, job.id)
    return {"import": service.as_dict(job)}


@router.get(
    "",
    response_model=PlatformImportList,
    summary="List platform imports",
    description="The workspace's imports from other platforms, newest first.",
    responses=errors(400),
)
async def list_platform_imports(ctx: Read, paging: Paging) -> dict[str, Any]:
    jobs, total = await service.list_imports(ctx, paging)
    return {
        "imports": [service.as_dict(job) for job in jobs],
        "pagination": Pagination.of(paging, total),
    }


@router.get(
    "/{id}",
    response_model=PlatformImportEnvelope,
    summary="Get a platform import",
    description="Its status (`queued`, `running`, `done`, `failed`), progress and, once done, "
    "the result.",
    responses=errors(404),
)
async def get_platform_import(id: str, ctx: Read) -> dict[str, Any]:
    return {"import": service.as_dict(await service.get_import(ctx, id))}
