"""Starting and reading imports from other platforms (`/api/v1/imports`, the dashboard, the CLI).

Everything a client can get wrong is refused here, before any job exists: the platform, the
upload (read in full in a worker thread: not that platform's export, over the limits, a path
outside the archive, more unusual addresses than the check takes), the list to import into,
the API details (a key without its data centre, a listmonk URL the guard refuses). The job then
does the rest (runner.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import func, select

from mailroom.contacts.importer import flag
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.ids import new_id
from mailroom.core.pagination import PageParams
from mailroom.lists import service as lists_service
from mailroom.models import PlatformImport
from mailroom.platform_imports import entries, stored
from mailroom.platform_imports.formats import read_export
from mailroom.platform_imports.pull_listmonk import check_listmonk_url
from mailroom.platform_imports.pull_mailchimp import mailchimp_base_url
from mailroom.platform_imports.records import BAD_PLATFORM, PLATFORMS
from mailroom.webhooks.service import allowed_networks

API_PLATFORMS = ("mailchimp", "listmonk")
PERMISSIONS = ("contacts:write", "lists:write", "tags:write")
NOT_FOUND = "Import not found"
TOO_LARGE = "File too large: uploads are limited to 5 MB (a CSV, or a .zip of the export's files)"
NO_API = "api must be an object: {key, list_id?} for mailchimp, {url, username, token, list_ids?} for listmonk"
NO_PULL = "platform {platform} has no API pull here: upload its export file instead"
NOTHING_TO_IMPORT = "No contacts to import: every row of the export was skipped"
NO_ROWS = "No contacts to import: the export has no rows"
BAD_LIST_IDS = "api.list_ids must be an array of listmonk list ids (whole numbers)"
BAD_AUDIENCE = "api.list_id must be a Mailchimp audience id (a string)"
REQUIRED = "api.{name} is required"
UNKNOWN_API_FIELD = "api.{name} is not a field of a {platform} pull"
API_FIELDS = {"mailchimp": ("key", "list_id"), "listmonk": ("url", "username", "token", "list_ids")}


def check_permissions(ctx: Context) -> None:
    """An import writes contacts, lists and tags: 403 without any of the three."""
    for permission in PERMISSIONS:
        ctx.principal.check(permission)


def _platform(value: Any) -> str:
    if not isinstance(value, str) or value.strip().lower() not in PLATFORMS:
        raise ApiError(400, BAD_PLATFORM)
    return value.strip().lower()


async def _options(
    ctx: Context, list_id: Any, dry_run: bool, check_domains: bool
) -> dict[str, Any]:
    if list_id is not None and not isinstance(list_id, str):
        raise ApiError(400, "list_id must be a string")
    options: dict[str, Any] = {"dry_run": dry_run, "check_domains": check_domains}
    if list_id and list_id.strip():
        options["list_id"] = (await lists_service.get_list(ctx, list_id.strip())).id
    return options


def read_upload(platform: str, filename: str, content: bytes, key: bytes) -> tuple[bytes, int]:
    """The upload read and checked as the job will write it (CPU: call it in a thread).
    Returns the normalised export as the job keeps it (`stored.dump`: the job loads it instead
    of parsing the file again) and the number of contacts to write."""
    export = read_export(platform, filename, content)
    ready = entries.prepare(export, key=key, now=utcnow())
    if not ready.entries:
        message = NOTHING_TO_IMPORT if ready.skipped_total else NO_ROWS
        raise ApiError(422, message, skipped=ready.skipped[:20])
    return stored.dump(export), len(ready.entries)


async def start_file_import(
    ctx: Context, *, filename: str, content: bytes, fields: dict[str, str]
) -> PlatformImport:
    check_permissions(ctx)
    platform = _platform(fields.get("platform"))
    dry_run = flag(fields, "dry_run", False)
    check_domains = flag(fields, "check_domains", False)
    # The file first, in a thread, before the first statement: a 50,000-row archive takes
    # seconds of CPU, and no connection (on SQLite, no write lock) is held meanwhile.
    key = ctx.settings.resolved_secret_key.encode()
    kept, total = await asyncio.to_thread(read_upload, platform, filename, content, key)
    options = await _options(ctx, fields.get("list_id"), dry_run, check_domains)
    job = PlatformImport(
        id=new_id(),
        workspace_id=ctx.workspace_id,
        platform=platform,
        origin="file",
        filename=filename.replace("\x00", "")[-255:],
        options=options,
        upload=kept,
        progress_total=total,
    )
    ctx.session.add(job)
    await ctx.session.flush()
    return job


async def start_api_import(ctx: Context, body: Any) -> PlatformImport:
    """`{platform, api: {...}, list_id?, dry_run?, check_domains?}`; the credentials are kept
    sealed until the pull is done."""
    check_permissions(ctx)
    if not isinstance(body, dict):
        raise ApiError(400, "Request body must be a JSON object")
    platform = _platform(body.get("platform"))
    if platform not in API_PLATFORMS:
        raise ApiError(400, NO_PULL.format(platform=platform))
    api = body.get("api")
    if not isinstance(api, dict):
        raise ApiError(400, NO_API)
    for name in api:
        if name not in API_FIELDS[platform]:
            raise ApiError(400, UNKNOWN_API_FIELD.format(name=name, platform=platform))
    credentials = await _credentials(ctx, platform, api)
    options = await _options(
        ctx,
        body.get("list_id"),
        _json_flag(body, "dry_run"),
        _json_flag(body, "check_domains"),
    )
    job_id = new_id()
    options["api"] = stored.seal(ctx.settings.resolved_secret_key, job_id, credentials)
    job = PlatformImport(
        id=job_id,
        workspace_id=ctx.workspace_id,
        platform=platform,
        origin="api",
        options=options,
    )
    ctx.session.add(job)
    await ctx.session.flush()
    return job


def _json_flag(body: dict[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if not isinstance(value, bool):
        raise ApiError(400, f"{name} must be true or false")
    return value


def _text(api: dict[str, Any], name: str) -> str:
    value = api.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ApiError(400, REQUIRED.format(name=name))
    return value.strip()


async def _credentials(ctx: Context, platform: str, api: dict[str, Any]) -> dict[str, Any]:
    if platform == "mailchimp":
        key: Any = api.get("key")
        mailchimp_base_url(key, None)  # 400 without its data centre
        audience = api.get("list_id")
        if audience is not None and (not isinstance(audience, str) or not audience.strip()):
            raise ApiError(400, BAD_AUDIENCE)
        return {"key": str(key).strip(), "list_id": audience.strip() if audience else None}
    given: Any = api.get("url")
    url = await check_listmonk_url(given, allowed_networks(ctx))
    list_ids = _list_ids(api.get("list_ids"))
    return {
        "url": url,
        "username": _text(api, "username"),
        "token": _text(api, "token"),
        "list_ids": list_ids or [],
    }


def _list_ids(value: Any) -> list[int]:
    """listmonk list ids: whole numbers (JSON's 3.0 is 3), 1 to 2^31-1 (listmonk's int)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ApiError(400, BAD_LIST_IDS)
    found: list[int] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int | float) or item != int(item):
            raise ApiError(400, BAD_LIST_IDS)
        if not 1 <= item <= 2_147_483_647:
            raise ApiError(400, BAD_LIST_IDS)
        found.append(int(item))
    return found


async def get_import(ctx: Context, import_id: str) -> PlatformImport:
    found = await ctx.session.scalar(
        select(PlatformImport).where(
            PlatformImport.id == import_id, PlatformImport.workspace_id == ctx.workspace_id
        )
    )
    if found is None:
        raise ApiError(404, NOT_FOUND)
    return found


async def list_imports(ctx: Context, paging: PageParams) -> tuple[list[PlatformImport], int]:
    where = PlatformImport.workspace_id == ctx.workspace_id
    total = int(await ctx.session.scalar(select(func.count()).where(where)) or 0)
    rows = await ctx.session.scalars(
        select(PlatformImport)
        .where(where)
        .order_by(PlatformImport.created_at.desc(), PlatformImport.id.desc())
        .offset(paging.offset)
        .limit(paging.limit)
    )
    return list(rows.all()), total


def status_of(job: PlatformImport) -> str:
    """`queued` and `running` are both `pending` rows to the worker; `started_at` parts them."""
    if job.status == "pending":
        return "running" if job.started_at is not None else "queued"
    return job.status


def as_dict(job: PlatformImport) -> dict[str, Any]:
    options = job.options or {}
    return {
        "id": job.id,
        "platform": job.platform,
        "source": job.origin,
        "filename": job.filename or None,
        "list_id": options.get("list_id"),
        "dry_run": bool(options.get("dry_run")),
        "status": status_of(job),
        "progress": {"done": job.progress_done, "total": job.progress_total},
        "result": job.result,
        "error": job.error,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
    }
