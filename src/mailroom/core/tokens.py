"""Signed tokens for links and addresses in emails (unsubscribe, preferences, web view, open,
click, VERP return path): they name what they act on, cannot be guessed or altered, and keep
working for years (no expiry: an unsubscribe link in a two-year-old email must still work).

Each purpose signs with its own key derived from the installation secret, so a token made for
one purpose is refused by another. UUIDs are packed as 16 bytes, so a token naming a workspace,
a contact and a message stays under 90 characters.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import uuid

MAC_BYTES = 16  # 128-bit tag: forging one is out of reach; truncated to keep URLs short
SHORT_MAC_BYTES = 10  # for email local parts (VERP), which must stay under 64 characters
_UUID = 0x01
_TEXT = 0x02
_LONG_TEXT = 0x03  # a part over 255 bytes (a click token's URL), 2-byte length
_UUID_TAG = bytes((_UUID,))
MAX_LONG_PART = 2048


def derive_key(secret: str, purpose: str) -> bytes:
    """A key for one purpose, derived from the installation secret (HMAC-SHA256 as a KDF)."""
    return hmac.digest(secret.encode(), f"mailroom:{purpose}".encode(), hashlib.sha256)


@functools.lru_cache(maxsize=256)
def _keyed(secret: str, purpose: str) -> hmac.HMAC:
    """The purpose's HMAC with its key already absorbed, copied for each token: a message's
    build signs ~45 tokens (every tracked link), and deriving the key and setting up an
    HMAC each time (OpenSSL 3 looks the algorithm up per call) was 3/4 of a token's cost."""
    return hmac.new(derive_key(secret, purpose), digestmod=hashlib.sha256)


def _mac(secret: str, purpose: str, payload: bytes) -> bytes:
    mac = _keyed(secret, purpose).copy()
    mac.update(payload)
    return mac.digest()


def _uuid_bytes(part: str) -> bytes | None:
    """The 16 bytes of a UUID in its canonical form (lowercase, hyphenated: what `str(UUID)`
    gives), else None. Without `uuid.UUID`, which raised and caught for every other part."""
    if len(part) != 36 or part[8] != "-" or part[13] != "-" or part[18] != "-" or part[23] != "-":
        return None
    digits = part.replace("-", "")
    if len(digits) != 32:
        return None
    try:
        raw = bytes.fromhex(digits)
    except ValueError:
        return None
    return raw if raw.hex() == digits else None  # lowercase hex only, as str(UUID) writes


def _pack(parts: tuple[str, ...]) -> bytes:
    out: list[bytes] = []
    for part in parts:
        packed = _uuid_bytes(part)
        if packed is not None:
            out.append(_UUID_TAG + packed)
            continue
        raw = part.encode()
        if len(raw) > MAX_LONG_PART:
            raise ValueError(f"token parts are at most {MAX_LONG_PART} bytes")
        if len(raw) > 255:
            out.append(bytes((_LONG_TEXT, len(raw) >> 8, len(raw) & 0xFF)) + raw)
        else:
            out.append(bytes((_TEXT, len(raw))) + raw)
    return b"".join(out)


def _unpack(data: bytes) -> list[str] | None:
    parts: list[str] = []
    i = 0
    while i < len(data):
        kind = data[i]
        if kind == _UUID and i + 17 <= len(data):
            parts.append(str(uuid.UUID(bytes=data[i + 1 : i + 17])))
            i += 17
        elif kind == _TEXT and i + 2 <= len(data) and i + 2 + data[i + 1] <= len(data):
            size = data[i + 1]
            try:
                parts.append(data[i + 2 : i + 2 + size].decode())
            except UnicodeDecodeError:
                return None
            i += 2 + size
        elif kind == _LONG_TEXT and i + 3 <= len(data):
            size = int.from_bytes(data[i + 1 : i + 3], "big")
            if i + 3 + size > len(data):
                return None
            try:
                parts.append(data[i + 3 : i + 3 + size].decode())
            except UnicodeDecodeError:
                return None
            i += 3 + size
        else:
            return None
    return parts


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        return None


def sign(secret: str, purpose: str, *parts: str) -> str:
    """A URL-safe token carrying `parts`, signed for `purpose`."""
    payload = _pack(parts)
    return _b64(payload + _mac(secret, purpose, payload)[:MAC_BYTES])


class Signer:
    """Tokens of one purpose that share their first parts (a message's click links all name
    its row): those packed and given to the HMAC once, each token then costs only its own
    parts. `Signer(s, p, *a).sign(*b) == sign(s, p, *a, *b)`."""

    def __init__(self, secret: str, purpose: str, *prefix: str) -> None:
        self._payload = _pack(prefix)
        self._mac = _keyed(secret, purpose).copy()
        self._mac.update(self._payload)

    def sign(self, *parts: str) -> str:
        rest = _pack(parts)
        mac = self._mac.copy()
        mac.update(rest)
        return _b64(self._payload + rest + mac.digest()[:MAC_BYTES])


def read(secret: str, purpose: str, token: str, *, max_length: int = 1024) -> list[str] | None:
    """The parts of a token signed for `purpose`, or None for anything else (malformed,
    altered, or made for another purpose)."""
    if not token or len(token) > max_length:
        return None
    raw = _unb64(token)
    # Only the one spelling `sign` makes: base64 leaves spare bits in the last character (and
    # decoding ignores `=`), so other spellings of the same bytes would pass the MAC.
    if raw is None or len(raw) <= MAC_BYTES or _b64(raw) != token:
        return None
    payload, mac = raw[:-MAC_BYTES], raw[-MAC_BYTES:]
    expected = _mac(secret, purpose, payload)[:MAC_BYTES]
    if not hmac.compare_digest(mac, expected):
        return None
    return _unpack(payload)


def sign_short(secret: str, purpose: str, row_id: str) -> str:
    """A lowercase base32 token naming one UUID, short enough for an address's local part
    (`bounces+<token>@...`; mail systems may fold case, so no mixed case)."""
    payload = uuid.UUID(row_id).bytes
    mac = _mac(secret, purpose, payload)[:SHORT_MAC_BYTES]
    return base64.b32encode(payload + mac).decode().rstrip("=").lower()


def read_short(secret: str, purpose: str, token: str) -> str | None:
    """The UUID a `sign_short` token names, or None."""
    text = token.strip().upper()
    if not text or len(text) > 64:
        return None
    try:
        raw = base64.b32decode(text + "=" * (-len(text) % 8))
    except (ValueError, TypeError):
        return None
    if len(raw) != 16 + SHORT_MAC_BYTES or base64.b32encode(raw).decode().rstrip("=") != text:
        return None  # another spelling of the same bytes (spare bits, padding)
    payload, mac = raw[:16], raw[16:]
    expected = _mac(secret, purpose, payload)
    if not hmac.compare_digest(mac, expected[:SHORT_MAC_BYTES]):
        return None
    return str(uuid.UUID(bytes=payload))
