"""DKIM keys: an RSA-2048 pair per sending domain, the private half encrypted at rest.

The private key (PKCS#8 DER) is sealed with AES-256-GCM under a key derived from the
installation secret (`core.tokens.derive_key`, its own purpose), with the domain's id as
associated data: a sealed key copied onto another domain's row does not open there. Stored as
`v1.<base64url(nonce + ciphertext)>`, so another scheme can come later beside it.

No route ever returns the private key; only its public half is published (the DNS `p=`).
Changing MAILROOM_SECRET_KEY makes every stored key unreadable (the domains need new keys).
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mailroom.core.tokens import derive_key

KEY_BITS = 2048
PURPOSE = "dkim-private-key"
VERSION = "v1"
NONCE_BYTES = 12


class KeyUnavailable(Exception):
    """A stored key that does not open: another secret key, another row, or damaged."""


@dataclass(frozen=True)
class KeyPair:
    private_der: bytes  # PKCS#8 DER
    public_b64: str  # SubjectPublicKeyInfo DER, base64: the `p=` of the DNS record


def generate() -> KeyPair:
    """A fresh RSA-2048 pair. ~100 ms of CPU that OpenSSL spends without the GIL: call it
    through `asyncio.to_thread` so the event loop keeps serving."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    der = private.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return KeyPair(der, base64.b64encode(public).decode())


def _aead(secret: str) -> AESGCM:
    return AESGCM(derive_key(secret, PURPOSE))  # 32 bytes: AES-256


def seal(secret: str, domain_id: str, private_der: bytes) -> str:
    nonce = os.urandom(NONCE_BYTES)
    sealed = _aead(secret).encrypt(nonce, private_der, domain_id.encode())
    return f"{VERSION}.{base64.urlsafe_b64encode(nonce + sealed).decode()}"


def unseal(secret: str, domain_id: str, stored: str) -> bytes:
    version, _, payload = stored.partition(".")
    if version != VERSION:
        raise KeyUnavailable(f"unknown key format {version!r}")
    try:
        raw = base64.urlsafe_b64decode(payload)
        return _aead(secret).decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], domain_id.encode())
    except (InvalidTag, ValueError) as exc:
        raise KeyUnavailable("the DKIM key does not open with this secret key") from exc


def load_private(der: bytes) -> rsa.RSAPrivateKey:
    """The private key, ready to sign. OpenSSL's consistency check of an RSA key costs ~75 ms
    (100x the signature itself); it is skipped because the key is one we generated and it
    came out of authenticated encryption unchanged."""
    key = serialization.load_der_private_key(
        der, password=None, unsafe_skip_rsa_key_validation=True
    )
    if not isinstance(key, rsa.RSAPrivateKey):
        raise KeyUnavailable("the stored DKIM key is not an RSA key")
    return key
