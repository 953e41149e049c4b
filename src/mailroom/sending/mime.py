"""Building a message's bytes: headers plus a multipart/alternative text + HTML body, UTF-8
(7bit when plain ASCII, else quoted-printable), CRLF line ends, ready to be DKIM-signed and
handed to SMTP.

Written by hand instead of with `email.message.EmailMessage` (~1 ms a message here, most of the
per-message budget): a message is a few headers and two encoded parts, and every piece below is
a C-speed byte operation. Header lines are folded at 78 characters where a space allows it.

Addresses come in their wire form (`addresses.wire`: an IDNA domain). A non-ASCII local part
is written as it is, UTF-8 (RFC 6532): such a message goes only to a relay offering SMTPUTF8.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import format_datetime

CRLF = b"\r\n"
# 42 bytes make 56 base64 characters: a 68-character encoded word, which fits a line with
# `Subject: ` before it (78 at most).
_ENCODED_WORD_BYTES = 42
WIDTH = 78  # characters per header line where it can be folded (RFC 5322 2.1.1)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Message:
    from_email: str  # addresses in their wire form (`addresses.wire`)
    from_name: str
    to: str
    subject: str
    html: str
    text: str
    message_id: str  # without angle brackets: `<row id>@<domain>`
    date: datetime
    reply_to: str | None = None
    list_unsubscribe: tuple[str, ...] = ()  # URLs (https first, then mailto)
    one_click: bool = True  # RFC 8058 List-Unsubscribe-Post
    headers: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # any others
    to_name: str = ""  # the recipient's name, when known


def _clean(value: str) -> str:
    """One line of text: line breaks made spaces (a header never carries one), other control
    characters dropped."""
    value = " ".join(value.splitlines())
    return _CONTROL.sub("", value) if _CONTROL.search(value) else value


def encode_header(value: str) -> str:
    """A header value as RFC 5322 text: as it is when plain ASCII, else RFC 2047 encoded words
    (base64, whole characters per word), separated by spaces where `fold` may break the line.
    ASCII with a run too long for any line (998) is encoded too, so that it can be folded."""
    value = _clean(value)
    if value.isascii() and (len(value) < 900 or max(map(len, value.split()), default=0) < 900):
        return value
    words: list[bytes] = []
    chunk = b""
    for char in value:
        encoded = char.encode()
        if len(chunk) + len(encoded) > _ENCODED_WORD_BYTES:
            words.append(chunk)
            chunk = b""
        chunk += encoded
    if chunk:
        words.append(chunk)
    return " ".join(f"=?utf-8?b?{base64.b64encode(word).decode()}?=" for word in words)


def address(name: str, email: str) -> str:
    """`"Name" <email>`, the name quoted, or encoded as needed; the bare address without one."""
    name = " ".join(_clean(name).split())
    if not name:
        return email
    if name.isascii():
        escaped = name.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}" <{email}>'
    return f"{encode_header(name)} <{email}>"


def fold(line: str) -> str:
    """A header line (`Name: value`, no CRLF) folded before spaces so that no line passes
    `WIDTH` where a space allows it (RFC 5322 2.2.3). Unfolding gives back the line as it was
    (the space stays, at the start of the next line); a run with no space (a long URL) stays
    whole on its line. Never folded right after the name: a line keeps some content."""
    if len(line) <= WIDTH:
        return line
    lines: list[str] = []
    start = 0
    low = line.find(": ") + 2  # the first fold point lies after the value's first word
    while len(line) - start > WIDTH:
        cut = line.rfind(" ", low, start + WIDTH + 1)
        while cut > low and not line[start:cut].strip():
            cut = line.rfind(" ", low, cut)
        if cut <= low or not line[start:cut].strip():
            cut = line.find(" ", max(low, start + WIDTH + 1))
            while cut != -1 and not line[start:cut].strip():
                cut = line.find(" ", cut + 1)
            if cut == -1:
                break
        lines.append(line[start:cut])
        start = cut
        low = start + 1
    lines.append(line[start:])
    return "\r\n".join(lines)


MAX_LINE = 998  # octets per line, CRLF excluded (RFC 5322)


def _body(text: str) -> tuple[str, bytes]:
    """(Content-Transfer-Encoding, encoded body): `7bit` as it is when the text is ASCII with
    lines short enough (most HTML: nothing to encode, ~100x faster than quoted-printable),
    else quoted-printable."""
    normal = text.replace("\r\n", "\n").replace("\r", "\n").encode()
    if normal.isascii() and max(map(len, normal.split(b"\n"))) <= MAX_LINE:
        return "7bit", normal.replace(b"\n", CRLF)
    return "quoted-printable", quoted_printable(normal)


# Printable ASCII, tab and line feed: what `quoted_printable` writes as it is (but `=`).
_PLAIN = bytes(range(0x20, 0x7F)) + b"\t\n"
# A soft-broken line's pieces: 73 characters, then up to two more that are not `=`, so that a
# piece never ends inside an `=XX` escape and never passes 75 (76 with its `=`).
_QP_PIECE = re.compile(rb".{1,73}[^=]{0,2}")


def quoted_printable(normal: bytes) -> bytes:
    """RFC 2045 quoted-printable of LF text, with CRLF line ends. Printable ASCII whose only
    trouble is long lines (minified HTML: one 15 KB line) takes the fast path: `=` escaped,
    a line's trailing space or tab escaped, long lines cut by one regex pass (~5x faster than
    `binascii.b2a_qp`, which looks at every byte in Python-visible detail); anything else
    (8-bit, control characters) goes through `b2a_qp`."""
    if normal.translate(None, _PLAIN):  # something else is left (C speed, unlike a regex)
        return binascii.b2a_qp(normal, istext=True).replace(b"\n", CRLF)
    lines = normal.replace(b"=", b"=3D").split(b"\n")
    for n, line in enumerate(lines):
        last = line[-1:]
        if last == b" " or last == b"\t":
            line = line[:-1] + (b"=20" if last == b" " else b"=09")
        if len(line) > 76:
            line = b"=\r\n".join(_QP_PIECE.findall(line))
        lines[n] = line
    return CRLF.join(lines)


def _part(content_type: str, text: str) -> bytes:
    encoding, body = _body(text)
    return (
        f"Content-Type: {content_type}; charset=utf-8\r\n"
        f"Content-Transfer-Encoding: {encoding}\r\n\r\n".encode()
        + body
    )


def build(message: Message) -> bytes:
    # The boundary comes from the Message-ID: unique per message, and never inside a QP body
    # (QP lines cannot start with `--=_`).
    boundary = f"=_{message.message_id.split('@', 1)[0]}"
    headers = [
        ("From", address(message.from_name, message.from_email)),
        ("To", address(message.to_name, message.to)),
        ("Subject", encode_header(message.subject)),
        ("Date", format_datetime(message.date)),
        ("Message-ID", f"<{message.message_id}>"),
        ("MIME-Version", "1.0"),
    ]
    if message.reply_to:
        headers.append(("Reply-To", message.reply_to))
    if message.list_unsubscribe:
        headers.append(("List-Unsubscribe", ", ".join(f"<{u}>" for u in message.list_unsubscribe)))
        if message.one_click:
            headers.append(("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"))
    headers.extend(message.headers)
    headers.append(("Content-Type", f'multipart/alternative; boundary="{boundary}"'))
    head = "".join(fold(f"{name}: {value}") + "\r\n" for name, value in headers).encode()
    dashes = f"--{boundary}".encode()
    return b"".join(
        [
            head,
            CRLF,
            dashes,
            CRLF,
            _part("text/plain", message.text),
            CRLF,
            dashes,
            CRLF,
            _part("text/html", message.html),
            CRLF,
            dashes,
            b"--",
            CRLF,
        ]
    )
