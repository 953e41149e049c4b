from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from mailroom.core.context import Context
from mailroom.core.pagination import Pagination
from mailroom.custom_fields import service as custom_fields
from mailroom.forms import render, service
from mailroom.forms.schemas import (
    EmbedEnvelope,
    FormCreate,
    FormDeleted,
    FormEnvelope,
    FormList,
    FormUpdate,
)
from mailroom.models import Form
from mailroom.web.deps import Paging, set_audit_target, use
from mailroom.web.openapi import errors

router = APIRouter(prefix="/api/v1/forms", tags=["Forms"])

PUBLIC = (
    "The hosted page is `GET /f/{id}`; `POST /f/{id}` (no key) takes form-encoded or JSON "
    "submissions (fields by key, the honeypot `hp` empty), answers JSON `{ok: true, "
    "double_opt_in}` or, form-encoded, 303 to `redirect_url` or a page with the success "
    "message; the same whether the address was known or not."
)


async def _many(ctx: Context, forms: list[Form]) -> list[dict[str, Any]]:
    registry = await custom_fields.registry(ctx)
    counts = await service.submission_counts(ctx, [f.id for f in forms])
    return [{**service.as_dict(ctx, f, registry), "stats": counts[f.id]} for f in forms]


async def _one(ctx: Context, form: Form) -> dict[str, Any]:
    return {"form": (await _many(ctx, [form]))[0]}


@router.get(
    "",
    response_model=FormList,
    summary="List signup forms",
    description="Newest first, with each one's submission counts.",
    responses=errors(400),
)
async def list_forms(
    ctx: Annotated[Context, use("forms:read")],
    paging: Paging,
    q: Annotated[str | None, Query(description="Case-insensitive substring of the name.")] = None,
) -> dict[str, Any]:
    rows, total = await service.list_forms(ctx, paging, q)
    return {"forms": await _many(ctx, rows), "pagination": Pagination.of(paging, total)}


@router.post(
    "",
    status_code=201,
    response_model=FormEnvelope,
    summary="Create a signup form",
    description=f"Fields by key: email (always), first/last name, registered custom fields "
    f"(their type and options come from the registry). {PUBLIC}",
    responses=errors(400, 409, e409="A form with this name already exists"),
)
async def create_form(
    body: FormCreate, request: Request, ctx: Annotated[Context, use("forms:write")]
) -> dict[str, Any]:
    form = await service.create_form(ctx, body.model_dump(exclude_unset=True))
    set_audit_target(request, form.id)
    return await _one(ctx, form)


@router.get(
    "/{id}", response_model=FormEnvelope, summary="Get a signup form", responses=errors(404)
)
async def get_form(id: str, ctx: Annotated[Context, use("forms:read")]) -> dict[str, Any]:
    return await _one(ctx, await service.get_form(ctx, id))


@router.patch(
    "/{id}",
    response_model=FormEnvelope,
    summary="Change a signup form",
    description="Pending confirmations keep the lists they were made for.",
    responses=errors(400, 404, 409),
)
async def update_form(
    id: str, body: FormUpdate, ctx: Annotated[Context, use("forms:write")]
) -> dict[str, Any]:
    form = await service.update_form(ctx, id, body.model_dump(exclude_unset=True))
    return await _one(ctx, form)


@router.delete(
    "/{id}",
    response_model=FormDeleted,
    summary="Delete a signup form",
    description="Its page and submissions answer 404 from now on; links in confirmation "
    "emails not yet answered stop working. Contacts it brought in stay.",
    responses=errors(404),
)
async def delete_form(id: str, ctx: Annotated[Context, use("forms:write")]) -> dict[str, Any]:
    await service.delete_form(ctx, id)
    return {"success": True, "id": id}


@router.get(
    "/{id}/embed",
    response_model=EmbedEnvelope,
    summary="Get a form's embed code",
    description="A plain HTML form (no script) posting to the hosted page, to paste into a "
    "site. `lang`: one of the form's languages (default its first).",
    responses=errors(404),
)
async def get_form_embed(
    id: str,
    ctx: Annotated[Context, use("forms:read")],
    lang: Annotated[str | None, Query(description="One of the form's languages.")] = None,
) -> dict[str, Any]:
    form = await service.get_form(ctx, id)
    code = render.choose_language(form.languages, lang, None)
    fields = service.shown_fields(form, await custom_fields.registry(ctx))
    html = render.embed(
        name=form.name,
        lang=code,
        # The answer pages (errors, thanks) speak the embed's language.
        action=f"{ctx.settings.public_url.rstrip('/')}/f/{form.id}?lang={code}",
        fields=fields,
        consent_text=form.consent_text,
    )
    return {"embed": {"html": html}}
