"""Properties of the platform layer: whatever a sender posts, the endpoint gets actions or a
`PayloadError`/`SignatureError` (its 400/401), never another exception (a 500 the platform
would retry until it disables the webhook); money comes out as exactly the text sent."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mailroom.ecommerce.platforms import (
    Action,
    CartUpsert,
    ConsentChange,
    Delivery,
    Ignored,
    OrderUpsert,
    PayloadError,
    ProductUpsert,
    SignatureError,
    parse_json,
    read_delivery,
    shopify,
    sign,
    woocommerce,
)
from mailroom.ecommerce.platforms.signatures import verify

from .platform_fixtures import SECRET, load, shopify_headers, woocommerce_headers

SHOPIFY_TOPICS = [*sorted(shopify._HANDLERS), "orders/delete", "app/uninstalled"]
WOOCOMMERCE_TOPICS = [*sorted(woocommerce._HANDLERS), "order.deleted", "coupon.created"]
FIXTURES = {
    "shopify": [
        "orders_create",
        "orders_cancelled",
        "checkouts_create",
        "products_create",
        "customers_create",
        "customers_update_legacy",
        "customers_email_marketing_consent_update",
    ],
    "woocommerce": ["order_created", "product_updated", "customer_created"],
}
SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)  # a loaded machine is slow, not wrong

# Any JSON value, amounts as the endpoint parses them (Decimal) and as a caller might (float).
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.decimals(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from(
        ["", " ", "0", "19.99", "-1", "1e3", "NaN", "subscribed", "2026-05-13T12:00:00-04:00"]
    )
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
KEYS = ["id", "email", "total_price", "total", "status", "line_items", "customer", "price",
        "quantity", "product_id", "token", "title", "name", "variants", "image", "images",
        "categories", "billing", "meta_data", "email_marketing_consent", "state",
        "accepts_marketing", "created_at", "date_created_gmt", "currency", "completed_at",
        "email_address", "tags", "category", "financial_status", "cancelled_at"]  # fmt: skip
objects = st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), json_values, max_size=8)


def check(actions: list[Action]) -> None:
    """What the endpoint may rely on for every action it is handed."""
    for action in actions:
        assert isinstance(
            action, OrderUpsert | CartUpsert | ProductUpsert | ConsentChange | Ignored
        )
        if isinstance(action, OrderUpsert | CartUpsert):
            assert Decimal(action.total).as_tuple().exponent == -2
            assert all(Decimal(line.price).as_tuple().exponent == -2 for line in action.lines)
            assert all(line.quantity > 0 and line.product_id for line in action.lines)
        if isinstance(action, OrderUpsert):
            assert action.status in ("placed", "paid", "fulfilled", "cancelled", "refunded")
            assert action.placed_at is None or action.placed_at.utcoffset() is not None
            assert len(action.lines) <= 500
        if isinstance(action, CartUpsert):
            assert action.checkout_url is None or len(action.checkout_url) <= 2000
        if isinstance(action, ProductUpsert):
            assert action.title and len(action.title) <= 500
            assert action.price is None or Decimal(action.price).as_tuple().exponent == -2
            assert len(action.categories) <= 50
            assert all(0 < len(name) <= 100 for name in action.categories)
            for link in (action.url, action.image_url):
                assert link is None or (
                    link.startswith(("http://", "https://")) and len(link) <= 2000
                )
        if isinstance(action, ConsentChange):
            assert "@" in action.email and action.email == action.email.strip().lower()


def translate(platform: str, topic: str, payload: Any) -> None:
    try:
        if platform == "shopify":
            check(shopify.translate(topic, payload, shop_domain="demo.myshopify.com"))
        else:
            check(woocommerce.translate(topic, payload))
    except PayloadError as refused:
        assert str(refused)  # a message the 400 can carry


@SETTINGS
@given(topic=st.sampled_from(SHOPIFY_TOPICS), payload=objects)
def test_any_object_on_a_shopify_topic(topic, payload) -> None:
    translate("shopify", topic, payload)


@SETTINGS
@given(topic=st.sampled_from(WOOCOMMERCE_TOPICS), payload=objects)
def test_any_object_on_a_woocommerce_topic(topic, payload) -> None:
    translate("woocommerce", topic, payload)


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, inner in value.items():
            found += paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += paths(inner, (*prefix, index))
    return found


@st.composite
def mutated_fixtures(draw):
    """A documented payload with one field anywhere in it replaced or removed: the deliveries
    a new API version, a plugin or a hand-edited test could send."""
    platform = draw(st.sampled_from(["shopify", "woocommerce"]))
    name = draw(st.sampled_from(FIXTURES[platform]))
    payload = load(platform, name)
    path = draw(st.sampled_from(paths(payload)))
    parent = payload
    for step in path[:-1]:
        parent = parent[step]
    if isinstance(parent, dict) and draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(json_values)
    topics = SHOPIFY_TOPICS if platform == "shopify" else WOOCOMMERCE_TOPICS
    return platform, draw(st.sampled_from(topics)), payload


@SETTINGS
@given(case=mutated_fixtures())
def test_any_field_of_a_documented_payload_changed(case) -> None:
    platform, topic, payload = case
    translate(platform, topic, payload)


@SETTINGS
@given(data=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_body_parses_to_an_object_or_a_payload_error(data) -> None:
    try:
        payload = parse_json(data)
    except PayloadError as refused:
        assert str(refused) in ("body is not valid JSON", "body must be a JSON object")
    else:
        assert isinstance(payload, dict)


@SETTINGS
@given(
    platform=st.sampled_from(["shopify", "woocommerce"]),
    data=st.binary(max_size=300)
    | objects.map(lambda payload: json.dumps(payload, default=str).encode()),
    topic=st.sampled_from(SHOPIFY_TOPICS + WOOCOMMERCE_TOPICS),
    signed=st.booleans(),
)
def test_any_delivery_reads_or_is_refused_with_401_or_400(platform, data, topic, signed) -> None:
    make = shopify_headers if platform == "shopify" else woocommerce_headers
    headers = make(topic, data, secret=SECRET if signed else "not the store's secret")
    try:
        delivery = read_delivery(platform, headers, data, SECRET)
    except SignatureError:
        assert not signed
    except PayloadError:
        assert signed
    else:
        assert signed
        assert isinstance(delivery, Delivery)
        check(list(delivery.actions))


@SETTINGS
@given(secret=st.text(min_size=1, max_size=64), data=st.binary(max_size=300), flip=st.data())
def test_a_signature_holds_for_its_body_only(secret, data, flip) -> None:
    header = sign(secret, data)
    verify(secret, data, header)
    if data:
        index = flip.draw(st.integers(min_value=0, max_value=len(data) - 1))
        changed = bytearray(data)
        changed[index] ^= flip.draw(st.integers(min_value=1, max_value=255))
        try:
            verify(secret, bytes(changed), header)
        except SignatureError:
            pass
        else:
            raise AssertionError("a changed body kept its signature")


@SETTINGS
@given(amount=st.decimals(min_value=0, max_value=Decimal("999999999999.99"), places=2))
def test_amounts_come_out_exactly_as_sent(amount) -> None:
    written = f"{amount:f}"
    for data in (
        b'{"id": 1, "total_price": "' + written.encode() + b'"}',  # Shopify: a string
        b'{"id": 1, "total_price": ' + written.encode() + b"}",  # a JSON number
    ):
        [order] = shopify.translate("orders/create", parse_json(data))
        assert order.total == f"{amount:.2f}"
    [order] = woocommerce.translate("order.created", {"id": 1, "total": written})
    assert Decimal(order.total) == amount
