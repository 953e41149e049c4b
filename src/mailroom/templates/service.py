"""Email templates: a named subject, preheader, HTML and text with merge tags. Saving checks
sizes and syntax; previewing renders as one contact (or sample values) would receive it, with
the same compiled form and budgets as a send (`templates.render`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from sqlalchemy import select

from mailroom.contacts import service as contacts
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.custom_fields import service as custom_fields
from mailroom.models import Template, Workspace
from mailroom.named import Named
from mailroom.templates.render import (
    FIELDS,
    Rendered,
    RenderError,
    compile_cached,
    compile_template,
    merge_context,
    syntax_error,
)

MAX_NAME = 100
LIMITS = {"subject": 200, "preheader": 200, "html_content": 500_000, "text_content": 200_000}
TOO_LARGE = frozenset({"html_content", "text_content"})  # 413, as the spec's body limits
TEMPLATES = Named(Template, "template", MAX_NAME, newest_first=True)
# Checking syntax compiles the part: off the event loop past this size (a 500,000-character
# HTML part takes a good fraction of a second).
INLINE_CHECK_CHARS = 20_000


def check_part(name: str, value: Any) -> str:
    """One of subject, preheader, html_content, text_content as sent: a string within its
    limit (400, or 413 for the HTML and text as the spec's body limits); null is empty.
    Campaigns check their content with it too."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ApiError(400, f"{name} must be a string")
    limit = LIMITS[name]
    if len(value) > limit:
        raise ApiError(
            413 if name in TOO_LARGE else 400, f"{name} must be {limit:,} characters or fewer"
        )
    return value


def _first_syntax_error(parts: dict[str, str]) -> str | None:
    for name in FIELDS:
        if parts.get(name):
            message = syntax_error(name, parts[name])
            if message:
                return message
    return None


async def check_syntax(parts: dict[str, str]) -> None:
    """400 `Template syntax error in <field>, line <n>: <what>` for the first part (subject,
    preheader, html_content, text_content) that does not compile. Call it before any
    database work, so that no connection is held while it compiles."""
    if sum(len(v) for v in parts.values()) > INLINE_CHECK_CHARS:
        message = await asyncio.to_thread(_first_syntax_error, parts)
    else:
        message = _first_syntax_error(parts)
    if message:
        raise ApiError(400, message)


async def get_template(ctx: Context, template_id: str) -> Template:
    return await TEMPLATES.get(ctx, template_id)


async def create_template(ctx: Context, body: dict[str, Any]) -> Template:
    TEMPLATES.clean_name(body.get("name"))  # its 400 first
    parts = {name: check_part(name, body.get(name)) for name in FIELDS}
    await check_syntax(parts)
    name = await TEMPLATES.claim_name(ctx, body.get("name"))
    return await TEMPLATES.create(ctx, name, **parts)


async def update_template(ctx: Context, template_id: str, changes: dict[str, Any]) -> Template:
    if not changes:
        await get_template(ctx, template_id)  # an unknown id is 404 whatever the body
        raise ApiError(400, "No updatable fields provided")
    if "name" in changes:
        TEMPLATES.clean_name(changes["name"])
    parts = {name: check_part(name, changes[name]) for name in FIELDS if name in changes}
    await check_syntax(parts)
    template = await get_template(ctx, template_id)
    if "name" in changes:
        await TEMPLATES.rename(ctx, template, changes["name"])
    for name, value in parts.items():
        setattr(template, name, value)
    TEMPLATES.touch(template)
    await TEMPLATES.flush(ctx)
    return template


async def delete_template(ctx: Context, template_id: str) -> None:
    template = await get_template(ctx, template_id)
    await TEMPLATES.delete(ctx, template)


async def list_templates(
    ctx: Context, page: PageParams, q: str | None
) -> tuple[list[Template], int]:
    return await TEMPLATES.page(ctx, page, q=q)


def as_dict(template: Template) -> dict[str, Any]:
    return {
        "id": template.id,
        "name": template.name,
        "subject": template.subject,
        "preheader": template.preheader,
        "html_content": template.html_content,
        "text_content": template.text_content,
        "created_at": template.created_at,
        "updated_at": template.updated_at,
    }


# ---------------------------------------------------------------- preview


@dataclass(frozen=True)
class Recipient:
    """What a render needs of a contact, copied out of the session before it is released."""

    email: str
    first_name: str
    last_name: str
    custom_fields: dict[str, Any] = field(default_factory=dict)


def _sample_value(kind: str, label: str, options: list[str] | None) -> Any:
    if kind == "number":
        return 42
    if kind == "boolean":
        return True
    if kind == "date":
        return date.today().isoformat()
    if kind == "dropdown" and options:
        return options[0]
    return label


async def _sample_recipient(ctx: Context) -> Recipient:
    """Jane Doe, with a plausible value for each field of the registry."""
    registry = await custom_fields.registry(ctx)
    values = {key: _sample_value(f.type, f.label, f.options) for key, f in sorted(registry.items())}
    return Recipient("jane.doe@example.com", "Jane", "Doe", values)


def preview_links(public_url: str) -> dict[str, str]:
    """Stand-ins for the per-recipient links a send signs (the subscriber pages come with the
    sending engine)."""
    base = public_url.rstrip("/")
    return {
        "unsubscribe_url": f"{base}/preview/unsubscribe",
        "preferences_url": f"{base}/preview/preferences",
        "webview_url": f"{base}/preview/webview",
    }


def _render(key: Any, parts: tuple[str, str, str, str], context: dict[str, Any]) -> Rendered:
    # A draft (key None) changes at every keystroke: compiled afresh, kept out of the cache
    # the sends share.
    compiled = compile_template(*parts) if key is None else compile_cached(key, *parts)
    return compiled.render(context)


async def preview_template(ctx: Context, template_id: str, contact_id: Any) -> Rendered:
    """The message as the contact (or sample values) would receive it. A read: 422 with the
    reason when this render fails (time or size budget, recursion, an error in the
    template), never a 500."""
    if contact_id is not None and not isinstance(contact_id, str):
        raise ApiError(400, "contact_id must be a string")
    template = await get_template(ctx, template_id)
    key = (template.id, template.updated_at)
    parts = (template.subject, template.preheader, template.html_content, template.text_content)
    return await preview_parts(ctx, parts, contact_id, key)


async def preview_draft(ctx: Context, parts: dict[str, str], contact_id: str | None) -> Rendered:
    """Content not saved (the dashboard's editor as it is typed), rendered as the preview is:
    a syntax error or a failed render is the same 422."""
    texts = [check_part(name, str(parts.get(name) or "")) for name in FIELDS]
    return await preview_parts(ctx, (texts[0], texts[1], texts[2], texts[3]), contact_id, None)


async def preview_parts(
    ctx: Context,
    parts: tuple[str, str, str, str],
    contact_id: str | None,
    key: Any,
    *,
    variables: dict[str, Any] | None = None,
) -> Rendered:
    if contact_id:
        contact = await contacts.get_contact(ctx, contact_id)
        recipient = Recipient(
            contact.email,
            contact.first_name or "",
            contact.last_name or "",
            dict(contact.custom_fields or {}),
        )
    else:
        recipient = await _sample_recipient(ctx)
    workspace_name = await ctx.session.scalar(
        select(Workspace.name).where(Workspace.id == ctx.workspace_id)
    )
    # Reads done: release the connection before compiling and rendering (CPU, up to the
    # render's time budget), which run off the event loop.
    await ctx.session.rollback()
    links = preview_links(ctx.settings.public_url)
    context = merge_context(
        recipient,
        workspace_name=workspace_name or "",
        unsubscribe_url=links["unsubscribe_url"],
        preferences_url=links["preferences_url"],
        webview_url=links["webview_url"],
        variables=variables,
    )
    try:
        return await asyncio.to_thread(_render, key, parts, context)
    except RenderError as error:
        raise ApiError(422, str(error)) from None
