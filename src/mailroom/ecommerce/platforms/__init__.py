"""Shopify and WooCommerce webhooks: verify the signature, then say what to do in Mailroom.

Pure translation, no storage: `POST /hooks/shopify/{store_id}` and
`POST /hooks/woocommerce/{store_id}` call

    delivery = read_delivery("shopify", request.headers, await request.body(), store.webhook_secret)

and apply `delivery.actions` (OrderUpsert, CartUpsert, ProductUpsert, ConsentChange,
Ignored) with the e-commerce services. `SignatureError` is a 401 and `PayloadError` a 400
(its text is the message), both before anything is stored; an unknown topic is not an error
but an `Ignored` action, answered 200 so the platform does not retry or disable the webhook.

The per-platform rules (topics, status mapping, consent) are in `shopify` and `woocommerce`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from . import shopify, woocommerce
from .actions import (
    ORDER_STATUSES,
    Action,
    CartUpsert,
    ConsentChange,
    Delivery,
    Ignored,
    LineIn,
    OrderStatus,
    OrderUpsert,
    PayloadError,
    ProductUpsert,
    SignatureError,
)
from .fields import parse_json
from .signatures import (
    SHOPIFY_SIGNATURE_HEADER,
    WOOCOMMERCE_SIGNATURE_HEADER,
    sign,
    verify_shopify,
    verify_woocommerce,
)

__all__ = [
    "ORDER_STATUSES",
    "PLATFORMS",
    "SHOPIFY_SIGNATURE_HEADER",
    "WOOCOMMERCE_SIGNATURE_HEADER",
    "Action",
    "CartUpsert",
    "ConsentChange",
    "Delivery",
    "Ignored",
    "LineIn",
    "OrderStatus",
    "OrderUpsert",
    "PayloadError",
    "ProductUpsert",
    "SignatureError",
    "parse_json",
    "read_delivery",
    "shopify",
    "sign",
    "verify_shopify",
    "verify_woocommerce",
    "woocommerce",
]

Platform = Literal["shopify", "woocommerce"]
PLATFORMS: tuple[Platform, ...] = ("shopify", "woocommerce")


def read_delivery(
    platform: Platform, headers: Mapping[str, str], body: bytes, secret: str | None
) -> Delivery:
    """Verify and translate one webhook request.

    `headers` may be Starlette's (case-insensitive) or a plain dict with any capitalisation;
    `body` is the raw request body, exactly as received (the signature covers those bytes);
    `secret` is the store's webhook secret. Order: a WooCommerce ping is recognised first
    (it is unsigned by design and stores nothing), then the signature is checked, then the
    body is parsed and translated. Raises `SignatureError` (401) or `PayloadError` (400).
    """
    if platform == "shopify":
        verify_shopify(secret, body, _header(headers, SHOPIFY_SIGNATURE_HEADER))
        topic = _topic(headers, "X-Shopify-Topic")
        actions = shopify.translate(
            topic, parse_json(body), shop_domain=_header(headers, "X-Shopify-Shop-Domain")
        )
        return Delivery(
            platform="shopify",
            topic=topic,
            delivery_id=_header(headers, "X-Shopify-Webhook-Id"),
            actions=tuple(actions),
            event_id=_header(headers, "X-Shopify-Event-Id"),
        )
    if platform == "woocommerce":
        signature = _header(headers, WOOCOMMERCE_SIGNATURE_HEADER)
        if woocommerce.is_ping(body, signature, _header(headers, "X-WC-Webhook-Topic")):
            ping = Ignored("WooCommerce ping: the webhook was saved; nothing to store")
            return Delivery(platform="woocommerce", topic="ping", delivery_id=None, actions=(ping,))
        verify_woocommerce(secret, body, signature)
        topic = _topic(headers, "X-WC-Webhook-Topic")
        return Delivery(
            platform="woocommerce",
            topic=topic,
            delivery_id=_header(headers, "X-WC-Webhook-Delivery-ID"),
            actions=tuple(woocommerce.translate(topic, parse_json(body))),
        )
    raise ValueError(f"unknown platform {platform!r}")


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        lowered = name.lower()
        value = next((v for k, v in headers.items() if k.lower() == lowered), None)
    if value is None:
        return None
    return value.strip() or None


def _topic(headers: Mapping[str, str], name: str) -> str:
    topic = _header(headers, name)
    if topic is None:
        raise PayloadError(f"the {name} header is required")
    return topic.lower()
