"""Passwords: argon2id hashes (the library's defaults, RFC 9106's second recommendation), and
the rules a new one must meet."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

MIN_LENGTH = 10
MAX_LENGTH = 200  # argon2 takes any length; this only stops abuse of the hashing time
_HASHER = PasswordHasher()
# Verified against when the address has no password, so a wrong address costs the same time
# as a wrong password (nothing tells them apart).
_DUMMY = _HASHER.hash("not a password anyone has")


@lru_cache(maxsize=1)
def _common() -> frozenset[str]:
    text = (Path(__file__).parent / "common_passwords.txt").read_text()
    return frozenset(
        line.strip().casefold() for line in text.splitlines() if line and not line.startswith("#")
    )


def problem(password: str, email: str = "") -> str | None:
    """Why this new password is refused, or None."""
    if len(password) < MIN_LENGTH:
        return f"Use at least {MIN_LENGTH} characters."
    if len(password) > MAX_LENGTH:
        return f"Use at most {MAX_LENGTH} characters."
    folded = password.casefold()
    if folded in _common() or len(set(folded)) <= 2:
        return "This password is too common. Choose another."
    local = email.split("@", 1)[0].casefold()
    if len(local) >= 3 and local in folded:
        return "Do not use your email address in your password."
    return None


def hash_password(password: str) -> str:
    return _HASHER.hash(password)


def verify(stored: str | None, password: str) -> bool:
    try:
        return _HASHER.verify(stored or _DUMMY, password) and stored is not None
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(stored: str) -> bool:
    return _HASHER.check_needs_rehash(stored)
