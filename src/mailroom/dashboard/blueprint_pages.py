"""Workspace blueprints (`/app/blueprints`): the account's blueprints (the starters Mailroom
ships among them) with their parts and where each came from, a form that captures the current
workspace and one that uploads a document; a blueprint's page: what it holds, its document to
download, rename and delete (not a starter's), and "Apply to this workspace": a dry run shows
the plan (one row per object, counted per action), "Apply for real" applies the same choice,
refused while the plan has a conflict, and the result shows each new webhook endpoint's
signing secret this once.

Everything runs on `blueprints.service` as the API does, with the same permissions (reading
needs any one part's read permission; the service checks the rest). Applying reads the
document in a short read session of its own and ends the page's transaction first, so the
webhook URLs are checked (DNS) with no connection held, before the apply's first statement.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy import select
from starlette.datastructures import UploadFile

from mailroom.blueprints import service
from mailroom.blueprints.parts import PART_NAMES, PARTS, PERMISSIONS
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, refused, undo, when
from mailroom.models import Blueprint, Workspace
from mailroom.people import sessions
from mailroom.web.deps import get_db
from mailroom.web.uploads import MULTIPART_OVERHEAD, BodyTooLarge, capped_receive

router = APIRouter(include_in_schema=False)
PATH = "/app/blueprints"
LIST_PAGE = 25
# Lets the upload past the app's JSON body cap (web.bodylimit); this page caps it itself.
UPLOAD_BODY: dict[str, Any] = {"requestBody": {"content": {"multipart/form-data": {}}}}

PART_LABELS = {
    "custom_fields": "Custom fields",
    "tags": "Tags",
    "lists": "Lists",
    "segments": "Segments",
    "templates": "Templates",
    "automations": "Automations",
    "forms": "Forms",
    "webhooks": "Webhook endpoints",
    "sending": "Sending settings",
}
ACTIONS = ("create", "update", "unchanged", "skip", "conflict")
DONE_WORDS = {
    "create": "created",
    "update": "updated",
    "unchanged": "unchanged",
    "skip": "skipped",
}
ON_CONFLICT = (
    ("skip", "Skip it: keep what is here"),
    ("update", "Update it to the blueprint's"),
)

NO_PARTS = "Choose at least one part to capture."
NO_FILE = "Choose a blueprint document (a .json file) to upload."
NOT_JSON = "That file is not JSON: upload a blueprint document as downloaded from Mailroom."
NOT_OBJECT = "That file is not a blueprint document: it must hold one JSON object."
TOO_LARGE = "File too large: a blueprint document can be up to {size}."
CONFLICTED = (
    "The plan has conflicts: nothing can be applied until they are resolved in this "
    "workspace (each conflict row says why)."
)


# ---------------------------------------------------------------- what the pages show


def _page_number(request: Request) -> int:
    raw = request.query_params.get("page") or "1"
    return max(1, int(raw)) if raw.isdecimal() and len(raw) < 7 else 1


async def _sources(ctx: Context, blueprints: list[Blueprint]) -> dict[str, str]:
    """The names of the account's workspaces the blueprints were captured from."""
    ids = {b.source_workspace_id for b in blueprints if b.source_workspace_id}
    if not ids:
        return {}
    rows = await ctx.session.execute(
        select(Workspace.id, Workspace.name).where(
            Workspace.account_id == ctx.principal.account_id, Workspace.id.in_(ids)
        )
    )
    return {w: n or f"Workspace {w[:8]}" for w, n in rows.all()}


def _view(blueprint: Blueprint, sources: dict[str, str]) -> dict[str, Any]:
    shown = service.as_dict(blueprint)
    starter = bool(shown.get("starter"))
    source = shown["source_workspace_id"]
    if starter:
        origin = "Ships with Mailroom"
    elif source:
        origin = f"Captured from {sources.get(source, 'a workspace since deleted')}"
    else:
        origin = "Imported from a document"
    return {
        **shown,
        "starter": starter,
        "origin": origin,
        "when": when(shown["created_at"]),
        "part_counts": [(PART_LABELS[p], shown["counts"].get(p, 0)) for p in shown["parts"]],
    }


def _contents(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Each part the document holds with the names of its objects, as the plan names them."""
    parts: dict[str, list[dict[str, Any]]] = document.get("parts") or {}
    found = []
    for name in PART_NAMES:
        if name not in parts:
            continue
        part = PARTS.get(name)
        names = [part.key(o) if part else str(o.get("name", "")) for o in parts[name]]
        found.append({"part": name, "label": PART_LABELS[name], "names": names})
    return found


def plan_view(answer: dict[str, Any], on_conflict: str, problem: str = "") -> dict[str, Any]:
    """An apply's answer (or a 409's plan) as the page shows it."""
    rows = [{**row, "label": PART_LABELS.get(row["part"], row["part"])} for row in answer["plan"]]
    counts = {action: 0 for action in ACTIONS}
    for row in rows:
        counts[row["action"]] = counts.get(row["action"], 0) + 1
    done = ", ".join(f"{counts[a]} {words}" for a, words in DONE_WORDS.items())
    return {
        "rows": rows,
        "counts": list(counts.items()),
        "dry_run": bool(answer.get("dry_run")),
        "applied": bool(answer.get("applied")),
        "conflicted": counts["conflict"] > 0,
        "on_conflict": on_conflict,
        "secrets": answer.get("secrets") or [],
        "done": done,
        "problem": problem,
    }


def _capture_parts(ctx: Context, chosen: list[str] | None) -> list[dict[str, Any]]:
    """The capture form's boxes: a part the visitor cannot read is shown, not offered."""
    boxes = []
    for name in PART_NAMES:
        permission = f"{PERMISSIONS[name]}:read"
        readable = ctx.principal.allows(permission)
        boxes.append(
            {
                "name": name,
                "label": PART_LABELS[name],
                "readable": readable,
                "permission": permission,
                "checked": readable and (chosen is None or name in chosen),
            }
        )
    return boxes


def _blank_capture() -> dict[str, Any]:
    return {"name": "", "description": "", "include": None}


async def _list_page(
    visitor: Visitor,
    ctx: Context,
    page: int = 1,
    *,
    status: int = 200,
    capture: dict[str, Any] | None = None,
    capture_problem: str = "",
    upload_problem: str = "",
) -> Response:
    found, total = await service.list_blueprints(ctx, PageParams(page, LIST_PAGE))
    sources = await _sources(ctx, found)
    draft = capture or _blank_capture()
    return render.page(
        "blueprints.html",
        status=status,
        title="Blueprints",
        section="blueprints",
        visitor=visitor,
        blueprints=[_view(b, sources) for b in found],
        total=total,
        page=page,
        pages=max(1, -(-total // LIST_PAGE)),
        page_url=lambda n: f"?page={n}",
        draft=draft,
        parts=_capture_parts(ctx, draft["include"]),
        capture_problem=capture_problem,
        upload_problem=upload_problem,
        max_size=_size_words(ctx.settings.max_json_body_bytes),
        flashes=sessions.take_flash(visitor.row),
    )


async def _blueprint_page(
    visitor: Visitor,
    ctx: Context,
    blueprint: Blueprint,
    *,
    status: int = 200,
    plan: dict[str, Any] | None = None,
    on_conflict: str = "skip",
    apply_problem: str = "",
    rename: dict[str, str] | None = None,
    rename_problem: str = "",
) -> Response:
    view = _view(blueprint, await _sources(ctx, [blueprint]))
    return render.page(
        "blueprint.html",
        status=status,
        title=view["name"],
        section="blueprints",
        visitor=visitor,
        blueprint=view,
        contents=_contents(blueprint.document),
        plan=plan,
        on_conflict=plan["on_conflict"] if plan else on_conflict,
        choices=ON_CONFLICT,
        apply_problem=apply_problem,
        rename=rename or {"name": view["name"], "description": view["description"]},
        rename_problem=rename_problem,
        conflicted_text=CONFLICTED,
        flashes=sessions.take_flash(visitor.row),
    )


def _size_words(size: int) -> str:
    return f"{size / (1024 * 1024):g} MB" if size >= 1024 * 1024 else f"{size:,} bytes"


def _filename(name: str) -> str:
    """The download's file name: the blueprint's name, safe in a header and a file system."""
    plain = re.sub(r"[^A-Za-z0-9._ -]+", "", name).strip(" .") or "blueprint"
    return f"{plain[:80]}.json"


# ---------------------------------------------------------------- the list, capture, upload


@router.get(PATH)
async def blueprints_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        service.check_any_read(ctx)
        too_large = request.query_params.get("too_large") == "1"
        problem = TOO_LARGE.format(size=_size_words(ctx.settings.max_json_body_bytes))
        return await _list_page(
            visitor, ctx, _page_number(request), upload_problem=problem if too_large else ""
        )

    return await as_visitor(request, work)


@router.post(PATH)
async def capture_blueprint(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        service.check_any_read(ctx)
        include = [name for name in PART_NAMES if form.get(f"include_{name}") == "on"]
        draft = {
            "name": str(form.get("name") or ""),
            "description": str(form.get("description") or ""),
            "include": include,
        }
        try:
            if not include:
                raise ApiError(400, NO_PARTS)
            blueprint = await service.capture(ctx, draft)
        except ApiError as problem:
            await undo(ctx.session, visitor)
            return await _list_page(
                visitor, ctx, status=problem.status, capture=draft, capture_problem=problem.message
            )
        audit_write(ctx, request, "capture_blueprint", blueprint.id, 201)
        sessions.flash(
            visitor.row,
            "ok",
            f"Blueprint “{blueprint.name}” captured from {visitor.workspace_name}.",
        )
        return RedirectResponse(f"{PATH}/{blueprint.id}", status_code=303)

    return await as_visitor(request, work)


async def _document_of(form: dict[str, Any], cap: int) -> Any:
    upload = form.get("file")
    if not isinstance(upload, UploadFile) or not upload.filename:
        raise ApiError(400, NO_FILE)
    content = await upload.read(cap + 1)
    if len(content) > cap:
        raise ApiError(413, TOO_LARGE.format(size=_size_words(cap)))
    if not content.strip():
        raise ApiError(400, NO_FILE)
    try:
        raw = json.loads(content)
    except (ValueError, RecursionError):  # RecursionError: nested past Python's stack
        raise ApiError(400, NOT_JSON) from None
    if not isinstance(raw, dict):
        raise ApiError(400, NOT_OBJECT)
    return raw


@router.post(PATH + "/import", openapi_extra=UPLOAD_BODY)
async def import_blueprint(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        service.check_any_read(ctx)
        try:
            raw = await _document_of(form, ctx.settings.max_json_body_bytes)
            blueprint = await service.import_document(ctx, raw)
        except ApiError as problem:
            await undo(ctx.session, visitor)
            return await _list_page(
                visitor, ctx, status=problem.status, upload_problem=problem.message
            )
        audit_write(ctx, request, "import_blueprint", blueprint.id, 201)
        sessions.flash(visitor.row, "ok", f"Blueprint “{blueprint.name}” imported.")
        return RedirectResponse(f"{PATH}/{blueprint.id}", status_code=303)

    cap = request.app.state.settings.max_json_body_bytes + MULTIPART_OVERHEAD
    declared = request.headers.get("content-length", "")
    too_large = RedirectResponse(f"{PATH}?too_large=1", status_code=303)
    if declared.isdecimal() and int(declared) > cap:
        return too_large
    try:
        return await as_visitor(Request(request.scope, capped_receive(request.receive, cap)), work)
    except BodyTooLarge:
        return too_large


# ---------------------------------------------------------------- one blueprint


@router.get(PATH + "/{blueprint_id}")
async def blueprint_page(blueprint_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        service.check_any_read(ctx)
        return await _blueprint_page(visitor, ctx, await service.get_blueprint(ctx, blueprint_id))

    return await as_visitor(request, work)


@router.get(PATH + "/{blueprint_id}/document")
async def download_document(blueprint_id: str, request: Request) -> Response:
    """The document as `GET /api/v1/blueprints/{id}/document` answers it, as a file."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        service.check_any_read(ctx)
        blueprint = await service.get_blueprint(ctx, blueprint_id)
        name = _filename(blueprint.name)
        body = json.dumps(blueprint.document, indent=2, ensure_ascii=False) + "\n"
        disposition = f"attachment; filename=\"{name}\"; filename*=UTF-8''{quote(name)}"
        return Response(
            body.encode(),
            media_type="application/json",
            headers={
                "Content-Disposition": disposition,
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
            },
        )

    return await as_visitor(request, work)


@router.post(PATH + "/{blueprint_id}")
async def rename_blueprint(blueprint_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        service.check_any_read(ctx)
        draft = {
            "name": str(form.get("name") or ""),
            "description": str(form.get("description") or ""),
        }
        try:
            blueprint = await service.update_blueprint(ctx, blueprint_id, draft)
        except ApiError as problem:
            if problem.status == 404:
                raise
            await undo(ctx.session, visitor)
            return await _blueprint_page(
                visitor,
                ctx,
                await service.get_blueprint(ctx, blueprint_id),
                status=problem.status,
                rename=draft,
                rename_problem=problem.message,
            )
        audit_write(ctx, request, "update_blueprint", blueprint.id, 200)
        sessions.flash(visitor.row, "ok", f"Blueprint “{blueprint.name}” saved.")
        return RedirectResponse(f"{PATH}/{blueprint.id}", status_code=303)

    return await as_visitor(request, work)


@router.get(PATH + "/{blueprint_id}/delete")
async def confirm_delete(blueprint_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        service.check_any_read(ctx)
        blueprint = await service.get_blueprint(ctx, blueprint_id)
        view = _view(blueprint, await _sources(ctx, [blueprint]))
        return render.page(
            "blueprint.html",
            title=f"Delete “{view['name']}”?",
            section="blueprints",
            visitor=visitor,
            blueprint=view,
            confirm_delete=True,
        )

    return await as_visitor(request, work)


@router.post(PATH + "/{blueprint_id}/delete")
async def delete_blueprint(blueprint_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        service.check_any_read(ctx)
        blueprint = await service.get_blueprint(ctx, blueprint_id)
        name = blueprint.name
        try:
            await service.delete_blueprint(ctx, blueprint_id)
        except ApiError as problem:
            if problem.status == 404:
                raise
            await refused(ctx, visitor, problem)
            return RedirectResponse(f"{PATH}/{blueprint_id}", status_code=303)
        audit_write(ctx, request, "delete_blueprint", blueprint_id, 200)
        sessions.flash(
            visitor.row,
            "ok",
            f"Blueprint “{name}” deleted; what it was applied to stays as it is.",
        )
        return RedirectResponse(PATH, status_code=303)

    return await as_visitor(request, work)


@router.post(PATH + "/{blueprint_id}/apply")
async def apply_blueprint(blueprint_id: str, request: Request) -> Response:
    """A dry run (`dry_run` "true", the default) or a real apply into the visitor's workspace.
    As the API: the document is read in a short read session of its own and the page's
    transaction is ended first, so the webhook URLs are checked (DNS) before the apply's first
    statement, with no connection held."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        service.check_any_read(ctx)
        on_conflict = str(form.get("on_conflict") or "skip")
        body = {"dry_run": form.get("dry_run") != "false", "on_conflict": on_conflict}
        await ctx.session.commit()  # the URLs' names are resolved next: hold no connection
        document = await service.read_document(get_db(request), ctx, blueprint_id)
        try:
            answer = await service.apply_blueprint(ctx, blueprint_id, body, document)
        except ApiError as problem:
            if problem.status == 404:
                raise
            await undo(ctx.session, visitor)
            blueprint = await service.get_blueprint(ctx, blueprint_id)
            refused_plan = problem.extras.get("plan")
            plan = None
            if refused_plan is not None:
                shown = {"dry_run": False, "applied": False, "plan": refused_plan}
                plan = plan_view(shown, on_conflict, problem.message)
            return await _blueprint_page(
                visitor,
                ctx,
                blueprint,
                status=problem.status,
                plan=plan,
                on_conflict=on_conflict if on_conflict in dict(ON_CONFLICT) else "skip",
                apply_problem="" if plan else problem.message,
            )
        if answer["applied"]:
            audit_write(ctx, request, "apply_blueprint", blueprint_id, 200)
        blueprint = await service.get_blueprint(ctx, blueprint_id)
        return await _blueprint_page(visitor, ctx, blueprint, plan=plan_view(answer, on_conflict))

    return await as_visitor(request, work)
