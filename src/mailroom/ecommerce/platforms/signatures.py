"""The platforms' webhook signatures: base64(HMAC-SHA256(secret, raw body)) in a header.

Shopify sends it as `X-Shopify-Hmac-Sha256`, WooCommerce as `X-WC-Webhook-Signature`; both
sign the exact bytes they send, so the check must run on the raw body before any JSON parse.
Neither signs a timestamp, so a signature alone cannot tell a replay from a retry: the
delivery id (and the upserts being idempotent) handle repeats.

The comparison is constant-time over the encoded signature (`hmac.compare_digest`): how much
of a forged header matched never shows in the response time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from .actions import SignatureError

SHOPIFY_SIGNATURE_HEADER = "X-Shopify-Hmac-Sha256"
WOOCOMMERCE_SIGNATURE_HEADER = "X-WC-Webhook-Signature"


def sign(secret: str, body: bytes) -> str:
    """The header value a platform sends for `body` signed with `secret`."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def verify(secret: str | None, body: bytes, signature: str | None) -> None:
    """Return when `signature` is `body` signed with `secret`; raise `SignatureError` when it
    is missing, blank or wrong, or when the store has no secret to check it with."""
    if not signature or not signature.strip():
        raise SignatureError("the delivery is not signed")
    if not secret:
        raise SignatureError("the store has no webhook secret")
    expected = sign(secret, body).encode("ascii")
    # Bytes on both sides: compare_digest refuses a str holding non-ASCII characters, and a
    # forged header may hold anything.
    sent = signature.strip().encode("utf-8", "surrogateescape")
    if not hmac.compare_digest(expected, sent):
        raise SignatureError("the signature does not match the store's webhook secret")


def verify_shopify(secret: str | None, body: bytes, header: str | None) -> None:
    """`header` is the request's `X-Shopify-Hmac-Sha256`."""
    verify(secret, body, header)


def verify_woocommerce(secret: str | None, body: bytes, header: str | None) -> None:
    """`header` is the request's `X-WC-Webhook-Signature`.

    WooCommerce signs with the secret as typed into its webhook form after decoding HTML
    entities (`wp_specialchars_decode`), so a secret made of letters, digits, `-` and `_`
    (what Mailroom generates) signs exactly as shown.
    """
    verify(secret, body, header)
