"""Parsing a fetched feed (RSS 0.9x/1.0/2.0, Atom) into items fit for an email template.

feedparser reads the feed from memory only: it gets a stream (never a str or bytes, which it
may take for a URL to fetch or a file name to open) and no Content-Location, so guids stay as
the feed wrote them, whatever URL the feed was fetched from; we resolve URLs ourselves.

Feed HTML is untrusted. feedparser sanitises it with its own list; `sanitise` cleans it again
with nh3 (ammonia) and an allow-list fit for email, and that list is the one that counts.
Relative URLs in the HTML are resolved by nh3's `url_relative` hook (empty ones removed),
against the content's xml:base when the feed gives one (Atom), else the item's link
(a page-relative `image.png` belongs to the post's page), else the feed's URL.
"""

from __future__ import annotations

import calendar
import html
import io
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

import feedparser
import nh3

from mailroom.rss.fetch import FeedUnreadable

SUMMARY_LIMIT = 500

ALLOWED_TAGS = {
    "p", "br", "a", "strong", "b", "em", "i", "u", "ul", "ol", "li", "blockquote",
    "h1", "h2", "h3", "h4", "h5", "h6", "img", "figure", "figcaption", "pre", "code", "hr",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "width", "height", "title"},
    "th": {"colspan", "rowspan"},
    "td": {"colspan", "rowspan"},
}
URL_SCHEMES = {"http", "https", "mailto"}
# Removed with everything inside them (other tags not allowed are removed, their text kept).
DROPPED_WITH_CONTENT = {
    "script", "style", "template", "iframe", "object", "embed", "svg", "math", "textarea",
    "select", "title",
}  # fmt: skip
HTML_TYPES = {"text/html", "application/xhtml+xml"}

# <noscript> is unwrapped before cleaning: html5ever reads its inside as raw text, so a lazy-
# loading plugin's fallback <img> would otherwise show up in the email as escaped markup.
_NOSCRIPT = re.compile(r"</?noscript\b[^>]*>", re.IGNORECASE)
# Block-level boundaries become spaces in plain text ("<p>a</p><p>b</p>" is "a b", not "ab").
_BLOCK = re.compile(
    r"<(?:br|hr|/?(?:p|div|li|ul|ol|h[1-6]|tr|td|th|table|blockquote|pre|figure|figcaption|section|article|header|footer|dd|dt))\b[^>]*>",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class FeedItem:
    guid: str  # the item's guid/id as written, else its (absolute) link
    title: str  # plain text ("" when the item has none)
    link: str | None  # absolute http(s) URL
    published_at: datetime | None  # aware, UTC
    summary: str  # plain text (not HTML-escaped), whitespace collapsed, at most 500 characters
    content: str  # sanitised HTML
    author: str | None
    image: str | None  # absolute http(s) URL


@dataclass(frozen=True)
class ParsedFeed:
    title: str  # plain text
    link: str | None  # the site's absolute http(s) URL
    items: list[FeedItem]


def parse_feed(body: bytes, url: str) -> ParsedFeed:
    """Items newest first: sorted by `published_at` when every item has a date (ties keep the
    feed's order), else in the feed's own order (usually newest first), since an undated item
    cannot be placed. Items without guid and link are dropped; of items sharing a guid the
    first in the feed is kept. `url` is the feed's URL (the base of relative links).

    Raises `FeedUnreadable("not a feed")` when the body is not a feed. CPU-bound (a 2 MB feed
    takes a noticeable fraction of a second): run it off the event loop in servers."""
    try:
        parsed = feedparser.parse(
            io.BytesIO(body),
            # The XML declaration (or BOM) decides the encoding, never an HTTP charset; an
            # XML media type also keeps feedparser from flagging every feed as bozo.
            response_headers={"content-type": "application/xml"},
            resolve_relative_uris=False,  # done by nh3 against the item's base
            sanitize_html=True,
        )
    except Exception:  # a parser crash on hostile input is still "not a feed"
        raise FeedUnreadable("not a feed") from None
    entries = parsed.get("entries") or []
    if not entries and (not parsed.get("version") or parsed.get("bozo")):
        raise FeedUnreadable("not a feed")
    feed = parsed.get("feed") or {}
    items: list[FeedItem] = []
    seen: set[str] = set()
    for entry in entries:
        item = _item(entry, url)
        if item is not None and item.guid not in seen:
            seen.add(item.guid)
            items.append(item)
    if all(item.published_at is not None for item in items):
        items.sort(key=_published, reverse=True)  # stable: equal dates keep the feed's order
    return ParsedFeed(
        title=_plain(feed.get("title_detail"), feed.get("title")),
        link=_http_url(url, feed.get("link")),
        items=items,
    )


def sanitise(html_text: str, base_url: str | None = None) -> str:
    """Clean feed HTML for an email with nh3: only `ALLOWED_TAGS` and `ALLOWED_ATTRIBUTES`,
    http/https/mailto URLs, rel="noopener noreferrer" on links, no scripts, styles, frames or
    event attributes. Relative URLs are resolved against `base_url` (an absolute http(s) URL);
    without one they are removed (a relative URL cannot work in an email)."""
    base = _http_url("", base_url)
    return nh3.clean(
        _NOSCRIPT.sub("", html_text),
        tags=ALLOWED_TAGS,
        clean_content_tags=DROPPED_WITH_CONTENT,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer",
        strip_comments=True,
        url_relative=lambda relative: _resolve(base, relative),
    )


def _resolve(base: str | None, relative: str) -> str | None:
    """nh3's rewrite of a relative URL: absolute against `base`, or removed. An empty one
    (feedparser's own sanitiser leaves `href=""` where a javascript: URL was) is removed rather
    than made a link to the base. Never raises (nh3 would report it as unraisable)."""
    if not base or not relative.strip():
        return None
    return _http_url(base, relative)


def html_to_text(html_text: str) -> str:
    """Plain text of an HTML fragment: tags (and script/style contents) removed, entities
    decoded, whitespace collapsed. The result is text, not markup: escape it to show it."""
    stripped = nh3.clean(_BLOCK.sub(" ", html_text), tags=set(), attributes={})
    return " ".join(html.unescape(stripped).split())


def _item(entry: Any, feed_url: str) -> FeedItem | None:
    link = _http_url(feed_url, entry.get("link"))
    guid = (entry.get("id") or "").strip() or link
    if not guid:
        return None
    content_detail = _content_detail(entry)
    base = _http_url(feed_url, (content_detail or {}).get("base")) or link or feed_url
    content = _content_html(content_detail)
    clean = sanitise(content, base) if content else ""
    # The description; without one, feedparser's summary is the content (the same detail).
    summary_detail = entry.get("summary_detail") or content_detail or {}
    summary_value = str(summary_detail.get("value") or "")
    if summary_detail.get("type") in HTML_TYPES:
        summary_text = html_to_text(summary_value)
    else:
        summary_text = " ".join(summary_value.split())
    return FeedItem(
        guid=guid,
        title=_plain(entry.get("title_detail"), entry.get("title")),
        link=link,
        published_at=_date(entry),
        summary=_truncate(summary_text, SUMMARY_LIMIT),
        content=clean,
        author=" ".join(str(entry.get("author") or "").split()) or None,
        image=_image(entry, feed_url) or _first_img(clean),
    )


def _content_detail(entry: Any) -> dict[str, Any] | None:
    """content:encoded / Atom content (an HTML one preferred), else the description."""
    contents = [c for c in entry.get("content") or [] if c.get("value")]
    for detail in contents:
        if detail.get("type") in HTML_TYPES:
            return dict(detail)
    if contents:
        return dict(contents[0])
    summary = entry.get("summary_detail")
    if summary and summary.get("value"):
        return dict(summary)
    if entry.get("summary"):  # feedparser's summary without a detail
        return {"type": "text/html", "value": entry.get("summary"), "base": ""}
    return None


def _content_html(detail: dict[str, Any] | None) -> str:
    if not detail:
        return ""
    value = str(detail.get("value") or "")
    if detail.get("type") in HTML_TYPES:
        return value
    return html.escape(value).replace("\n", "<br>\n")  # text/plain content


def _plain(detail: Any, value: Any) -> str:
    text = str(value or "")
    if detail and detail.get("type") in HTML_TYPES:
        return html_to_text(text)
    return " ".join(text.split())


def _http_url(base: str, value: Any) -> str | None:
    """`value` made absolute against `base`, when it is an http(s) URL with a host."""
    if not value or not isinstance(value, str):
        return None
    try:
        absolute = urljoin(base, value.strip())
        parts = urlsplit(absolute)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
    except ValueError:
        return None
    return absolute


def _published(item: FeedItem) -> datetime:
    return item.published_at or datetime.min.replace(tzinfo=UTC)


def _date(entry: Any) -> datetime | None:
    for key in ("published_parsed", "updated_parsed", "created_parsed"):
        parsed = entry.get(key)
        if parsed:
            try:  # feedparser's struct_time is UTC
                return datetime.fromtimestamp(calendar.timegm(parsed), UTC)
            except (TypeError, ValueError, OverflowError, OSError):
                continue
    return None


_IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".webp", ".avif")


def _image(entry: Any, feed_url: str) -> str | None:
    """An image the feed attaches: enclosure, media:content, media:thumbnail (in that order)."""
    for enclosure in entry.get("enclosures") or []:
        if str(enclosure.get("type") or "").startswith("image/"):
            found = _http_url(feed_url, enclosure.get("href") or enclosure.get("url"))
            if found:
                return found
    for media in entry.get("media_content") or []:
        kind, medium = str(media.get("type") or ""), str(media.get("medium") or "")
        href = _http_url(feed_url, media.get("url"))
        if not href:
            continue
        if kind.startswith("image/") or medium == "image":
            return href
        if not kind and not medium and urlsplit(href).path.lower().endswith(_IMAGE_SUFFIXES):
            return href
    for thumbnail in entry.get("media_thumbnail") or []:
        found = _http_url(feed_url, thumbnail.get("url"))
        if found:
            return found
    return None


class _FirstImage(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.src: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.src is None and tag == "img":
            self.src = _http_url("", dict(attrs).get("src"))


def _first_img(clean_html: str) -> str | None:
    finder = _FirstImage()
    finder.feed(clean_html)
    finder.close()
    return finder.src


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit * 0.6:  # end on a whole word unless that loses too much
        cut = cut[:space]
    return cut.rstrip(" ,;:.-\u2013\u2014") + "\u2026"
