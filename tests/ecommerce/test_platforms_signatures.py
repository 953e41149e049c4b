"""Webhook signatures and `read_delivery`: what the endpoints refuse (401/400) before storing."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from starlette.datastructures import Headers

from mailroom.ecommerce import platforms
from mailroom.ecommerce.platforms import (
    OrderUpsert,
    PayloadError,
    SignatureError,
    read_delivery,
    sign,
    signatures,
    verify_shopify,
    verify_woocommerce,
)

from .platform_fixtures import SECRET, raw, shopify_headers, woocommerce_headers


def reference_signature(secret: str, data: bytes) -> str:
    """The platforms' own formula, written out independently of the code under test:
    Shopify `Base64.strict_encode64(OpenSSL::HMAC.digest("sha256", secret, body))`,
    WooCommerce `base64_encode(hash_hmac("sha256", $payload, $secret, true))`."""
    return base64.b64encode(hmac.new(secret.encode(), data, hashlib.sha256).digest()).decode()


BODY = raw("shopify", "orders_create")


def test_sign_is_base64_of_hmac_sha256_of_the_raw_body() -> None:
    assert sign(SECRET, BODY) == reference_signature(SECRET, BODY)
    # computed with `openssl dgst -sha256 -hmac hush -binary | base64`
    assert sign("hush", b"") == "Knm8rWjeSXNIt2H0AOMT7DQ8/YSy8sQi/pEjbuUmGMs="
    assert (
        sign("hush", b'{"id":820982911946154508}') == "qBvrsZF7RfB1iS6BX6IHqJTp5L911P7intnPeTPsH0I="
    )


@pytest.mark.parametrize("verify", [verify_shopify, verify_woocommerce])
def test_a_good_signature_passes(verify) -> None:
    verify(SECRET, BODY, reference_signature(SECRET, BODY))
    verify(SECRET, BODY, "  " + reference_signature(SECRET, BODY) + " ")  # header whitespace


@pytest.mark.parametrize("verify", [verify_shopify, verify_woocommerce])
@pytest.mark.parametrize("header", [None, "", "   "])
def test_a_missing_signature_is_refused(verify, header) -> None:
    with pytest.raises(SignatureError, match="the delivery is not signed"):
        verify(SECRET, BODY, header)


@pytest.mark.parametrize("verify", [verify_shopify, verify_woocommerce])
def test_a_tampered_body_is_refused(verify) -> None:
    header = sign(SECRET, BODY)
    tampered = BODY.replace(b'"total_price": "59.95"', b'"total_price": "5995.00"')
    assert tampered != BODY
    with pytest.raises(SignatureError, match="does not match"):
        verify(SECRET, tampered, header)
    # one byte is enough, anywhere: the trailing newline a proxy might strip
    with pytest.raises(SignatureError):
        verify(SECRET, BODY.rstrip(b"\n"), header)


@pytest.mark.parametrize(
    "header",
    [
        sign("another store's secret", BODY),
        hmac.new(SECRET.encode(), BODY, hashlib.sha256).hexdigest(),  # hex, not base64
        base64.b64encode(hmac.new(SECRET.encode(), BODY, hashlib.sha1).digest()).decode(),
        sign(SECRET, BODY)[:-2],  # truncated
        sign(SECRET, BODY).lower(),
        "sha256=" + sign(SECRET, BODY),
        "t=1,v1=" + sign(SECRET, BODY),
        "ünïcødé ✓",  # compare_digest on such a str would raise TypeError: it must not
    ],
)
def test_a_bad_signature_is_refused(header) -> None:
    with pytest.raises(SignatureError):
        verify_shopify(SECRET, BODY, header)


@pytest.mark.parametrize("secret", [None, ""])
def test_a_store_without_a_secret_verifies_nothing(secret) -> None:
    # the HMAC of an empty key is computable by anyone: it must not count as signed
    with pytest.raises(SignatureError, match="no webhook secret"):
        verify_shopify(secret, BODY, sign("", BODY))


def test_the_comparison_is_constant_time(monkeypatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a, b):
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(signatures.hmac, "compare_digest", spy)
    verify_woocommerce(SECRET, BODY, sign(SECRET, BODY))
    with pytest.raises(SignatureError):
        verify_woocommerce(SECRET, BODY, "AAAA")
    assert len(compared) == 2
    assert all(isinstance(a, bytes) and isinstance(b, bytes) for a, b in compared)


# read_delivery: the order of refusals is what lets the endpoint store nothing on a 401/400.


def test_read_delivery_shopify() -> None:
    delivery = read_delivery("shopify", shopify_headers("orders/create", BODY), BODY, SECRET)
    assert delivery.platform == "shopify"
    assert delivery.topic == "orders/create"
    assert delivery.delivery_id == "b39d2c2f-2871-4f2e-9f8c-8d2e3f4a5b6c"
    assert delivery.event_id == "98880550-7158-44d4-b7cd-2c97c8a091b5"
    [order] = delivery.actions
    assert isinstance(order, OrderUpsert)
    assert order.external_id == "5208334008572"


def test_read_delivery_takes_headers_in_any_case() -> None:
    headers = {k.lower(): v for k, v in shopify_headers("ORDERS/CREATE", BODY).items()}
    assert read_delivery("shopify", headers, BODY, SECRET).topic == "orders/create"
    starlette = Headers(raw=[(k.encode(), v.encode()) for k, v in headers.items()])
    assert read_delivery("shopify", starlette, BODY, SECRET).delivery_id is not None


def test_read_delivery_refuses_a_bad_signature_before_looking_at_the_body() -> None:
    garbage = b"{not json"
    headers = shopify_headers("orders/create", garbage, secret="wrong")
    with pytest.raises(SignatureError):
        read_delivery("shopify", headers, garbage, SECRET)
    headers.pop("X-Shopify-Hmac-Sha256")
    with pytest.raises(SignatureError, match="not signed"):
        read_delivery("shopify", headers, garbage, SECRET)


def test_read_delivery_signed_but_not_json_is_a_payload_error() -> None:
    garbage = b"{not json"
    with pytest.raises(PayloadError, match=r"^body is not valid JSON$"):
        read_delivery("shopify", shopify_headers("orders/create", garbage), garbage, SECRET)
    listed = b"[1, 2]"
    with pytest.raises(PayloadError, match=r"^body must be a JSON object$"):
        read_delivery("woocommerce", woocommerce_headers("order.created", listed), listed, SECRET)


@pytest.mark.parametrize(
    ("platform", "header"), [("shopify", "X-Shopify-Topic"), ("woocommerce", "X-WC-Webhook-Topic")]
)
def test_read_delivery_without_a_topic_is_a_payload_error(platform, header) -> None:
    make = shopify_headers if platform == "shopify" else woocommerce_headers
    headers = make("orders/create", BODY)
    headers.pop(header)
    with pytest.raises(PayloadError, match=f"^the {header} header is required$"):
        read_delivery(platform, headers, BODY, SECRET)


def test_read_delivery_woocommerce() -> None:
    data = raw("woocommerce", "order_created")
    delivery = read_delivery(
        "woocommerce", woocommerce_headers("order.created", data), data, SECRET
    )
    assert (delivery.platform, delivery.topic) == ("woocommerce", "order.created")
    assert delivery.delivery_id == "a1b2c3d4e5f60718293a4b5c6d7e8f90"
    assert delivery.event_id is None
    assert [type(action) for action in delivery.actions] == [OrderUpsert]


def test_the_woocommerce_ping_is_answered_without_a_signature() -> None:
    # WC_Webhook::deliver_ping(): body "webhook_id=<id>", form-encoded, no X-WC-* headers
    headers = {"User-Agent": "WooCommerce/8.6.1 Hookshot (WordPress/6.4.3)"}
    delivery = read_delivery("woocommerce", headers, b"webhook_id=142", SECRET)
    assert delivery.topic == "ping"
    assert [type(action) for action in delivery.actions] == [platforms.Ignored]


@pytest.mark.parametrize(
    ("data", "headers"),
    [
        (b"webhook_id=142", {"X-WC-Webhook-Topic": "order.created"}),  # a topic: a real delivery
        (b'{"webhook_id": 142}', {}),
        (b"webhook_id=142&id=5", {}),
        (b"webhook_id=", {}),
        (raw("woocommerce", "order_created"), {"X-WC-Webhook-Topic": "order.created"}),
    ],
)
def test_anything_else_unsigned_is_refused(data, headers) -> None:
    with pytest.raises(SignatureError):
        read_delivery("woocommerce", headers, data, SECRET)


def test_read_delivery_knows_two_platforms() -> None:
    assert platforms.PLATFORMS == ("shopify", "woocommerce")
    with pytest.raises(ValueError, match="unknown platform"):
        read_delivery("magento", {}, b"{}", SECRET)  # type: ignore[arg-type]
