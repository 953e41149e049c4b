"""Custom fields (`/app/fields`): the registry with how many contacts carry each key, add a
field, change its label, type or options, delete it. A type change that stored values do not
fit shows the API's 409 (how many, examples) and asks again; confirming applies it and the
values are kept and flagged, as `confirm_violations: true` does."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.custom_fields import service as fields
from mailroom.custom_fields.schemas import FIELD_TYPES
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, undo
from mailroom.people import sessions

router = APIRouter(include_in_schema=False)
PATH = "/app/fields"


def _options(form: dict[str, Any]) -> list[str] | None:
    text = str(form.get("options") or "")
    chosen = [line.strip() for line in text.replace(",", "\n").splitlines() if line.strip()]
    return chosen or None


async def _page(
    visitor: Visitor,
    ctx: Context,
    *,
    status: int = 200,
    draft: dict[str, Any] | None = None,
    conflict: dict[str, Any] | None = None,
) -> Response:
    registry = await fields.registry(ctx)
    usage = await fields.key_usage(ctx)
    rows = [
        {
            "key": key,
            "label": field.label,
            "type": field.type,
            "options": field.options or [],
            "contacts": usage.get(key, 0),
        }
        for key, field in registry.items()
    ]
    return render.page(
        "fields.html",
        status=status,
        title="Custom fields",
        section="fields",
        visitor=visitor,
        rows=rows,
        types=FIELD_TYPES,
        draft=draft or {},
        conflict=conflict,
        flashes=sessions.take_flash(visitor.row),
    )


@router.get(PATH)
async def fields_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return await _page(visitor, ctx)

    return await as_visitor(request, work)


async def _refused(
    visitor: Visitor, ctx: Context, problem: ApiError, draft: dict[str, Any]
) -> Response:
    """Nothing changes; a 409 over stored values asks to confirm, anything else says why."""
    await undo(ctx.session, visitor)
    conflict = None
    if problem.status == 409 and "violations" in problem.extras:
        conflict = {"message": problem.message, **problem.extras["violations"]}
    else:
        sessions.flash(visitor.row, "error", problem.message)
    return await _page(visitor, ctx, status=problem.status, draft=draft, conflict=conflict)


@router.post(PATH)
async def add_field(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        draft = {
            "mode": "add",
            "key": str(form.get("key") or "").strip(),
            "label": str(form.get("label") or "").strip() or None,
            "type": str(form.get("type") or "text"),
            "options": _options(form),
        }
        try:
            field = await fields.create_field(
                ctx,
                key=draft["key"],
                label=draft["label"],
                field_type=draft["type"],
                options=draft["options"],
                confirm_violations=form.get("confirm_violations") == "yes",
            )
        except ApiError as problem:
            return await _refused(visitor, ctx, problem, draft)
        audit_write(ctx, request, "create_custom_field", field.key, 201)
        sessions.flash(visitor.row, "ok", f"Field “{field.label}” ({field.type}) added.")
        return RedirectResponse(PATH, status_code=303)

    return await as_visitor(request, work)


@router.post(f"{PATH}/{{key}}")
async def change_field(key: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        changes: dict[str, Any] = {
            "label": str(form.get("label") or "").strip(),
            "type": str(form.get("type") or "text"),
            "options": _options(form),
        }
        try:
            field, violations = await fields.update_field(
                ctx, key, changes, confirm_violations=form.get("confirm_violations") == "yes"
            )
        except ApiError as problem:
            if problem.status == 404:
                raise
            return await _refused(visitor, ctx, problem, {"mode": "change", "key": key, **changes})
        audit_write(ctx, request, "update_custom_field", key, 200)
        kept = (
            f" {violations.count} stored value(s) do not fit and are flagged." if violations else ""
        )
        sessions.flash(visitor.row, "ok", f"Field “{field.label}” saved.{kept}")
        return RedirectResponse(PATH, status_code=303)

    return await as_visitor(request, work)


@router.post(f"{PATH}/{{key}}/delete")
async def delete_field(key: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        cleared, forms_updated = await fields.delete_field(ctx, key)
        audit_write(ctx, request, "delete_custom_field", key, 200)
        sessions.flash(
            visitor.row,
            "ok",
            f"Field “{key}” deleted: cleared from {cleared:,} contact(s) and "
            f"{forms_updated:,} form(s).",
        )
        return RedirectResponse(PATH, status_code=303)

    return await as_visitor(request, work)
