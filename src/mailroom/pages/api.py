"""Subscriber pages (no key, `text/html`, in the contact's language, no script):
`/u/{token}` unsubscribe (also RFC 8058 one-click: a POST with `List-Unsubscribe=One-Click`,
no cookie, no redirect), `/confirm/{token}` double opt-in, `/p/{token}` preferences and
`/v/{token}` the web view."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from mailroom.core.errors import ApiError
from mailroom.lists import confirmation
from mailroom.pages import preferences, service
from mailroom.pages.i18n import LANGUAGES, words
from mailroom.pages.render import HEADERS, PAGES, confirmation_page, not_found_page, page
from mailroom.pages.webview import webview
from mailroom.web.deps import get_db, get_settings_dep

router = APIRouter(include_in_schema=False)


@router.get("/u/{token}")
async def unsubscribe_page(token: str, request: Request) -> HTMLResponse:
    found = await service.look(get_db(request), get_settings_dep(request), token)
    if found is None:
        return not_found_page(request)
    values = {"email": found.email, "workspace": found.workspace_name or "us"}
    if found.status != "subscribed":
        return page(found.language, "done_title", "already", values)
    return page(found.language, "title", "question", values, action=f"/u/{token}")


@router.post("/u/{token}")
async def unsubscribe(token: str, request: Request) -> HTMLResponse:
    done = await service.unsubscribe(get_db(request), get_settings_dep(request), token)
    if done is None:
        return not_found_page(request)
    found, already = done
    values = {"email": found.email, "workspace": found.workspace_name or "us"}
    return page(found.language, "done_title", "already" if already else "done", values)


# The message's own styles and images (https or inline data) and nothing else: no script, no
# form, no frame.
WEBVIEW_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src https: http: data:; "
    "font-src https: data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


@router.get("/v/{token}")
async def message_webview(token: str, request: Request) -> HTMLResponse:
    found = await webview(get_db(request), get_settings_dep(request), token)
    if found is None:
        return not_found_page(request)
    return HTMLResponse(found.html, headers={**HEADERS, "Content-Security-Policy": WEBVIEW_CSP})


# ---------------------------------------------------------------- double opt-in


@router.get("/confirm/{token}")
async def confirm_page(token: str, request: Request) -> HTMLResponse:
    pending = confirmation.read_token(get_settings_dep(request), token)
    found = await confirmation.look(get_db(request), pending) if pending else None
    if pending is None or found is None:
        return not_found_page(request)
    values = {"email": found.email, "list": found.list_name, "workspace": found.workspace_name}
    return confirmation_page(
        found.language,
        values,
        f"/confirm/{token}",
        confirmed=found.status == "confirmed",
        expired=pending.expired,
    )


@router.post("/confirm/{token}")
async def confirm_subscription(token: str, request: Request) -> HTMLResponse:
    settings, db = get_settings_dep(request), get_db(request)
    pending = confirmation.read_token(settings, token)
    found = await confirmation.look(db, pending) if pending else None
    if pending is None or found is None:
        return not_found_page(request)
    values = {"email": found.email, "list": found.list_name, "workspace": found.workspace_name}
    if found.status != "confirmed" and pending.expired:
        try:
            await confirmation.resend(db, settings, pending)
        except ApiError:
            return page(found.language, "expired_title", "expired", values, status=409)
        return page(found.language, "expired_title", "resent", values)
    if found.status != "confirmed":
        await confirmation.confirm(db, settings, pending)
    return page(found.language, "confirmed_title", "confirmed", values)


# ---------------------------------------------------------------- preferences


def _preferences_page(
    token: str,
    found: preferences.Preferences,
    *,
    notice: str = "",
    error: str = "",
    status: int = 200,
) -> HTMLResponse:
    code, phrases = words(found.language)
    html = PAGES.get_template("prefs.html").render(
        lang=code,
        t=phrases,
        intro=phrases["prefs_intro"].format(workspace=found.workspace_name, email=found.email),
        lists=found.lists,
        first_name=found.first_name,
        last_name=found.last_name,
        languages=list(LANGUAGES.items()),
        action=f"/p/{token}",
        notice=notice,
        error=error,
    )
    return HTMLResponse(html, status_code=status, headers=HEADERS)


@router.get("/p/{token}")
async def preferences_page(token: str, request: Request) -> HTMLResponse:
    found = await preferences.look(get_db(request), get_settings_dep(request), token)
    if found is None:
        return not_found_page(request)
    return _preferences_page(token, found)


@router.post("/p/{token}")
async def save_preferences(token: str, request: Request) -> HTMLResponse:
    raw = await request.form()
    form: dict[str, object] = {
        key: raw.getlist(key) if key == "list" else str(raw.get(key) or "") for key in raw
    }
    db, settings = get_db(request), get_settings_dep(request)
    try:
        found = await preferences.save(db, settings, token, form)
    except ApiError as problem:
        current = await preferences.look(db, settings, token)
        if current is None:
            return not_found_page(request)
        return _preferences_page(token, current, error=problem.message, status=400)
    if found is None:
        return not_found_page(request)
    if form.get("action") == "unsubscribe_all":
        values = {"email": found.email, "workspace": found.workspace_name or "us"}
        return page(found.language, "done_title", "done", values)
    return _preferences_page(token, found, notice=words(found.language)[1]["saved"])
