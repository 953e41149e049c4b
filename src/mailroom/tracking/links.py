"""Open pixels and click links, added to a message's HTML as it is built (per recipient, in the
build processes: no database).

A click link is `/l/<token>`; the token is signed and carries the send-log row, the link's
index in the message and the URL itself, so the redirect can only go to a URL that was in that
message (no open redirect) and nothing has to be written at send time. An open pixel is
`/o/<token>` naming the row. The subscriber links (unsubscribe, preferences, web view) and
anything that is not http(s) (`mailto:`, `tel:`, anchors, merge results that are empty) are
left as they are.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from mailroom.core import tokens

OPEN = "open"  # token purposes
CLICK = "click"
MAX_TRACKED_URL = 2000  # longer URLs are left untracked (the token would carry them)
MAX_CLICK_TOKEN = 4096

# `<a ... href="...">` with either quote; the URL is HTML-escaped in the attribute.
_HREF = re.compile(r"""(<a\b[^>]*?\shref\s*=\s*)(["'])(.*?)\2""", re.IGNORECASE | re.DOTALL)
_BODY_END = re.compile(r"</body\s*>", re.IGNORECASE)
_PIXEL = (
    '<img src="{src}" width="1" height="1" alt="" '
    'style="display:block;width:1px;height:1px;border:0;margin:0;padding:0">'
)


def click_token(secret: str, row_id: str, index: int, url: str) -> str:
    return tokens.sign(secret, CLICK, row_id, str(index), url)


def read_click(secret: str, token: str) -> tuple[str, int, str] | None:
    """(row id, link index, URL) of a click token, or None when it is not one of ours."""
    parts = tokens.read(secret, CLICK, token, max_length=MAX_CLICK_TOKEN)
    if parts is None or len(parts) != 3 or not parts[1].isdecimal():
        return None
    row_id, index, url = parts
    if not is_trackable(url):
        return None
    return row_id, int(index), url


def open_token(secret: str, row_id: str) -> str:
    return tokens.sign(secret, OPEN, row_id)


def read_open(secret: str, token: str) -> str | None:
    parts = tokens.read(secret, OPEN, token)
    return parts[0] if parts is not None and len(parts) == 1 else None


_BLANK = re.compile(r"[\r\n\t ]")


def is_trackable(url: str) -> bool:
    lowered = url[:8].lower()
    return (
        (lowered.startswith("http://") or lowered.startswith("https://"))
        and len(url) <= MAX_TRACKED_URL
        and _BLANK.search(url) is None
    )


def track(
    body: str,
    *,
    secret: str,
    base_url: str,
    row_id: str,
    opens: bool,
    clicks: bool,
    untracked: Iterable[str] = (),
) -> str:
    """`body` with its http(s) links going through `/l/` and, with `opens`, the pixel before
    `</body>` (or at the end)."""
    base = base_url.rstrip("/")
    if clicks:
        keep = {u for u in untracked if u}
        index = 0
        signer = tokens.Signer(secret, CLICK, row_id)  # = click_token, the row packed once

        def rewrite(match: re.Match[str]) -> str:
            nonlocal index
            url = html.unescape(match.group(3)).strip()
            if url in keep or not is_trackable(url):
                return match.group(0)
            token = signer.sign(str(index), url)
            index += 1
            return f"{match.group(1)}{match.group(2)}{base}/l/{token}{match.group(2)}"

        body = _HREF.sub(rewrite, body)
    if opens:
        pixel = _PIXEL.format(src=f"{base}/o/{open_token(secret, row_id)}")
        ends = list(_BODY_END.finditer(body))
        if ends:
            at = ends[-1].start()
            body = body[:at] + pixel + body[at:]
        else:
            body += pixel
    return body
