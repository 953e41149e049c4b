"""Importing from another platform (`/app/imports/platform`): choose the platform, upload its
export file or (Mailchimp, listmonk) give its API details, and start a check (a dry run: the
job counts what the import would create, update, suppress and skip, and writes nothing). The
job page follows the job (it refreshes while the worker runs it) and shows the result; a
finished check has "Import for real", which starts the same import without `dry_run`.

Everything runs on `platform_imports.service` as the API does; the worker runs the jobs. A job
keeps neither its upload nor its API credentials once it ends, so the check's upload waits for
its real import as a file in the data directory, named by the check's job id, with a record
beside it naming its workspace and, once started, its real import (both removed after a day).
An API pull's details are kept the same way except its secret: the key (Mailchimp) or token
(listmonk) is asked again on the check's page, never stored by the dashboard. One real import
per check, whichever process takes the click; another only after that one failed.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import time
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.datastructures import UploadFile

from mailroom.contacts.importer import MAX_BYTES
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, refused, when
from mailroom.lists import service as lists
from mailroom.models import PlatformImport
from mailroom.people import sessions
from mailroom.platform_imports import service
from mailroom.settings import Settings
from mailroom.web.uploads import MULTIPART_OVERHEAD, BodyTooLarge, capped_receive

router = APIRouter(include_in_schema=False)
PATH = "/app/imports/platform"
RECENT = 20  # imports listed under the form
KEEP = 86_400.0  # seconds a check's upload (or pull details) waits for "Import for real"
BODY_CAP = MAX_BYTES + MULTIPART_OVERHEAD
# Lets the upload past the app's JSON body cap (web.bodylimit); this page caps it itself.
UPLOAD_BODY: dict[str, Any] = {"requestBody": {"content": {"multipart/form-data": {}}}}
OPERATION = "start_platform_import"  # the API's audit name for the same write

# (platform, its name, which export file to upload)
PLATFORMS = (
    ("mailchimp", "Mailchimp", "Audience › Export audience: the .zip as downloaded."),
    (
        "listmonk",
        "listmonk",
        "Subscribers › Export: the subscribers .csv (it has no lists: pull through the API "
        "to keep them).",
    ),
    (
        "brevo",
        "Brevo",
        "Contacts › Export contacts: the .csv (include the lists and blacklist columns to "
        "keep them).",
    ),
    ("kit", "Kit", "Subscribers › Export: the subscribers .csv."),
    ("mautic", "Mautic", "Contacts › Export to CSV: the .csv, or the .zip of a background export."),
)
NAMES = {key: name for key, name, _hint in PLATFORMS}
SECRET_OF = {"mailchimp": "key", "listmonk": "token"}
SECRET_LABEL = {"mailchimp": "Mailchimp API key", "listmonk": "listmonk API token"}
TEXT = (
    "platform",
    "list_id",
    "mailchimp_audience",
    "listmonk_url",
    "listmonk_username",
    "listmonk_list_ids",
)

CHOOSE_PLATFORM = "Choose the platform the contacts come from."
NO_SOURCE = "Choose {name}'s export file to upload{api}."
OR_API = ", or give its API details"
NO_PULL = "{name} has no API pull here: upload its export file instead."
BOTH = "Upload the export file or give the API details, not both."
TOO_LARGE = "File too large: an export file can be up to 5 MB."
MAILCHIMP_KEY = "Give the Mailchimp API key (Profile › Extras › API keys) to pull an audience."
LISTMONK_NEEDS = "A listmonk pull needs listmonk's address, an API user and that user's token."
LIST_IDS = "listmonk list ids are whole numbers separated by commas, like 3, 7."
SECRET_AGAIN = "Give the {label} again: it is not kept after the check."
ONLY_CHECKS = "Only a finished check can be imported for real."
GONE = (
    "This check can no longer be imported for real (its upload and details are kept for a "
    "day): check again from the form."
)
STARTED = "The import has started: the contacts are written as the worker goes."


# ---------------------------------------------------------------- what a check keeps


def _folder(settings: Settings) -> Path:
    folder = Path(settings.data_dir) / "platform_imports"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _named(job_id: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z0-9-]{1,64}", job_id))


def _write_record(path: Path, record: dict[str, Any]) -> None:
    """Written whole (a reader never sees half a file)."""
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(record))
    os.replace(partial, path)


def _keep(settings: Settings, job_id: str, record: dict[str, Any], content: bytes | None) -> None:
    folder = _folder(settings)
    if content is not None:
        (folder / f"{job_id}.upload").write_bytes(content)
    _write_record(folder / f"{job_id}.json", record)


def _kept(settings: Settings, job_id: str, *, content: bool = False) -> dict[str, Any] | None:
    """The check's record (None when gone). `ready`: it can be imported (a file's upload is
    still here); with `content`, the upload's bytes (None when they are gone)."""
    if not _named(job_id):
        return None
    folder = _folder(settings)
    upload = folder / f"{job_id}.upload"
    try:
        record: dict[str, Any] = json.loads((folder / f"{job_id}.json").read_text())
    except (OSError, ValueError):
        return None
    record["ready"] = record.get("origin") == "api" or upload.exists()
    if content and record.get("origin") == "file":
        try:
            record["content"] = upload.read_bytes()
        except OSError:
            record["ready"] = False
    return record


def _claim(settings: Settings, job_id: str) -> Path | None:
    """One real import per check, whichever process takes the click (None: another has it)."""
    folder = _folder(settings)
    claimed = folder / f"{job_id}.{secrets.token_hex(6)}.claim"
    try:
        os.rename(folder / f"{job_id}.json", claimed)
    except FileNotFoundError:
        return None
    return claimed


def _being_claimed(settings: Settings, job_id: str) -> bool:
    return _named(job_id) and any(_folder(settings).glob(f"{job_id}.*.claim"))


def _unclaim(settings: Settings, job_id: str, claimed: Path) -> None:
    os.replace(claimed, _folder(settings) / f"{job_id}.json")


def _imported(
    settings: Settings, job_id: str, record: dict[str, Any], real_id: str, claimed: Path
) -> None:
    """The check names its real import from now on."""
    kept = {k: v for k, v in record.items() if k not in ("content", "ready")}
    _write_record(_folder(settings) / f"{job_id}.json", {**kept, "real": real_id})
    claimed.unlink(missing_ok=True)


def _forget_old(settings: Settings) -> None:
    now = time.time()
    for path in _folder(settings).iterdir():
        try:
            if now - path.stat().st_mtime > KEEP:
                path.unlink(missing_ok=True)
        except OSError:
            continue  # another process removed it first


# ---------------------------------------------------------------- what the pages show


def _counts(result: dict[str, Any] | None) -> str:
    if not result:
        return ""
    suppressed = sum((result.get("suppressed") or {}).values())
    said = [
        f"{result['created']:,} new",
        f"{result['updated']:,} updated",
        f"{result['unchanged']:,} unchanged",
        f"{suppressed:,} suppressed",
    ]
    if "skipped_total" in result:
        said.append(f"{result['skipped_total']:,} skipped")
    return ", ".join(said)


def _job_view(job: PlatformImport) -> dict[str, Any]:
    shown = service.as_dict(job)
    done, total = shown["progress"]["done"], shown["progress"]["total"]
    name = NAMES.get(job.platform, job.platform)
    return {
        **shown,
        "name": name,
        "source_words": shown["filename"] or f"{name} API",
        "when": when(job.created_at),
        "finished": when(job.finished_at),
        "percent": min(100, done * 100 // total) if total else 0,
        "counts": _counts(shown["result"]),
        "live": shown["status"] in ("queued", "running"),
    }


async def _list_choices(ctx: Context) -> list[tuple[str, str]]:
    found, _total = await lists.list_lists(ctx, PageParams(1, 200))
    return [(m.id, m.name) for m in found]


def _blank() -> dict[str, Any]:
    return {**dict.fromkeys(TEXT, ""), "check_domains": False}


def _draft(form: dict[str, Any]) -> dict[str, Any]:
    """The form as posted, to show again when refused (secrets and the file are not)."""
    draft: dict[str, Any] = {name: str(form.get(name) or "").strip() for name in TEXT}
    return draft | {"check_domains": form.get("check_domains") == "on"}


async def _form_page(
    visitor: Visitor,
    ctx: Context,
    *,
    status: int = 200,
    draft: dict[str, Any] | None = None,
    problem: str = "",
    skipped: list[dict[str, Any]] | None = None,
) -> Response:
    jobs, total = await service.list_imports(ctx, PageParams(1, RECENT))
    return render.page(
        "platform_import.html",
        status=status,
        title="Import from another platform",
        section="contacts",
        visitor=visitor,
        platforms=PLATFORMS,
        draft=draft or _blank(),
        lists=await _list_choices(ctx),
        jobs=[_job_view(job) for job in jobs],
        total=total,
        problem=problem,
        skipped=skipped or [],
        flashes=sessions.take_flash(visitor.row),
    )


async def _real_of(ctx: Context, record: dict[str, Any]) -> dict[str, Any] | None:
    """The check's real import, when it has one (and it was not deleted)."""
    try:
        return service.as_dict(await service.get_import(ctx, record["real"]))
    except ApiError:
        return None


async def _job_page(
    visitor: Visitor, ctx: Context, job: PlatformImport, *, status: int = 200
) -> Response:
    view = _job_view(job)
    list_name = None
    if view["list_id"]:
        try:
            list_name = (await lists.get_list(ctx, view["list_id"])).name
        except ApiError:
            list_name = "a list since deleted"
    kept, real = None, None
    if view["dry_run"] and view["status"] == "done":
        kept = await asyncio.to_thread(_kept, ctx.settings, job.id)
        if kept is not None and kept.get("workspace_id") != visitor.workspace_id:
            kept = None
        if kept is not None and kept.get("real"):
            real = await _real_of(ctx, kept)
    title = f"{view['name']} import" + (" (check)" if view["dry_run"] else "")
    return render.page(
        "platform_import_job.html",
        status=status,
        title=title,
        section="contacts",
        visitor=visitor,
        job=view,
        options=job.options or {},
        list_name=list_name,
        kept=kept,
        real=real,
        secret_label=SECRET_LABEL.get(job.platform, ""),
        gone=GONE,
        path=f"{PATH}/{job.id}",
        flashes=sessions.take_flash(visitor.row),
    )


# ---------------------------------------------------------------- starting a check


def _list_ids(text: str) -> list[int]:
    parts = [p for p in re.split(r"[\s,;]+", text) if p]
    if not all(p.isdecimal() and len(p) < 10 and int(p) > 0 for p in parts):
        raise ApiError(400, LIST_IDS)
    return [int(p) for p in parts]


def _api_details(platform: str, form: dict[str, Any]) -> dict[str, Any] | None:
    """The chosen platform's API details as the service takes them; None when none given."""

    def typed(name: str) -> str:
        return str(form.get(name) or "").strip()

    if platform == "mailchimp":
        key, audience = typed("mailchimp_key"), typed("mailchimp_audience")
        if not (key or audience):
            return None
        if not key:
            raise ApiError(400, MAILCHIMP_KEY)
        return {"key": key, **({"list_id": audience} if audience else {})}
    if platform == "listmonk":
        names = ("url", "username", "token", "list_ids")
        given = {name: typed(f"listmonk_{name}") for name in names}
        if not any(given.values()):
            return None
        if not (given["url"] and given["username"] and given["token"]):
            raise ApiError(400, LISTMONK_NEEDS)
        return {**given, "list_ids": _list_ids(given["list_ids"])}
    return None


async def _start_check(
    ctx: Context, form: dict[str, Any], draft: dict[str, Any]
) -> tuple[PlatformImport, dict[str, Any], bytes | None]:
    """The check's job, its record to keep, and its upload's bytes (None for a pull)."""
    platform = draft["platform"]
    if platform not in NAMES:
        raise ApiError(400, CHOOSE_PLATFORM)
    name = NAMES[platform]
    upload = form.get("file")
    has_file = isinstance(upload, UploadFile) and bool(upload.filename)
    api = _api_details(platform, form)
    if has_file and api is not None:
        raise ApiError(400, BOTH)
    record: dict[str, Any] = {"workspace_id": ctx.workspace_id}
    if isinstance(upload, UploadFile) and has_file:
        content = await upload.read(MAX_BYTES + 1)
        if len(content) > MAX_BYTES:
            raise ApiError(413, TOO_LARGE)
        fields = {
            "platform": platform,
            "list_id": draft["list_id"],
            "dry_run": "true",
            "check_domains": "true" if draft["check_domains"] else "false",
        }
        # Reading the upload takes a while: hold no connection meanwhile.
        await ctx.session.commit()
        job = await service.start_file_import(
            ctx, filename=upload.filename or "", content=content, fields=fields
        )
        return job, record | {"origin": "file"}, content
    if api is None:
        if platform in SECRET_OF:
            raise ApiError(400, NO_SOURCE.format(name=name, api=OR_API))
        if any(str(form.get(f) or "").strip() for f in ("mailchimp_key", "listmonk_url")):
            raise ApiError(400, NO_PULL.format(name=name))
        raise ApiError(400, NO_SOURCE.format(name=name, api=""))
    body = {
        "platform": platform,
        "api": api,
        "list_id": draft["list_id"] or None,
        "dry_run": True,
        "check_domains": draft["check_domains"],
    }
    await ctx.session.commit()  # a listmonk URL's name is resolved next: hold no connection
    job = await service.start_api_import(ctx, body)
    details = {k: v for k, v in api.items() if k != SECRET_OF[platform]}
    return job, record | {"origin": "api", "api": details}, None


# ---------------------------------------------------------------- the pages


@router.get(PATH)
async def form_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        service.check_permissions(ctx)
        too_large = request.query_params.get("too_large") == "1"
        return await _form_page(visitor, ctx, problem=TOO_LARGE if too_large else "")

    return await as_visitor(request, work)


@router.post(PATH, openapi_extra=UPLOAD_BODY)
async def start_check(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        service.check_permissions(ctx)
        draft = _draft(form)
        try:
            job, record, content = await _start_check(ctx, form, draft)
        except ApiError as problem:
            await refused(ctx, visitor, problem)
            return await _form_page(
                visitor,
                ctx,
                status=problem.status,
                draft=draft,
                skipped=problem.extras.get("skipped"),
            )
        audit_write(ctx, request, OPERATION, job.id, 202)
        await asyncio.to_thread(_forget_old, ctx.settings)
        await asyncio.to_thread(_keep, ctx.settings, job.id, record, content)
        return RedirectResponse(f"{PATH}/{job.id}", status_code=303)

    declared = request.headers.get("content-length", "")
    too_large = RedirectResponse(f"{PATH}?too_large=1", status_code=303)
    if declared.isdecimal() and int(declared) > BODY_CAP:
        return too_large
    try:
        return await as_visitor(
            Request(request.scope, capped_receive(request.receive, BODY_CAP)), work
        )
    except BodyTooLarge:
        return too_large


@router.get(PATH + "/{import_id}")
async def job_page(import_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        service.check_permissions(ctx)
        return await _job_page(visitor, ctx, await service.get_import(ctx, import_id))

    return await as_visitor(request, work)


async def _start_real(
    ctx: Context, job: PlatformImport, record: dict[str, Any], secret: str
) -> PlatformImport:
    options = job.options or {}
    if record["origin"] == "file":
        fields = {
            "platform": job.platform,
            "list_id": options.get("list_id") or "",
            "dry_run": "false",
            "check_domains": "true" if options.get("check_domains") else "false",
        }
        return await service.start_file_import(
            ctx, filename=job.filename or "", content=record["content"], fields=fields
        )
    body = {
        "platform": job.platform,
        "api": {**record["api"], SECRET_OF[job.platform]: secret},
        "list_id": options.get("list_id"),
        "dry_run": False,
        "check_domains": bool(options.get("check_domains")),
    }
    return await service.start_api_import(ctx, body)


@router.post(PATH + "/{import_id}/import")
async def import_for_real(import_id: str, request: Request) -> Response:
    """The checked import again, for real: the kept upload (or the kept pull details and the
    secret given again), the same list and domain check."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        service.check_permissions(ctx)
        job = await service.get_import(ctx, import_id)
        here = f"{PATH}/{job.id}"
        shown = service.as_dict(job)
        if not (shown["dry_run"] and shown["status"] == "done"):
            sessions.flash(visitor.row, "error", ONLY_CHECKS)
            return RedirectResponse(here, status_code=303)
        record = await asyncio.to_thread(_kept, ctx.settings, job.id, content=True)
        if record is not None and record.get("workspace_id") != visitor.workspace_id:
            record = None
        if record is not None and record.get("real"):
            previous = await _real_of(ctx, record)
            if previous is not None and previous["status"] != "failed":
                # Imported already (a second click, another tab): only a failure is retried.
                return RedirectResponse(f"{PATH}/{previous['id']}", status_code=303)
        if record is None and await asyncio.to_thread(_being_claimed, ctx.settings, job.id):
            return RedirectResponse(here, status_code=303)  # another click is starting it
        if record is None or not record["ready"]:
            sessions.flash(visitor.row, "error", GONE)
            return RedirectResponse(here, status_code=303)
        secret = str(form.get("secret") or "").strip()
        if record["origin"] == "api" and not secret:
            problem = ApiError(400, SECRET_AGAIN.format(label=SECRET_LABEL[job.platform]))
            await refused(ctx, visitor, problem)
            return await _job_page(
                visitor, ctx, await service.get_import(ctx, import_id), status=400
            )
        claimed = await asyncio.to_thread(_claim, ctx.settings, job.id)
        if claimed is None:  # another click is starting it
            return RedirectResponse(here, status_code=303)
        try:
            await ctx.session.commit()  # the upload is read or a URL resolved: no connection
            real = await _start_real(ctx, job, record, secret)
            audit_write(ctx, request, OPERATION, real.id, 202)
            await ctx.session.commit()
        except ApiError as problem:
            await asyncio.to_thread(_unclaim, ctx.settings, job.id, claimed)
            await refused(ctx, visitor, problem)
            again = await service.get_import(ctx, import_id)
            return await _job_page(visitor, ctx, again, status=problem.status)
        except BaseException:
            await asyncio.to_thread(_unclaim, ctx.settings, job.id, claimed)
            raise
        await asyncio.to_thread(_imported, ctx.settings, job.id, record, real.id, claimed)
        sessions.flash(visitor.row, "ok", STARTED)
        return RedirectResponse(f"{PATH}/{real.id}", status_code=303)

    return await as_visitor(request, work)
