"""Templates (`/app/templates`): the list, an editor for the subject, preheader, HTML and text
with the merge tags explained, and a preview of the saved template as a chosen contact (or
sample values) at desktop and phone width. Saving goes through `templates.service` (its name
rules and syntax check); the preview is its `preview_template`, rendered off the event loop.

The preview is its own document in a sandboxed frame: email HTML needs inline styles and
remote images, which the dashboard's own policy forbids, and the sandbox runs no script.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import escape

from mailroom.contacts import service as contacts
from mailroom.core.context import Context
from mailroom.core.emails import normalize_email
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, refused, when
from mailroom.people import sessions
from mailroom.templates import service as templates

router = APIRouter(include_in_schema=False)
PATH = "/app/templates"
PARTS = ("subject", "preheader", "html_content", "text_content")
MERGE_TAGS = [
    ("{{ first_name }}", "the contact's first name"),
    ("{{ last_name }}", "the contact's last name"),
    ("{{ email }}", "the contact's address"),
    ("{{ custom_fields.plan }}", "a custom field, by its key"),
    ("{{ workspace.name }}", "this workspace's name"),
    ("{{ unsubscribe_url }}", "the one-click unsubscribe link"),
    ("{{ preferences_url }}", "the contact's preferences page"),
    ("{{ webview_url }}", "the message in a browser"),
    ("{{ first_name | default('there') }}", "a fallback when the field is empty"),
]
# The preview document: the email's own styles and images, no script, framed by us only.
PREVIEW_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src * data:; "
    "font-src * data:; frame-ancestors 'self'; base-uri 'none'; form-action 'none'",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@router.get(PATH)
async def templates_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        rows, _total = await templates.list_templates(ctx, PageParams(1, 500), None)
        return render.page(
            "templates.html",
            title="Templates",
            section="templates",
            visitor=visitor,
            rows=[{**templates.as_dict(t), "updated": when(t.updated_at)} for t in rows],
            flashes=sessions.take_flash(visitor.row),
        )

    return await as_visitor(request, work)


def _editor(
    visitor: Visitor,
    draft: dict[str, Any],
    *,
    template_id: str = "",
    status: int = 200,
    preview_as: str = "",
) -> Response:
    return render.page(
        "template.html",
        status=status,
        title=draft.get("name") or "New template",
        section="templates",
        visitor=visitor,
        draft=draft,
        template_id=template_id,
        merge_tags=MERGE_TAGS,
        preview_as=preview_as,
        flashes=sessions.take_flash(visitor.row),
    )


@router.get(f"{PATH}/new")
async def new_template(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return _editor(visitor, {"name": "", **dict.fromkeys(PARTS, "")})

    return await as_visitor(request, work)


@router.get(f"{PATH}/{{template_id}}")
async def template_page(template_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        template = templates.as_dict(await templates.get_template(ctx, template_id))
        preview_as = (request.query_params.get("as") or "").strip()
        return _editor(visitor, template, template_id=template_id, preview_as=preview_as)

    return await as_visitor(request, work)


@router.post(f"{PATH}/save")
async def save_template(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        template_id = str(form.get("template_id") or "")
        draft = {"name": str(form.get("name") or "")} | {
            part: str(form.get(part) or "") for part in PARTS
        }
        try:
            if template_id:
                saved = await templates.update_template(ctx, template_id, draft)
            else:
                saved = await templates.create_template(ctx, draft)
        except ApiError as problem:
            if problem.status == 404:
                raise
            await refused(ctx, visitor, problem)
            return _editor(visitor, draft, template_id=template_id, status=problem.status)
        operation = "update_template" if template_id else "create_template"
        audit_write(ctx, request, operation, saved.id, 200 if template_id else 201)
        sessions.flash(visitor.row, "ok", f"Template “{saved.name}” saved.")
        return RedirectResponse(f"{PATH}/{saved.id}", status_code=303)

    return await as_visitor(request, work)


@router.post(f"{PATH}/{{template_id}}/delete")
async def delete_template(template_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        name = (await templates.get_template(ctx, template_id)).name
        await templates.delete_template(ctx, template_id)
        audit_write(ctx, request, "delete_template", template_id, 200)
        sessions.flash(visitor.row, "ok", f"Template “{name}” deleted.")
        return RedirectResponse(PATH, status_code=303)

    return await as_visitor(request, work)


@router.get(f"{PATH}/{{template_id}}/preview")
async def preview_template(template_id: str, request: Request) -> Response:
    """The rendered HTML (or the text version in a <pre>), as the contact named by `as`."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        asked = (request.query_params.get("as") or "").strip()
        contact_id = None
        if asked:
            found = await contacts.find_by_email(ctx, normalize_email(asked))
            if found is None:
                return HTMLResponse(
                    "<p>No contact has that address: showing nothing.</p>",
                    status_code=404,
                    headers=PREVIEW_HEADERS,
                )
            contact_id = found.id
        await ctx.session.commit()  # the render runs after, with no transaction open
        try:
            rendered = await templates.preview_template(ctx, template_id, contact_id)
        except ApiError as problem:
            return HTMLResponse(
                f"<p>{escape(problem.message)}</p>",
                status_code=problem.status,
                headers=PREVIEW_HEADERS,
            )
        if request.query_params.get("part") == "text":
            body = f"<pre style='white-space:pre-wrap'>{escape(rendered.text)}</pre>"
            return HTMLResponse(body, headers=PREVIEW_HEADERS)
        return HTMLResponse(rendered.html, headers=PREVIEW_HEADERS)

    return await as_visitor(request, work)
