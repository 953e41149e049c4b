"""A template's source as literal HTML/text and Jinja tags, for the compile-time rewrites that
must leave merge tags untouched (CSS inlining, deriving the text part)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from jinja2 import Environment


@dataclass(frozen=True)
class Segment:
    kind: str  # data, variable, block, comment, raw (a `{% raw %}` or `{% endraw %}` tag)
    text: str

    @property
    def is_tag(self) -> bool:
        return self.kind != "data"


@dataclass(frozen=True)
class Split:
    parts: list[Segment]
    # An expression marks a value safe (`|safe`): its markup is known only once rendered, so
    # a text part cannot be derived from the template's HTML alone.
    marks_safe: bool


def split(env: Environment, source: str) -> Split:
    """Literal data and whole Jinja tags, in order (Jinja's own lexer: a `}}` inside a string
    does not end a tag). Whitespace that a `{%-` strips is already gone from the data."""
    found: list[Segment] = []
    kind: str | None = None
    parts: list[str] = []
    marks_safe = False
    previous = ""
    for _line, token, value in env.lexer.tokeniter(source, None):
        if token == "data":
            found.append(Segment("data", value))
        elif token in ("raw_begin", "raw_end"):
            found.append(Segment("raw", value))
        elif token.endswith("_begin"):
            kind, parts = token.removesuffix("_begin"), [value]
        else:
            parts.append(value)
            if token.endswith("_end") and kind is not None:
                found.append(Segment(kind, "".join(parts)))
                kind, parts = None, []
            elif token == "name" and value == "safe" and previous == "|":
                marks_safe = True
        if token != "whitespace":
            previous = value
    return Split(found, marks_safe)


_OPENS_TAG = re.compile(r"\{(?=[{%#])")


def literal(text: str, *, before_tag: bool) -> str:
    """Literal text as Jinja source: a `{` that would open a tag (`{{`, `{%`, `{#`, or one
    right before a tag that follows) is written as an expression giving `{`."""
    text = _OPENS_TAG.sub("{{ '{' }}", text)
    if before_tag and text.endswith("{"):
        text = text[:-1] + "{{ '{' }}"
    return text
