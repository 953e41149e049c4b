"""The public side of a signup form (no key): the hosted page `GET /f/{id}`, submissions
`POST /f/{id}` (form-encoded from the page or an embed, or JSON from a site's script, with
CORS), and the confirmation link `/f/confirm/{token}`.

Every answer is the same whether the address was new, known, unsubscribed or bounced.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from mailroom.core.errors import ApiError
from mailroom.forms import confirming, render, submission
from mailroom.forms.service import Field
from mailroom.models import Form
from mailroom.pages.i18n import words
from mailroom.pages.render import HEADERS, PAGE_CSP, confirmation_page, not_found_page, page
from mailroom.web.deps import get_db, get_settings_dep

router = APIRouter(include_in_schema=False)

# Embeds post from other sites: any origin may submit (the rate limit and honeypot guard it).
CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "Content-Type",
    "Access-Control-Max-Age": "86400",
}
NOT_JSON_OBJECT = "Body must be a JSON object"


def _page_headers(form: Form) -> dict[str, str]:
    """A form page may post back here and, after a redirect, land on the form's redirect URL
    (browsers apply `form-action` to the redirect too)."""
    csp = PAGE_CSP
    if form.redirect_url:
        parts = urlsplit(form.redirect_url)
        csp = csp.replace(
            "form-action 'self'", f"form-action 'self' {parts.scheme}://{parts.netloc}"
        )
    # Unlike the other subscriber pages, a form may be shown in a frame on the owner's site.
    csp = csp.replace("; frame-ancestors 'none'", "")
    return {**HEADERS, **CORS, "Content-Security-Policy": csp}


def _form_page(
    form: Form,
    fields: list[Field],
    lang: str,
    *,
    values: dict[str, Any] | None = None,
    errors: dict[str, str] | None = None,
    message: str | None = None,
    title: str | None = None,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    html = render.page(
        lang=lang,
        title=title or form.name,
        action=f"/f/{form.id}?lang={lang}",
        fields=fields,
        consent_text=form.consent_text,
        values=values,
        errors=errors,
        message=message,
    )
    return HTMLResponse(
        html, status_code=status, headers={**_page_headers(form), **(headers or {})}
    )


def _client_ip(request: Request) -> str:
    return request.client.host if request.client else "unknown"


@router.get("/f/{form_id}")
async def form_page(form_id: str, request: Request) -> Response:
    found = await submission.load_public(get_db(request), get_settings_dep(request), form_id)
    if found is None:
        return not_found_page(request)
    form, fields = found.form, found.fields
    lang = render.choose_language(
        form.languages, request.query_params.get("lang"), request.headers.get("accept-language")
    )
    return _form_page(form, fields, lang)


@router.options("/f/{form_id}")
async def form_preflight(form_id: str) -> Response:
    return Response(status_code=204, headers={**CORS, "Allow": "GET, POST, OPTIONS"})


async def _read_body(request: Request) -> tuple[dict[str, Any], bool]:
    """(the submitted fields, whether the caller speaks JSON)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/json" or kind.endswith("+json"):
        try:
            data = json.loads(await request.body() or b"null")
        except ValueError:
            raise ApiError(400, NOT_JSON_OBJECT) from None
        if not isinstance(data, dict):
            raise ApiError(400, NOT_JSON_OBJECT)
        return data, True
    raw = await request.form()
    return {key: raw.get(key) for key in raw if isinstance(raw.get(key), str)}, False


@router.post("/f/{form_id}")
async def submit_form(form_id: str, request: Request) -> Response:
    db, settings = get_db(request), get_settings_dep(request)
    try:
        data, wants_json = await _read_body(request)
    except ApiError as problem:
        return JSONResponse({"error": problem.message}, problem.status, headers=CORS)

    def language(languages: list[str]) -> str:
        return render.choose_language(
            languages, request.query_params.get("lang"), request.headers.get("accept-language")
        )

    try:
        done = await submission.handle(
            db, settings, form_id, data, ip=_client_ip(request), choose_language=language
        )
    except ApiError as problem:  # a plan cap, sending not set up: nothing was kept
        found = await submission.load_public(db, settings, form_id)
        if wants_json or found is None:
            return JSONResponse(
                {"error": problem.message}, problem.status, headers={**CORS, **problem.headers}
            )
        lang = language(found.form.languages)
        message = words(lang)[1]["form_unavailable"]
        return _form_page(found.form, found.fields, lang, message=message, status=problem.status)
    if done.public is None:
        if wants_json:
            return JSONResponse({"error": submission.FORM_NOT_FOUND}, 404, headers=CORS)
        return not_found_page(request)
    form, fields, lang = done.public.form, done.public.fields, done.language
    _, t = words(lang)
    if done.wait:
        limited = {**CORS, "Retry-After": str(done.wait)}
        if wants_json:
            message = f"Too many submissions from this address. Try again in {done.wait} seconds."
            return JSONResponse({"error": message}, 429, headers=limited)
        return _form_page(
            form,
            fields,
            lang,
            title=t["form_limited_title"],
            message=t["form_limited"],
            status=429,
            headers=limited,
        )
    if done.errors:
        if wants_json:
            return JSONResponse({"error": next(iter(done.errors.values()))}, 400, headers=CORS)
        values = {k: v for k, v in data.items() if isinstance(v, str) and k != "hp"}
        return _form_page(form, fields, lang, values=values, errors=done.errors, status=400)
    assert done.accepted is not None
    if wants_json:
        return JSONResponse(
            {"ok": True, "double_opt_in": done.accepted.double_opt_in}, headers=CORS
        )
    if form.redirect_url:
        return RedirectResponse(form.redirect_url, status_code=303, headers=CORS)
    message = form.success_message or (
        t["form_check_email"] if done.accepted.double_opt_in else t["form_thanks"]
    )
    return _form_page(form, fields, lang, title=t["form_thanks_title"], message=message)


# ---------------------------------------------------------------- confirming by email


def _confirm_values(shown: confirming.Shown) -> dict[str, str]:
    _, t = words(shown.language)
    return {
        "email": shown.email,
        "list": shown.what or t["form_everything"],
        "workspace": shown.workspace_name,
    }


@router.get("/f/confirm/{token}")
async def form_confirm_page(token: str, request: Request) -> HTMLResponse:
    settings, db = get_settings_dep(request), get_db(request)
    pending = confirming.read_token(settings, token)
    shown = await confirming.look(db, pending) if pending else None
    if pending is None or shown is None:
        return not_found_page(request)
    return confirmation_page(
        shown.language,
        _confirm_values(shown),
        f"/f/confirm/{token}",
        confirmed=shown.confirmed,
        expired=pending.expired,
    )


@router.post("/f/confirm/{token}")
async def confirm_form_submission(token: str, request: Request) -> HTMLResponse:
    settings, db = get_settings_dep(request), get_db(request)
    pending = confirming.read_token(settings, token)
    shown = await confirming.look(db, pending) if pending else None
    if pending is None or shown is None:
        return not_found_page(request)
    values = _confirm_values(shown)
    if not shown.confirmed and pending.expired:
        try:
            await confirming.resend(db, settings, pending)
        except ApiError:
            return page(shown.language, "expired_title", "expired", values, status=409)
        return page(shown.language, "expired_title", "resent", values)
    if not shown.confirmed:
        try:
            await confirming.confirm(db, settings, pending)
        except ApiError as problem:
            return page(
                shown.language, "confirm_title", "form_unavailable", values, status=problem.status
            )
    return page(shown.language, "confirmed_title", "confirmed", values)
