"""Signup forms (`/app/forms`): the list with submissions and confirmations; a builder (which
fields to ask, their labels, which are required, the order; lists, double opt-in, the thank-you
message or redirect, consent text, languages) with the hosted page previewed in a frame, the
hosted link and the embed code to copy. Saving is `forms.service` (the API's rules).

The preview frame shows the saved hosted page; with script, app.js posts the builder's
fields into it as they change (`draft-preview`: the hosted page's own template and policy,
in the first chosen language), so it follows the form being built before it is saved."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import escape

from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.custom_fields import service as custom_fields
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, refused
from mailroom.forms import render as form_render
from mailroom.forms import service as forms
from mailroom.lists import service as lists
from mailroom.pages.i18n import LANGUAGES
from mailroom.pages.render import HEADERS as PAGE_HEADERS
from mailroom.people import sessions

router = APIRouter(include_in_schema=False)
PATH = "/app/forms"
SHOWN = 500
# The hosted page's own policy, framed by the dashboard only, posting nowhere.
PREVIEW_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; base-uri 'none'; "
    "frame-ancestors 'self'"
)


@router.get(PATH)
async def forms_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        rows, _ = await forms.list_forms(ctx, PageParams(1, SHOWN), None)
        counts = await forms.submission_counts(ctx, [f.id for f in rows])
        return render.page(
            "forms.html",
            title="Signup forms",
            section="forms",
            visitor=visitor,
            rows=[{"id": f.id, "name": f.name, **counts[f.id]} for f in rows],
            flashes=sessions.take_flash(visitor.row),
        )

    return await as_visitor(request, work)


async def _builder(
    visitor: Visitor,
    ctx: Context,
    draft: dict[str, Any],
    *,
    form_id: str = "",
    status: int = 200,
) -> Response:
    registry = await custom_fields.registry(ctx)
    asked = {f["key"]: (i, f) for i, f in enumerate(draft["fields"])}
    available = [("email", "Email"), ("first_name", "First name"), ("last_name", "Last name")]
    available += [(key, f"{field.label} ({field.type})") for key, field in registry.items()]
    rows = []
    for position, (key, label) in enumerate(available):
        order, chosen = asked.get(key, (len(available) + position, {}))
        rows.append(
            {
                "key": key,
                "what": label,
                "asked": key in asked,
                "label": chosen.get("label") or "",
                "required": bool(chosen.get("required")) or key == "email",
                "order": order + 1,
            }
        )
    rows.sort(key=lambda r: r["order"])
    list_rows, _ = await lists.list_lists(ctx, PageParams(1, SHOWN))
    embed = ""
    counts = {"submissions": 0, "confirmed": 0}
    if form_id:
        stored = await forms.get_form(ctx, form_id)
        embed = form_render.embed(
            name=stored.name,
            lang=stored.languages[0],
            action=f"{ctx.settings.public_url.rstrip('/')}/f/{stored.id}?lang={stored.languages[0]}",
            fields=forms.shown_fields(stored, registry),
            consent_text=stored.consent_text,
        )
        counts = (await forms.submission_counts(ctx, [form_id]))[form_id]
    return render.page(
        "form_builder.html",
        status=status,
        title=draft.get("name") or "New form",
        section="forms",
        visitor=visitor,
        draft=draft,
        form_id=form_id,
        rows=rows,
        lists=[(m.id, m.name) for m in list_rows],
        languages=LANGUAGES,
        hosted=f"{ctx.settings.public_url.rstrip('/')}/f/{form_id}" if form_id else "",
        embed=embed,
        counts=counts,
        flashes=sessions.take_flash(visitor.row),
    )


@router.get(f"{PATH}/new")
async def new_form(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        draft = {
            "name": "",
            "fields": [{"key": "email", "required": True}, {"key": "first_name"}],
            "list_ids": [],
            "double_opt_in": True,
            "success_message": "",
            "redirect_url": "",
            "consent_text": "",
            "languages": ["en"],
        }
        return await _builder(visitor, ctx, draft)

    return await as_visitor(request, work)


@router.get(f"{PATH}/{{form_id}}")
async def form_page(form_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        stored = await forms.get_form(ctx, form_id)
        draft = {
            "name": stored.name,
            "fields": list(stored.fields),
            "list_ids": list(stored.list_ids),
            "double_opt_in": stored.double_opt_in,
            "success_message": stored.success_message or "",
            "redirect_url": stored.redirect_url or "",
            "consent_text": stored.consent_text or "",
            "languages": list(stored.languages),
        }
        return await _builder(visitor, ctx, draft, form_id=form_id)

    return await as_visitor(request, work)


def _body(form: dict[str, Any]) -> dict[str, Any]:
    chosen = []
    i = 0
    while f"key_{i}" in form:
        if form.get(f"ask_{i}") == "on" or form.get(f"key_{i}") == "email":
            order = str(form.get(f"order_{i}") or "")
            chosen.append(
                (
                    int(order) if order.isdecimal() else 999,
                    i,
                    {
                        "key": str(form.get(f"key_{i}")),
                        "label": str(form.get(f"label_{i}") or "").strip() or None,
                        "required": form.get(f"required_{i}") == "on",
                    },
                )
            )
        i += 1
    return {
        "name": str(form.get("name") or ""),
        "fields": [item for _order, _i, item in sorted(chosen, key=lambda c: (c[0], c[1]))],
        "list_ids": list(form.get("list_ids") or []),
        "double_opt_in": form.get("double_opt_in") == "on",
        "success_message": str(form.get("success_message") or "").strip() or None,
        "redirect_url": str(form.get("redirect_url") or "").strip() or None,
        "consent_text": str(form.get("consent_text") or "").strip() or None,
        "languages": list(form.get("languages") or []) or ["en"],
    }


@router.post(f"{PATH}/save")
async def save_form(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        form_id = str(form.get("form_id") or "")
        body = _body(form)
        try:
            if form_id:
                saved = await forms.update_form(ctx, form_id, body)
            else:
                saved = await forms.create_form(ctx, body)
        except ApiError as problem:
            if problem.status == 404:
                raise
            await refused(ctx, visitor, problem)
            draft = {k: ("" if v is None else v) for k, v in body.items()}
            return await _builder(visitor, ctx, draft, form_id=form_id, status=problem.status)
        operation = "update_form" if form_id else "create_form"
        audit_write(ctx, request, operation, saved.id, 200 if form_id else 201)
        sessions.flash(visitor.row, "ok", f"Form “{saved.name}” saved.")
        return RedirectResponse(f"{PATH}/{saved.id}", status_code=303)

    return await as_visitor(request, work)


@router.post(f"{PATH}/{{form_id}}/delete")
async def delete_form(form_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        name = (await forms.get_form(ctx, form_id)).name
        await forms.delete_form(ctx, form_id)
        audit_write(ctx, request, "delete_form", form_id, 200)
        sessions.flash(visitor.row, "ok", f"Form “{name}” deleted; its page now answers 404.")
        return RedirectResponse(PATH, status_code=303)

    return await as_visitor(request, work)


@router.post(f"{PATH}/draft-preview")
async def preview_draft(request: Request) -> Response:
    """The hosted page as the builder's fields stand now (nothing saved), for the preview
    frame: a field the API would refuse shows its message instead."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        body = _body(form)
        headers = {**PAGE_HEADERS, "Content-Security-Policy": PREVIEW_CSP}
        try:
            fields = await forms.draft_fields(ctx, body["fields"])
        except ApiError as problem:
            html = f"<p>{escape(problem.message)}</p>"
            return HTMLResponse(html, status_code=problem.status, headers=headers)
        html = form_render.page(
            lang=body["languages"][0],
            title=body["name"] or "Signup",
            action="#",
            fields=fields,
            consent_text=body["consent_text"],
        )
        return HTMLResponse(html, headers=headers)

    return await as_visitor(request, work)
