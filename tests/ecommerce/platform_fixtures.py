"""The platforms' webhook bodies under fixtures/, as documented (trimmed to what matters).

Sources of the shapes:
- Shopify: the webhook sample payloads on shopify.dev (orders/cancelled, products/create,
  customers/create with and without `email_marketing_consent`), Shopify/shopify_python_api's
  test fixtures (order, abandoned checkout, product) and a live orders/create capture's
  field set (checkout_token, contact_email, current_* totals). The consent topic's body is
  `{customer_id, email_address, email_marketing_consent}`.
- WooCommerce: woocommerce/woocommerce-rest-api-docs (wp-api-v3 order, product and customer
  examples): a webhook posts what `GET /wp-json/wc/v3/<resource>s/<id>` returns
  (`WC_Webhook::build_payload`).
"""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from mailroom.ecommerce.platforms import sign

FIXTURES = Path(__file__).parent / "fixtures"
SECRET = "whsec_Zm9vYmFyYmF6cXV4LXRlc3Qtc2VjcmV0LXZhbHVl"


def raw(platform: str, name: str) -> bytes:
    return (FIXTURES / platform / f"{name}.json").read_bytes()


def load(platform: str, name: str) -> dict[str, Any]:
    """A fresh copy each time, amounts with fractions as Decimal (as the endpoint parses)."""
    return copy.deepcopy(json.loads(raw(platform, name), parse_float=Decimal))


def body(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, default=str).encode()


def shopify_headers(topic: str, data: bytes, secret: str = SECRET) -> dict[str, str]:
    return {
        "X-Shopify-Topic": topic,
        "X-Shopify-Hmac-Sha256": sign(secret, data),
        "X-Shopify-Shop-Domain": "mailroom-demo.myshopify.com",
        "X-Shopify-Webhook-Id": "b39d2c2f-2871-4f2e-9f8c-8d2e3f4a5b6c",
        "X-Shopify-Event-Id": "98880550-7158-44d4-b7cd-2c97c8a091b5",
        "X-Shopify-API-Version": "2026-04",
        "X-Shopify-Triggered-At": "2026-05-13T16:00:03.164Z",
    }


def woocommerce_headers(topic: str, data: bytes, secret: str = SECRET) -> dict[str, str]:
    resource, _, event = topic.partition(".")
    return {
        "X-WC-Webhook-Source": "https://example.com/",
        "X-WC-Webhook-Topic": topic,
        "X-WC-Webhook-Resource": resource,
        "X-WC-Webhook-Event": event,
        "X-WC-Webhook-Signature": sign(secret, data),
        "X-WC-Webhook-ID": "142",
        "X-WC-Webhook-Delivery-ID": "a1b2c3d4e5f60718293a4b5c6d7e8f90",
    }
