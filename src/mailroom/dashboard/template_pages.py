"""Templates (`/app/templates`): the list, an editor for the subject, preheader, HTML and text
with the merge tags explained, the media library beside it (pick an image to insert or copy
its address; upload there too), and a preview as a chosen contact (or sample values) at
desktop and phone width that follows the draft as it is typed. Saving goes through
`templates.service` (its name rules and syntax check); the previews are its
`preview_template` (the saved version: the frames' first page, and all there is without
script) and `preview_draft` (the editor's content, posted into the frames by app.js).

A preview is its own document in a sandboxed frame: email HTML needs inline styles and
remote images, which the dashboard's own policy forbids, and the sandbox runs no script.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import escape
from starlette.datastructures import UploadFile

from mailroom.contacts import service as contacts
from mailroom.core.context import Context
from mailroom.core.emails import normalize_email
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.dashboard import render
from mailroom.dashboard.frame import (
    Visitor,
    as_visitor,
    audit_write,
    local_path,
    refused,
    reread,
    undo,
    when,
)
from mailroom.media import service as media
from mailroom.people import sessions
from mailroom.templates import service as templates
from mailroom.templates.render import Rendered

router = APIRouter(include_in_schema=False)
PATH = "/app/templates"
PARTS = ("subject", "preheader", "html_content", "text_content")
LIBRARY_SHOWN = 24
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


async def _library(ctx: Context) -> dict[str, Any]:
    """The newest images of the media library, for the editor's picker."""
    shown = await media.library(ctx)
    shown["files"] = shown["files"][:LIBRARY_SHOWN]
    return shown


def _with_images(library: dict[str, Any]) -> dict[str, str]:
    """The page's policy, letting the library's thumbnails load from where they are hosted."""
    origins = {
        urlsplit(f["url"])._replace(path="", query="", fragment="").geturl()
        for f in library["files"]
    }
    if not origins:
        return {}
    sources = " ".join(sorted(o for o in origins if o.startswith(("http://", "https://"))))
    return {
        "Content-Security-Policy": render.CSP.replace(
            "img-src 'self' data:", f"img-src 'self' data: {sources}"
        )
    }


async def _editor(
    visitor: Visitor,
    ctx: Context,
    draft: dict[str, Any],
    *,
    template_id: str = "",
    status: int = 200,
    preview_as: str = "",
) -> Response:
    library = await _library(ctx)
    return render.page(
        "template.html",
        status=status,
        headers=_with_images(library),
        title=draft.get("name") or "New template",
        section="templates",
        visitor=visitor,
        draft=draft,
        template_id=template_id,
        merge_tags=MERGE_TAGS,
        preview_as=preview_as,
        library=library,
        flashes=sessions.take_flash(visitor.row),
    )


@router.get(f"{PATH}/new")
async def new_template(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return await _editor(visitor, ctx, {"name": "", **dict.fromkeys(PARTS, "")})

    return await as_visitor(request, work)


@router.get(f"{PATH}/{{template_id}}")
async def template_page(template_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        template = templates.as_dict(await templates.get_template(ctx, template_id))
        preview_as = (request.query_params.get("as") or "").strip()
        return await _editor(visitor, ctx, template, template_id=template_id, preview_as=preview_as)

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
            return await _editor(
                visitor, ctx, draft, template_id=template_id, status=problem.status
            )
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


async def preview_document(ctx: Context, request: Request, asked: str, make: Any) -> Response:
    """A preview frame's document: `make(contact_id)` renders; as the contact with the
    address `asked` (empty: sample values); the text version in a <pre> when asked."""
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
        rendered: Rendered = await make(contact_id)
    except ApiError as problem:
        return HTMLResponse(
            f"<p>{escape(problem.message)}</p>", status_code=problem.status, headers=PREVIEW_HEADERS
        )
    if request.query_params.get("part") == "text":
        body = f"<pre style='white-space:pre-wrap'>{escape(rendered.text)}</pre>"
        return HTMLResponse(body, headers=PREVIEW_HEADERS)
    return HTMLResponse(rendered.html, headers=PREVIEW_HEADERS)


@router.get(f"{PATH}/{{template_id}}/preview")
async def preview_template(template_id: str, request: Request) -> Response:
    """The saved template rendered, as the contact named by `as`."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        asked = (request.query_params.get("as") or "").strip()
        return await preview_document(
            ctx,
            request,
            asked,
            lambda contact_id: templates.preview_template(ctx, template_id, contact_id),
        )

    return await as_visitor(request, work)


@router.post(f"{PATH}/draft-preview")
async def preview_draft(request: Request) -> Response:
    """The editor's content as it is now (not saved), posted into a preview frame."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        parts = {part: str(form.get(part) or "") for part in PARTS}
        return await preview_document(
            ctx,
            request,
            str(form.get("as") or "").strip(),
            lambda contact_id: templates.preview_draft(ctx, parts, contact_id),
        )

    return await as_visitor(request, work)


@router.post(f"{PATH}/media")
async def upload_image(request: Request) -> Response:
    """An image into the media library from the editor: the library again in place (htmx),
    or back to the editor with a note."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        back = str(form.get("back") or "")
        back = back if back.startswith(f"{PATH}/") and local_path(back) == back else PATH
        file = form.get("file")
        problem, uploaded = None, ""
        if not isinstance(file, UploadFile) or not file.filename:
            problem = "Choose an image to upload."
        else:
            try:
                made = await media.upload(ctx, await file.read(media.MAX_BYTES + 1), file.filename)
            except ApiError as refusal:
                await undo(ctx.session, visitor)
                problem = refusal.message
            else:
                await reread(ctx.session, visitor)  # the upload let go of the transaction
                uploaded = made["file"]["name"]
                audit_write(ctx, request, "upload_media", made["file"]["id"], 201)
        if request.headers.get("HX-Request"):
            library = await _library(ctx)
            return render.page(
                "media_picker.html",
                headers=_with_images(library),
                library=library,
                visitor=visitor,
                back=back,
                problem=problem,
                uploaded=uploaded,
            )
        if problem:
            sessions.flash(visitor.row, "error", problem)
        else:
            sessions.flash(visitor.row, "ok", f"Image “{uploaded}” uploaded.")
        return RedirectResponse(back, status_code=303)

    return await as_visitor(request, work)
