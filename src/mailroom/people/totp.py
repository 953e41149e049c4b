"""The optional second factor: time-based one-time passwords (RFC 6238: HMAC-SHA1, 6 digits,
30-second steps, one step of drift either way), sealed at rest with AES-GCM under a key
derived from the installation secret, and ten single-use recovery codes kept as SHA-256."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import struct
import time
from urllib.parse import quote

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mailroom.core.tokens import derive_key

STEP = 30
DIGITS = 6
DRIFT = 1
RECOVERY_CODES = 10
_NONCE = 12


def new_secret() -> str:
    return base64.b32encode(os.urandom(20)).decode().rstrip("=")


def _key(secret: str) -> bytes:
    padded = secret + "=" * (-len(secret) % 8)
    return base64.b32decode(padded.upper())


def code_at(secret: str, at: float | None = None) -> str:
    counter = int((time.time() if at is None else at) // STEP)
    return _code(secret, counter)


def _code(secret: str, counter: int) -> str:
    digest = hmac.digest(_key(secret), struct.pack(">Q", counter), hashlib.sha1)
    offset = digest[-1] & 0x0F
    value = struct.unpack(">I", digest[offset : offset + 4])[0] & 0x7FFFFFFF
    return str(value % 10**DIGITS).zfill(DIGITS)


def matching_step(
    secret: str, code: str, *, after: int = -1, at: float | None = None
) -> int | None:
    """The time step `code` belongs to (within the drift), if it is later than `after`
    (a code is not accepted twice)."""
    given = "".join(code.split())
    if len(given) != DIGITS or not given.isdecimal():
        return None
    now = int((time.time() if at is None else at) // STEP)
    for step in range(now - DRIFT, now + DRIFT + 1):
        if step > after and hmac.compare_digest(_code(secret, step), given):
            return step
    return None


def otpauth_uri(email: str, secret: str) -> str:
    label = quote(f"Mailroom:{email}")
    return f"otpauth://totp/{label}?secret={secret}&issuer=Mailroom&digits={DIGITS}&period={STEP}"


def seal(installation_secret: str, person_id: str, secret: str) -> str:
    nonce = os.urandom(_NONCE)
    box = AESGCM(derive_key(installation_secret, "totp"))
    sealed = box.encrypt(nonce, secret.encode(), person_id.encode())
    return base64.urlsafe_b64encode(nonce + sealed).decode()


def unseal(installation_secret: str, person_id: str, stored: str) -> str | None:
    try:
        raw = base64.urlsafe_b64decode(stored)
        box = AESGCM(derive_key(installation_secret, "totp"))
        return box.decrypt(raw[:_NONCE], raw[_NONCE:], person_id.encode()).decode()
    except (InvalidTag, ValueError):
        return None


def recovery_codes() -> list[str]:
    """Ten codes like `k3f9-2mzq-7hpa`, shown once."""
    alphabet = "abcdefghjkmnpqrstuvwxyz23456789"
    return [
        "-".join("".join(secrets.choice(alphabet) for _ in range(4)) for _ in range(3))
        for _ in range(RECOVERY_CODES)
    ]


def recovery_hash(code: str) -> str:
    return hashlib.sha256("".join(code.lower().split()).encode()).hexdigest()
