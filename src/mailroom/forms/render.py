"""A form as HTML: the hosted page (`/f/{id}`, in one of the form's languages) and the
snippet to embed elsewhere. Both use the same inputs (`templates/fields.html`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

from mailroom.forms.service import Field
from mailroom.pages.i18n import words

_HERE = Path(__file__).parent
_ENV = Environment(
    loader=FileSystemLoader([_HERE / "templates", _HERE.parent / "pages" / "templates"]),
    autoescape=select_autoescape(["html"]),
)


def choose_language(languages: list[str], requested: str | None, accept: str | None) -> str:
    """`?lang=` when the form has it, else the first of the browser's languages it has, else
    the form's first language."""
    if requested and requested.lower() in languages:
        return requested.lower()
    for part in (accept or "").split(","):
        code = part.split(";")[0].strip().lower()[:2]
        if code in languages:
            return code
    return languages[0] if languages else "en"


def page(
    *,
    lang: str,
    title: str,
    action: str,
    fields: list[Field],
    consent_text: str | None,
    values: dict[str, Any] | None = None,
    errors: dict[str, str] | None = None,
    message: str | None = None,
) -> str:
    code, t = words(lang)
    return _ENV.get_template("form_page.html").render(
        lang=code,
        t=t,
        title=title,
        action=action,
        fields=fields,
        consent_text=consent_text,
        values=values or {},
        errors=errors or {},
        message=message,
    )


def embed(
    *, name: str, lang: str, action: str, fields: list[Field], consent_text: str | None
) -> str:
    _, t = words(lang)
    return (
        _ENV.get_template("embed.html")
        .render(
            name=name,
            t=t,
            action=action,
            fields=fields,
            consent_text=consent_text,
            prefix=f"{action.rsplit('/', 1)[-1][:8]}-",  # ids unique beside another embed
        )
        .strip()
        + "\n"
    )
