"""CSS `<style>` rules inlined into `style` attributes, once per template (never per
recipient), with css-inline: Rust (html5ever + a real CSS cascade), about a millisecond for a
20 KB template, where pure-Python inliners (premailer) take tens. Gmail and many other clients
drop `<style>` blocks; `@media` rules, which cannot be inlined, stay in one `<style>`. Remote
stylesheets are never fetched (a template must not make the server request URLs).

The template is still a Jinja template when it is inlined, so its tags are first swapped for
markers an HTML parser keeps in place: a comment where a tag stands between elements (comments
are never moved, even inside a `<table>`, where a text node would be carried out of it), and
plain letters inside attribute values, `<style>`, `<title>` and comments. After inlining the
markers are swapped back. If any marker was lost, moved into a form we cannot undo, or the
result does not compile, the template is used as written (not inlined) rather than altered.
"""

from __future__ import annotations

import re
import secrets

import css_inline

from mailroom.templates.source import Segment, literal

_INLINER = css_inline.CSSInliner(
    keep_style_tags=False,
    keep_at_rules=True,  # media queries cannot live in style attributes
    keep_link_tags=True,
    load_remote_stylesheets=False,
)
_HAS_STYLE = re.compile(r"<style[\s>]", re.IGNORECASE)
# Elements whose content is text to an HTML parser (no comments inside).
_RAW_TEXT = frozenset({"style", "script", "title", "textarea", "xmp", "noscript"})
_TAG_NAME = re.compile(r"</?([a-zA-Z][a-zA-Z0-9-]*)")
_TAG_STOP = re.compile(r"[\"'>]")


def has_style(html: str) -> bool:
    return _HAS_STYLE.search(html) is not None


class _Scanner:
    """Where in the HTML the next character falls: text, inside a tag (name/attributes),
    inside a quoted attribute value, a comment, or a raw-text element's content."""

    def __init__(self) -> None:
        self.state = "text"
        self.quote = ""
        self.tag = ""  # the name of the tag being read (a start tag's, for raw text)
        self.end_tag = False
        self.raw = ""  # the raw-text element whose content is being read
        self.last = ""  # the last character inside a tag, outside quotes

    def feed(self, data: str) -> None:
        i, n = 0, len(data)
        while i < n:
            if self.state == "text":
                j = data.find("<", i)
                if j < 0:
                    return
                if data.startswith("<!--", j):
                    self.state, i = "comment", j + 4
                    continue
                match = _TAG_NAME.match(data, j)
                if match is None:
                    i = j + 1
                    continue
                self.state, self.tag = "tag", match.group(1).lower()
                self.end_tag, self.last = data[j + 1] == "/", ""
                i = match.end()
            elif self.state == "tag":
                match = _TAG_STOP.search(data, i)
                if match is None:
                    self._note_last(data[i:])
                    return
                self._note_last(data[i : match.start()])
                char = match.group()
                if char == ">":
                    raw = self.tag in _RAW_TEXT and not self.end_tag
                    self.state, self.raw = ("raw", self.tag) if raw else ("text", "")
                else:
                    self.state, self.quote = "quoted", char
                i = match.end()
            elif self.state == "quoted":
                j = data.find(self.quote, i)
                if j < 0:
                    return
                self.state, self.last, i = "tag", self.quote, j + 1
            elif self.state == "comment":
                j = data.find("-->", i)
                if j < 0:
                    return
                self.state, i = "text", j + 3
            else:  # raw text: until its end tag
                match = re.compile(rf"</{self.raw}[\s/>]", re.IGNORECASE).search(data, i)
                if match is None:
                    return
                self.state, self.tag, self.end_tag, self.last = "tag", self.raw, True, ""
                i = match.start() + 2 + len(self.raw)

    def _note_last(self, text: str) -> None:
        stripped = text.rstrip()
        if stripped:
            self.last = stripped[-1]


def protect(parts: list[Segment], nonce: str) -> tuple[str, list[str]]:
    """The HTML with each Jinja tag replaced by a marker, and the tags in marker order."""
    scanner = _Scanner()
    out: list[str] = []
    tags: list[str] = []
    for part in parts:
        if not part.is_tag:
            scanner.feed(part.text)
            out.append(part.text)
            continue
        marker = f"{nonce}_{len(tags)}"
        tags.append(part.text)
        if scanner.state == "text":
            out.append(f"<!--{marker}-->")
        elif scanner.state == "tag" and scanner.last != "=":
            out.append(f" {marker}_ ")  # where an attribute name goes: becomes marker=""
        else:
            out.append(f"{marker}_")
    return "".join(out), tags


def restore(html: str, tags: list[str], nonce: str) -> str | None:
    """Markers back to their tags; None unless each came back exactly once. Literal `{{`
    that the parser decoded from character references (`&#123;&#123;`) is kept literal."""
    pattern = re.compile(rf"<!--{nonce}_(\d+)-->|{nonce}_(\d+)_(?:=\"\")?")
    seen: list[int] = []
    out: list[str] = []
    position = 0
    in_raw = False
    for match in pattern.finditer(html):
        text = html[position : match.start()]
        out.append(text if in_raw else literal(text, before_tag=True))
        index = int(match.group(1) or match.group(2))
        if index >= len(tags):
            return None
        seen.append(index)
        tag = tags[index]
        out.append(tag)
        if re.match(r"\{%-?\s*raw\b", tag):
            in_raw = True
        elif re.match(r"\{%-?\s*endraw\b", tag):
            in_raw = False
        position = match.end()
    out.append(html[position:] if in_raw else literal(html[position:], before_tag=False))
    if sorted(seen) != list(range(len(tags))):
        return None
    return "".join(out)


def inline_css(html: str, parts: list[Segment]) -> str | None:
    """`html` (a template, split into `parts`) with its `<style>` rules inlined, or None
    when that cannot be done without risk to its tags."""
    nonce = "j" + secrets.token_hex(5)
    while nonce in html:
        nonce = "j" + secrets.token_hex(5)
    protected, tags = protect(parts, nonce)
    try:
        inlined = _INLINER.inline(protected)
    except (css_inline.InlineError, ValueError):
        return None
    return restore(inlined, tags, nonce)
