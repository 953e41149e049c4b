"""The text part of an email, from its HTML: paragraphs and line breaks kept, lists as
`- item`, links as `text (url)`, images by their alt text, and nothing of `<head>`, `<style>`,
`<script>` or hidden elements (a hand-made preheader). Standard library parser: it never fails
on broken HTML, and a text part is a few kilobytes.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_PARAGRAPHS = frozenset(
    {"p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "ul", "ol", "table", "pre", "hr"}
)
_LINES = frozenset(
    {"div", "li", "tr", "dl", "dt", "dd", "section", "article", "header", "footer", "main"}
    | {"nav", "aside", "address", "figure", "figcaption", "form", "fieldset", "center"}
    | {"tbody", "thead", "tfoot", "body", "html"}
)
_SKIP = frozenset({"head", "style", "script", "title", "template", "noscript"})
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param"}
    | {"source", "track", "wbr"}
)
_HIDDEN = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden|mso-hide\s*:\s*all", re.I)
_SPACE = re.compile(r"\s+")
_SPACES = re.compile(r"[ \t]{2,}")
_INVISIBLE = str.maketrans("", "", "\u200b\u200c\u200d\u034f\u00ad\ufeff")
_BREAK = "\x00"  # a paragraph break, resolved when the text is finished


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        # Open elements: (tag, hidden, href, where its text starts in `out`).
        self.open: list[tuple[str, bool, str | None, int]] = []
        self.hidden = 0
        self.pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag in _VOID:
            if self.hidden:
                return
            if tag == "br":
                self.out.append("\n")
            elif tag == "hr":
                self.out.append(f"{_BREAK}----{_BREAK}")
            elif tag == "img" and values.get("alt", "").strip():
                self.out.append(f" {values['alt'].strip()} ")
            return
        hidden = tag in _SKIP or "hidden" in values or bool(_HIDDEN.search(values.get("style", "")))
        href = values.get("href") if tag == "a" else None
        self.open.append((tag, hidden, href, len(self.out)))
        if hidden:
            self.hidden += 1
        if self.hidden:
            return
        self._block(tag)
        if tag == "li":
            self.out.append("- ")
        elif tag in ("td", "th"):
            self.out.append(" ")
        elif tag == "pre":
            self.pre += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if not any(name == tag for name, *_ in self.open):
            return  # a stray end tag
        while self.open:
            name, hidden, href, start = self.open.pop()
            if not self.hidden:
                if name == "a" and href is not None:
                    self._link(href, start)
                elif name == "pre":
                    self.pre -= 1
                self._block(name)
            if hidden:
                self.hidden -= 1
            if name == tag:
                return

    def handle_data(self, data: str) -> None:
        if self.hidden:
            return
        self.out.append(data if self.pre else _SPACE.sub(" ", data))

    def _block(self, tag: str) -> None:
        if tag in _PARAGRAPHS:
            self.out.append(_BREAK)
        elif tag in _LINES:
            self.out.append("\n")

    def _link(self, href: str, start: int) -> None:
        url = href.strip()
        if not url or url.startswith(("#", "javascript:")):
            return
        label = _SPACE.sub(" ", "".join(self.out[start:])).strip()
        shown = url.removeprefix("mailto:")
        if not label:
            self.out.append(shown)
        elif label not in (url, shown):
            self.out.append(f" ({shown})")


def html_to_text(html: str) -> str:
    parser = _TextParser()
    parser.feed(html)
    parser.close()
    text = "".join(parser.out).translate(_INVISIBLE)
    lines = [_SPACES.sub(" ", line).strip() for line in text.replace(_BREAK, "\n\n").split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return f"{text}\n" if text else ""
