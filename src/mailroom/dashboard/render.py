"""How a dashboard page is answered: one stylesheet and one small script (served with a
content hash in their names, cached for a year), no inline script or style, nothing cached,
not framed."""

from __future__ import annotations

import hashlib
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from mailroom.dashboard.segment_form import op_label
from mailroom.ecommerce.values import money_shown
from mailroom.sending.messages import outbox_dir

_HERE = Path(__file__).parent
STATIC = _HERE / "static"
CSP = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": CSP,
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}


@cache
def fingerprint(name: str) -> str:
    """`app.css` -> `app.3f2a9c1d.css`: a new name whenever the file changes."""
    digest = hashlib.sha256((STATIC / name).read_bytes()).hexdigest()[:10]
    stem, _, suffix = name.rpartition(".")
    return f"{stem}.{digest}.{suffix}"


def static_url(name: str) -> str:
    return f"/static/{fingerprint(name)}"


def static_file(fingerprinted: str) -> Path | None:
    """The file a fingerprinted name stands for (None: no such file or an old name)."""
    for path in STATIC.iterdir():
        if fingerprint(path.name) == fingerprinted:
            return path
    return None


_ENV = Environment(
    loader=FileSystemLoader(_HERE / "templates"),
    autoescape=select_autoescape(["html"]),
)
_ENV.globals["static"] = static_url
_ENV.filters["op_label"] = op_label
_ENV.filters["money"] = lambda figures: money_shown(figures["total"], figures["currency"])


# The outbox folder while this installation has no SMTP relay (mail is only written there),
# else None: base.html's banner says so on every signed-in page. Set for each dashboard
# request by `note_delivery` (app.py adds it to the dashboard's routers); a context variable
# because pages render without the request.
OUTBOX: ContextVar[str | None] = ContextVar("dashboard_outbox", default=None)


async def note_delivery(request: Request) -> None:
    settings = request.app.state.settings
    OUTBOX.set(None if settings.smtp_url else str(outbox_dir(settings).resolve()))


def page(
    template: str, status: int = 200, headers: dict[str, str] | None = None, **values: Any
) -> HTMLResponse:
    values.setdefault("outbox", OUTBOX.get())
    html = _ENV.get_template(template).render(**values)
    return HTMLResponse(html, status_code=status, headers={**HEADERS, **(headers or {})})


def message(title: str, text: str, status: int, **values: Any) -> HTMLResponse:
    return page("message.html", status=status, title=title, message=text, **values)
