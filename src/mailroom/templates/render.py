"""Rendering a template for one recipient: compiled ONCE per template (or campaign), rendered
cheaply per recipient. The sending engine uses this module as it is:

    compiled = compile_template(subject, preheader, html_content, text_content)  # once
    for contact in batch:
        context = merge_context(contact, workspace_name=..., unsubscribe_url=..., ...)
        try:
            rendered = compiled.render(context)  # Rendered(subject, preheader, html, text)
        except RenderError as error:  # this recipient only: error.reason says why
            ...

`compile_cached(key, ...)` keeps the last compiled forms by a key such as
(template id, updated_at). Rendering is CPU work (tens of microseconds; a hostile template up
to its one-second budget): run batches off the event loop, and hold no database connection
meanwhile.

What compiling does, once:
- each part is compiled by Jinja in the sandbox (`templates.sandbox`): HTML autoescaped,
  subject, preheader and text not;
- `<style>` rules are inlined into the HTML (`templates.inline`);
- the preheader goes at the top of the body, in a hidden block padded so that clients do not
  pull body text into the inbox preview;
- an empty text part is derived from the HTML TEMPLATE (`templates.htmltext` run over the
  source with its tags held aside, then compiled), so merge tags stay merge tags and no
  recipient pays for an HTML-to-text conversion. When the HTML marks values safe (`|safe`:
  markup known only once rendered) or the derived template does not compile, the text is
  instead derived from each rendered HTML, correct and slower.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from jinja2 import Template, TemplateError, TemplateSyntaxError, nodes
from markupsafe import Markup, escape

from mailroom.templates import budget as budgets
from mailroom.templates.budget import DEFAULT_LIMITS, BudgetExceeded, Limits
from mailroom.templates.htmltext import html_to_text
from mailroom.templates.inline import has_style, inline_css
from mailroom.templates.sandbox import MergeEnvironment, Record, as_record
from mailroom.templates.source import Split, literal, split

HTML_ENV = MergeEnvironment(autoescape=True)
TEXT_ENV = MergeEnvironment(autoescape=False)
# A derived text part: a tag alone on its line takes the line with it (trim/lstrip blocks).
DERIVED_TEXT_ENV = MergeEnvironment(autoescape=False, trim_blocks=True)

FIELDS = ("subject", "preheader", "html_content", "text_content")
PREHEADER = "mailroom_preheader"  # the variable the HTML's hidden preheader block reads
# Hidden by display and size only: spam filters score text made invisible by a tiny font, a
# transparent colour or zero opacity (SpamAssassin's FONT_INVIS_MSGID, HTML_FONT_LOW_CONTRAST).
_PREHEADER_STYLE = "display:none;max-height:0;overflow:hidden;mso-hide:all"
# Invisible padding after the preheader: clients fill the inbox preview up to ~140 characters
# with whatever follows, which would otherwise be the body's first words.
_PREHEADER_PADDING = "&#847;&zwnj;&nbsp;" * 40


@dataclass(frozen=True)
class Rendered:
    subject: str
    preheader: str
    html: str
    text: str


class RenderError(Exception):
    """One render failed (the template, not the process): `field` and a readable `reason`."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"Template render failed in {field}: {reason}")


def _env(field: str) -> MergeEnvironment:
    return HTML_ENV if field == "html_content" else TEXT_ENV


_NOT_SUPPORTED = (nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport)


def syntax_error(field: str, source: str) -> str | None:
    """The 400 message for a part that does not compile, or None. Compiled fully (unknown
    filters and tests are errors too), never rendered: a constant expression is left to
    render time, so saving computes nothing the template asks for."""
    env = _env(field)
    try:
        tree = env.parse(source)
        for node in tree.find_all(_NOT_SUPPORTED):
            return (
                f"Template syntax error in {field}, line {node.lineno}: "
                "templates cannot include, import or extend other templates"
            )
        env.compile(tree)
    except TemplateSyntaxError as error:
        return f"Template syntax error in {field}, line {error.lineno}: {error.message}"
    except (RecursionError, MemoryError, SyntaxError):
        return f"Template syntax error in {field}, line 1: the template nests too deeply"
    return None


def _compile_or_none(env: MergeEnvironment, source: str) -> Template | None:
    """A rewrite of a valid template (inlined, derived): None if it does not compile."""
    try:
        return env.from_string(source)
    except (TemplateSyntaxError, RecursionError, MemoryError, SyntaxError):
        return None


def _compile(env: MergeEnvironment, field: str, source: str) -> Template:
    try:
        return env.from_string(source)
    except TemplateSyntaxError as error:
        raise RenderError(field, f"syntax error, line {error.lineno}: {error.message}") from None
    except (RecursionError, MemoryError, SyntaxError):
        raise RenderError(field, "the template nests too deeply") from None


def hidden_preheader(preheader: str) -> Markup:
    if not preheader.strip():
        return Markup("")
    block = f'<div style="{_PREHEADER_STYLE}">{escape(preheader)}{_PREHEADER_PADDING}</div>'
    return Markup(block)  # noqa: S704  (the preheader is escaped; the rest are constants)


def _with_preheader_slot(html: str) -> str:
    """The HTML template with `{{ mailroom_preheader }}` right after `<body ...>` (else after
    `</head>`, `<html ...>` or a doctype, else first)."""
    slot = "{{ " + PREHEADER + " }}"
    for pattern in (
        r"<body\b(?:[^>\"']|\"[^\"]*\"|'[^']*')*>",
        r"</head\s*>",
        r"<html\b(?:[^>\"']|\"[^\"]*\"|'[^']*')*>",
        r"<!doctype[^>]*>",
    ):
        found = re.search(pattern, html, re.IGNORECASE)
        if found:
            return html[: found.end()] + slot + html[found.end() :]
    return slot + html


def _marker(index: int) -> str:
    return f"\ue000{index}\ue001"


def derive_text_source(html: str, parts: Split | None = None) -> str | None:
    """A text template from an HTML template (`parts`: its split, if made already), or None
    when the text must be derived from each rendered HTML instead. Not compiled here."""
    parts = parts or split(HTML_ENV, html)
    if parts.marks_safe:
        return None
    tags: list[str] = []
    marked: list[str] = []
    for part in parts.parts:
        if part.kind == "raw":
            continue  # its content is literal data here, escaped below like any other
        if part.is_tag:
            marked.append(_marker(len(tags)))
            tags.append(part.text)
        else:
            marked.append(part.text)
    text = html_to_text("".join(marked))
    out: list[str] = []
    position = 0
    for index, tag in enumerate(tags):
        at = text.find(_marker(index), position)
        if at < 0:
            continue  # inside something the text leaves out (an attribute, <head>)
        out.append(literal(text[position:at], before_tag=True))
        out.append(tag)
        position = at + len(_marker(index))
    out.append(literal(text[position:], before_tag=False))
    source = "".join(out)
    if "\ue000" in source or "\ue001" in source:
        return None  # a marker out of order: do not guess
    return source


@dataclass(frozen=True)
class Compiled:
    subject: Template
    preheader: Template
    html: Template
    text: Template | None  # None: derived from each rendered HTML
    text_derived: bool  # the template had no text part
    css_inlined: bool

    def render(self, context: Mapping[str, Any], limits: Limits = DEFAULT_LIMITS) -> Rendered:
        """The message for one recipient; RenderError if this render fails (time, output
        size, recursion, or an error in the template such as a division by zero)."""
        budget = budgets.Budget(limits)
        token = budgets.start(budget)
        try:
            subject = _run(self.subject, "subject", context)
            preheader = _run(self.preheader, "preheader", context)
            html = _run(
                self.html, "html_content", {**context, PREHEADER: hidden_preheader(preheader)}
            )
            if self.text is not None:
                field = "html_content" if self.text_derived else "text_content"
                text = _run(self.text, field, context)
            else:
                text = html_to_text(html)
                try:
                    budget.emit(text)
                except BudgetExceeded as error:
                    raise RenderError("html_content", str(error)) from None
        finally:
            budgets.stop(token)
        return Rendered(" ".join(subject.split()), preheader, html, text)


def _run(template: Template, field: str, context: Mapping[str, Any]) -> str:
    env = template.environment
    assert isinstance(env, MergeEnvironment)
    budget = budgets.current()
    # As Template.render, minus its per-call copying of the globals' ChainMap.
    names = {**env.base_names, **context}
    chunks: list[str] = []
    limit = budget.limits.output_chars
    try:
        for chunk in template.root_render_func(
            env.context_class(env, names, template.name, template.blocks)
        ):
            chunks.append(chunk)
            budget.output += len(chunk)
            if budget.output > limit:
                budget.emit("")  # raises, saying why
        return "".join(chunks)
    except BudgetExceeded as error:
        raise RenderError(field, str(error)) from None
    except RecursionError:
        raise RenderError(field, "the template nests too deeply") from None
    except MemoryError:
        raise RenderError(field, "the template needs too much memory") from None
    except TemplateError as error:
        raise RenderError(field, error.message or type(error).__name__) from None
    except Exception as error:  # the template's own error (1/0, 'a' + 1): this render only
        raise RenderError(field, str(error) or type(error).__name__) from None


def compile_template(subject: str, preheader: str, html: str, text: str) -> Compiled:
    """Compile a template's four parts once (see the module notes). RenderError if a part
    does not compile (saved templates always do). The HTML is lexed once for both rewrites,
    and each rewrite is compiled once: if it does not compile, the plain way is taken."""
    style, derive = has_style(html), not text.strip()
    parts: Split | None = None
    if style or derive:
        with contextlib.suppress(TemplateSyntaxError):  # compiling below says what is wrong
            parts = split(HTML_ENV, html)
    html_template: Template | None = None
    if style and parts is not None:
        candidate = inline_css(html, parts.parts)
        if candidate is not None:
            html_template = _compile_or_none(HTML_ENV, _with_preheader_slot(candidate))
    inlined = html_template is not None
    if html_template is None:
        html_template = _compile(HTML_ENV, "html_content", _with_preheader_slot(html))
    text_template: Template | None = None
    if not derive:
        text_template = _compile(TEXT_ENV, "text_content", text)
    elif parts is not None:
        derived = derive_text_source(html, parts)
        if derived is not None:
            text_template = _compile_or_none(DERIVED_TEXT_ENV, derived)
    return Compiled(
        subject=_compile(TEXT_ENV, "subject", subject),
        preheader=_compile(TEXT_ENV, "preheader", preheader),
        html=html_template,
        text=text_template,
        text_derived=derive,
        css_inlined=inlined,
    )


_CACHE: OrderedDict[Hashable, Compiled] = OrderedDict()
_CACHE_SIZE = 64
_CACHE_LOCK = threading.Lock()


def compile_cached(key: Hashable, subject: str, preheader: str, html: str, text: str) -> Compiled:
    """`compile_template`, remembered by `key` (e.g. (template id, updated_at)) for the last
    64 keys. Two threads missing at once both compile; either result is right."""
    with _CACHE_LOCK:
        found = _CACHE.get(key)
        if found is not None:
            _CACHE.move_to_end(key)
            return found
    compiled = compile_template(subject, preheader, html, text)
    with _CACHE_LOCK:
        _CACHE[key] = compiled
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return compiled


# ---------------------------------------------------------------- the merge context


class ContactLike(Protocol):
    @property
    def email(self) -> str: ...
    @property
    def first_name(self) -> str | None: ...
    @property
    def last_name(self) -> str | None: ...
    @property
    def custom_fields(self) -> Mapping[str, Any] | None: ...


# Variables also seen by their own name: the order or cart an automation email is about,
# the feed and items of an RSS issue.
SUBJECTS = ("order", "cart", "feed", "items")


def issue_variables(variables: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A campaign's own variables (an RSS issue's `feed` and `items`) as its template sees
    them: each item's `content` was sanitised when the feed was read (nh3), so it prints as
    HTML. Only for a campaign's stored variables, never a caller's (a transactional send's
    `items` stay text)."""
    if not variables:
        return None
    found = dict(variables)
    items = found.get("items")
    if isinstance(items, list):
        found["items"] = [
            {**item, "content": Markup(item["content"])}  # noqa: S704 (sanitised by nh3)
            if isinstance(item, Mapping) and isinstance(item.get("content"), str)
            else item
            for item in items
        ]
    return found


def merge_context(
    contact: ContactLike | None,
    *,
    workspace_name: str = "",
    unsubscribe_url: str = "",
    preferences_url: str = "",
    webview_url: str = "",
    variables: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The names a template sees: `first_name`, `last_name`, `email`,
    `custom_fields.<key>`, `workspace.name`, `unsubscribe_url`, `preferences_url`,
    `webview_url` and `vars.<name>` (a transactional send's variables); `order` and `cart`
    too when the variables carry them (what an e-commerce automation's email is about).
    Anything else, and any key a contact does not carry, renders as nothing."""
    plain = dict(variables or {})
    return {
        **{
            name: as_record(plain[name])
            for name in SUBJECTS
            if isinstance(plain.get(name), Mapping | list)
        },
        "first_name": (contact.first_name if contact else "") or "",
        "last_name": (contact.last_name if contact else "") or "",
        "email": contact.email if contact else "",
        "custom_fields": Record(dict(contact.custom_fields or {}) if contact else {}),
        "workspace": Record({"name": workspace_name}),
        "unsubscribe_url": unsubscribe_url,
        "preferences_url": preferences_url,
        "webview_url": webview_url,
        "vars": as_record(plain),
    }
