"""Subscriber pages: `GET /u/{token}` asks, `POST /u/{token}` unsubscribes (also RFC 8058
one-click: a POST with `List-Unsubscribe=One-Click`, no cookie, no redirect)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from mailroom.pages import service
from mailroom.pages.i18n import words
from mailroom.pages.webview import webview
from mailroom.web.deps import get_db, get_settings_dep

router = APIRouter(include_in_schema=False)
_PAGES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
)
HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def _page(
    lang: str | None,
    title_key: str,
    message_key: str,
    values: dict[str, str] | None = None,
    *,
    status: int = 200,
    action: str | None = None,
) -> HTMLResponse:
    code, phrases = words(lang)
    html = _PAGES.get_template("page.html").render(
        lang=code,
        title=phrases[title_key],
        message=phrases[message_key].format(**(values or {})),
        button=phrases["button"],
        action=action,
    )
    return HTMLResponse(html, status_code=status, headers=HEADERS)


def not_found_page(request: Request) -> HTMLResponse:
    lang = request.headers.get("accept-language", "en")[:2]
    return _page(lang, "not_found_title", "not_found", status=404)


@router.get("/u/{token}")
async def unsubscribe_page(token: str, request: Request) -> HTMLResponse:
    found = await service.look(get_db(request), get_settings_dep(request), token)
    if found is None:
        return not_found_page(request)
    values = {"email": found.email, "workspace": found.workspace_name or "us"}
    if found.status != "subscribed":
        return _page(found.language, "done_title", "already", values)
    return _page(found.language, "title", "question", values, action=f"/u/{token}")


@router.post("/u/{token}")
async def unsubscribe(token: str, request: Request) -> HTMLResponse:
    done = await service.unsubscribe(get_db(request), get_settings_dep(request), token)
    if done is None:
        return not_found_page(request)
    found, already = done
    values = {"email": found.email, "workspace": found.workspace_name or "us"}
    return _page(found.language, "done_title", "already" if already else "done", values)


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
