"""How a subscriber page is answered: one look (`pages.css`, no script), no caching, no
referrer, a strict content security policy, in the visitor's language."""

from __future__ import annotations

from pathlib import Path

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from mailroom.pages.i18n import words

PAGES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
)
# Every page: its own inline styles and nothing else (no script at all, forms post back here).
PAGE_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": PAGE_CSP,
    "X-Content-Type-Options": "nosniff",
}


def page(
    lang: str | None,
    title_key: str,
    message_key: str,
    values: dict[str, str] | None = None,
    *,
    status: int = 200,
    action: str | None = None,
    button_key: str = "button",
) -> HTMLResponse:
    code, phrases = words(lang)
    html = PAGES.get_template("page.html").render(
        lang=code,
        title=phrases[title_key],
        message=phrases[message_key].format(**(values or {})),
        button=phrases[button_key],
        action=action,
    )
    return HTMLResponse(html, status_code=status, headers=HEADERS)


def not_found_page(request: Request) -> HTMLResponse:
    lang = request.headers.get("accept-language", "en")[:2]
    return page(lang, "not_found_title", "not_found", status=404)


def confirmation_page(
    lang: str | None, values: dict[str, str], action: str, *, confirmed: bool, expired: bool
) -> HTMLResponse:
    """What a double opt-in link shows (lists and signup forms alike): done, an offer of a new
    email when it expired, or the question with a button (mail scanners open links, so the
    GET itself never confirms)."""
    if confirmed:
        return page(lang, "confirmed_title", "confirmed", values)
    if expired:
        return page(
            lang, "expired_title", "expired", values, action=action, button_key="resend_button"
        )
    return page(
        lang,
        "confirm_title",
        "confirm_question",
        values,
        action=action,
        button_key="confirm_button",
    )
