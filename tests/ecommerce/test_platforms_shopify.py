"""Shopify deliveries translated: each topic on its documented payload, the status table,
the consent rule, exact money, and what a malformed payload is refused with."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from mailroom.ecommerce.platforms import (
    CartUpsert,
    ConsentChange,
    Ignored,
    LineIn,
    OrderUpsert,
    PayloadError,
    ProductUpsert,
    parse_json,
    shopify,
)

from .platform_fixtures import load

DOMAIN = "mailroom-demo.myshopify.com"


def translate(topic: str, payload: dict, shop_domain: str | None = DOMAIN) -> list:
    return shopify.translate(topic, payload, shop_domain=shop_domain)


def only(actions: list):
    assert len(actions) == 1, actions
    return actions[0]


# Orders


def test_orders_create() -> None:
    assert translate("orders/create", load("shopify", "orders_create")) == [
        OrderUpsert(
            external_id="5208334008572",
            email="jane.doe@example.com",  # normalised as Mailroom stores addresses
            status="paid",
            total="59.95",
            currency="USD",
            placed_at=datetime(2026, 5, 13, 16, 0, tzinfo=UTC),
            lines=(
                LineIn("788032119674292922", 1, "29.95", "Mailroom T-Shirt"),
                LineIn("632910392", 2, "12.50", "Sticker Pack"),
                # the gift wrapping has no product: it says nothing about what was bought
            ),
            cart_id="6a7f9943815c1867d7f3532590e5597e",
            updated_at=datetime(2026, 5, 13, 16, 0, 2, tzinfo=UTC),
            test=False,
        )
    ]


def test_the_documented_cancelled_order() -> None:
    order = only(translate("orders/cancelled", load("shopify", "orders_cancelled")))
    assert order.external_id == "820982911946154508"
    assert order.status == "cancelled"
    assert order.total == "388.00"
    assert order.email == "jon@example.com"
    assert order.cart_id is None
    assert order.test is True  # Shopify's sample payloads are test orders
    assert order.lines == (
        LineIn("632910392", 1, "199.00", "IPod Nano - 8GB"),
        LineIn("632910392", 1, "199.00", "IPod Nano - 8GB"),
    )


@pytest.mark.parametrize(
    "topic",
    [
        "orders/create",
        "orders/updated",
        "orders/paid",
        "orders/cancelled",
        "orders/fulfilled",
        "orders/partially_fulfilled",
        " Orders/Updated ",
    ],
)
def test_every_order_topic_upserts_the_order(topic) -> None:
    assert isinstance(only(translate(topic, load("shopify", "orders_create"))), OrderUpsert)


@pytest.mark.parametrize(
    ("financial_status", "fulfillment_status", "cancelled_at", "expected"),
    [
        ("pending", None, None, "placed"),
        ("authorized", None, None, "placed"),
        ("partially_paid", None, None, "placed"),
        (None, None, None, "placed"),
        ("expired", None, None, "placed"),  # a value Shopify adds later: placed, not an error
        ("paid", None, None, "paid"),
        ("paid", "partial", None, "paid"),
        ("partially_refunded", None, None, "paid"),
        ("PAID", None, None, "paid"),
        ("paid", "fulfilled", None, "fulfilled"),
        ("pending", "fulfilled", None, "fulfilled"),  # cash on delivery, shipped
        ("partially_refunded", "fulfilled", None, "fulfilled"),
        ("refunded", None, None, "refunded"),
        ("refunded", "fulfilled", None, "refunded"),
        ("voided", None, None, "cancelled"),
        ("paid", None, "2026-05-14T09:00:00-04:00", "cancelled"),
        ("refunded", "fulfilled", "2026-05-14T09:00:00-04:00", "cancelled"),
    ],
)
def test_order_status_table(financial_status, fulfillment_status, cancelled_at, expected) -> None:
    payload = load("shopify", "orders_create")
    payload.update(
        financial_status=financial_status,
        fulfillment_status=fulfillment_status,
        cancelled_at=cancelled_at,
    )
    assert only(translate("orders/updated", payload)).status == expected


def test_an_order_never_subscribes_anyone() -> None:
    payload = load("shopify", "orders_create")
    assert payload["buyer_accepts_marketing"] is True
    assert payload["customer"]["email_marketing_consent"]["state"] == "subscribed"
    actions = translate("orders/create", payload)
    assert not [action for action in actions if isinstance(action, ConsentChange)]


def test_an_order_without_an_email_is_kept_without_one() -> None:
    payload = load("shopify", "orders_create")
    for key in ("email", "contact_email", "customer"):
        del payload[key]
    assert only(translate("orders/create", payload)).email is None

    payload = load("shopify", "orders_create")
    payload.update(email="", contact_email=None, customer=None)  # POS sale, no address
    assert only(translate("orders/create", payload)).email is None


def test_the_order_email_falls_back_to_the_contact_then_the_customer() -> None:
    payload = load("shopify", "orders_create")
    payload.update(email=None, contact_email="Contact@Example.com")
    assert only(translate("orders/create", payload)).email == "contact@example.com"
    payload.update(contact_email="not an address")
    assert only(translate("orders/create", payload)).email == "jane.doe@example.com"


def test_an_order_with_only_the_optional_fields_missing() -> None:
    order = only(translate("orders/create", {"id": 1, "total_price": "0.00"}))
    assert order == OrderUpsert(
        external_id="1",
        email=None,
        status="placed",
        total="0.00",
        currency=None,
        placed_at=None,
        lines=(),
        cart_id=None,
        updated_at=None,
        test=False,
    )


def test_placed_at_falls_back_to_processed_at() -> None:
    payload = load("shopify", "orders_create")
    payload["created_at"] = None
    order = only(translate("orders/create", payload))
    assert order.placed_at == datetime(2026, 5, 13, 15, 59, 58, tzinfo=UTC)


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ('"19.9"', "19.90"),
        ('"0.10"', "0.10"),
        ('"1234567.89"', "1234567.89"),
        ('"1000"', "1000.00"),  # zero-decimal currencies (JPY) are written without places
        ('"0.005"', "0.01"),  # a third place rounds half up
        ("1234567.89", "1234567.89"),  # a JSON number: read as Decimal, never a float
        ("0.3", "0.30"),
        ("7", "7.00"),
    ],
)
def test_money_is_exact(written, expected) -> None:
    payload = parse_json(b'{"id": 7, "total_price": ' + written.encode() + b"}")
    assert only(translate("orders/create", payload)).total == expected


def test_an_api_wrapped_order_is_unwrapped() -> None:
    wrapped = {"order": load("shopify", "orders_create")}
    assert only(translate("orders/create", wrapped)).external_id == "5208334008572"


# Checkouts


def test_checkouts_create() -> None:
    assert translate("checkouts/create", load("shopify", "checkouts_create")) == [
        CartUpsert(
            external_id="6a7f9943815c1867d7f3532590e5597e",
            email="jane.doe@example.com",
            lines=(
                LineIn("788032119674292922", 1, "29.95", "Mailroom T-Shirt"),
                LineIn("632910392", 2, "12.50", "Sticker Pack"),
            ),
            total="54.95",
            checkout_url="https://shop.example.com/48380009/checkouts/6a7f9943815c1867d7f3532590e5597e/recover?key=a52e93c1a2b4e0bb",
            currency="USD",
            updated_at=datetime(2026, 5, 13, 15, 45, 30, tzinfo=UTC),
        )
    ]


def test_the_order_names_the_checkout_it_converts() -> None:
    cart = only(translate("checkouts/update", load("shopify", "checkouts_create")))
    order = only(translate("orders/create", load("shopify", "orders_create")))
    assert order.cart_id == cart.external_id


def test_a_checkout_before_the_email_is_typed() -> None:
    payload = load("shopify", "checkouts_create")
    payload.update(email=None, customer=None)
    assert only(translate("checkouts/create", payload)).email is None


def test_a_completed_checkout_is_left_to_its_order() -> None:
    payload = load("shopify", "checkouts_create")
    payload["completed_at"] = "2026-05-13T12:00:00-04:00"
    ignored = only(translate("checkouts/update", payload))
    assert isinstance(ignored, Ignored)
    assert "completed" in ignored.reason


# Products


def test_products_create() -> None:
    assert translate("products/create", load("shopify", "products_create")) == [
        ProductUpsert(
            external_id="788032119674292922",
            title="Example T-Shirt",
            url=f"https://{DOMAIN}/products/example-t-shirt",
            image_url="https://cdn.shopify.com/s/files/1/0005/4838/0009/products/t-shirt.jpg?v=1640995200",
            price="17.50",  # the lowest variant price: "from 17.50"
            categories=("Shirts", "T-Shirts", "example", "mens", "t-shirt"),
        )
    ]


def test_a_product_without_image_variants_or_shop_domain() -> None:
    payload = load("shopify", "products_create")
    payload.update(image=None, images=[], variants=[], product_type="", tags="", category=None)
    product = only(translate("products/update", payload, shop_domain=None))
    assert (product.url, product.image_url, product.price, product.categories) == (
        None,
        None,
        None,
        (),
    )


def test_the_first_image_stands_in_for_a_missing_featured_one() -> None:
    payload = load("shopify", "products_create")
    payload["image"] = None
    payload["images"][0]["src"] = "//cdn.shopify.com/s/files/1/first.jpg"
    assert only(translate("products/update", payload)).image_url == (
        "https://cdn.shopify.com/s/files/1/first.jpg"
    )


@pytest.mark.parametrize(
    "domain", ["", "evil.com/path?x=", "javascript:alert(1)", "shop", "a b.myshopify.com"]
)
def test_an_odd_shop_domain_makes_no_link(domain) -> None:
    product = only(translate("products/update", load("shopify", "products_create"), domain))
    assert product.url is None


def test_tags_sent_as_a_list_and_duplicates() -> None:
    payload = load("shopify", "products_create")
    payload.update(tags=["Shirts", "summer", " "], category=None)
    assert only(translate("products/update", payload)).categories == ("Shirts", "summer")


# Customers and consent


@pytest.mark.parametrize(
    ("consent", "accepts_marketing", "expected"),
    [
        ({"state": "subscribed", "opt_in_level": "single_opt_in"}, None, True),
        ({"state": "subscribed", "opt_in_level": "confirmed_opt_in"}, False, True),
        ({"state": "SUBSCRIBED"}, None, True),
        ({"state": "unsubscribed"}, None, False),
        ({"state": "not_subscribed"}, None, None),
        ({"state": "pending", "opt_in_level": "confirmed_opt_in"}, None, None),
        ({"state": "redacted"}, None, None),
        ({"state": "invalid"}, None, None),
        ({"state": None}, None, None),
        ({"state": "not_subscribed"}, True, None),  # the consent object decides when present
        (None, True, True),  # API versions before 2022-04: accepts_marketing
        (None, False, None),  # never a withdrawal: false was every customer's default
        (None, None, None),
    ],
)
def test_customer_consent_rule(consent, accepts_marketing, expected) -> None:
    payload = load("shopify", "customers_create")
    payload["email_marketing_consent"] = consent
    payload["accepts_marketing"] = accepts_marketing
    for topic in ("customers/create", "customers/update"):
        assert translate(topic, payload) == [
            ConsentChange(
                email="bob@biller.com", subscribed=expected, customer_id="706405506930370084"
            )
        ]


def test_the_documented_customers() -> None:
    subscribed = only(translate("customers/create", load("shopify", "customers_create")))
    assert subscribed.subscribed is True
    legacy = only(translate("customers/update", load("shopify", "customers_update_legacy")))
    assert legacy == ConsentChange("bob@biller.com", True, "706405506930370084")


def test_a_customer_without_an_email_changes_nothing() -> None:
    payload = load("shopify", "customers_create")
    payload["email"] = None  # a phone-only customer
    assert isinstance(only(translate("customers/create", payload)), Ignored)


def test_the_consent_topic() -> None:
    payload = load("shopify", "customers_email_marketing_consent_update")
    topic = "customers_email_marketing_consent/update"
    assert translate(topic, payload) == [
        ConsentChange("bob@biller.com", False, "706405506930370084")
    ]
    payload["email_marketing_consent"]["state"] = "subscribed"
    assert only(translate(topic, payload)).subscribed is True
    payload["email_marketing_consent"]["state"] = "pending"
    assert only(translate(topic, payload)).subscribed is None
    payload["email_address"] = ""
    assert isinstance(only(translate(topic, payload)), Ignored)


# Topics Mailroom does not use


@pytest.mark.parametrize(
    "topic",
    [
        "orders/delete",
        "products/delete",
        "customers/delete",
        "checkouts/delete",
        "orders/edited",
        "refunds/create",
        "app/uninstalled",
        "customers_marketing_consent/update",  # SMS consent: not email
        "",
    ],
)
def test_other_topics_are_ignored(topic) -> None:
    ignored = only(translate(topic, {"id": 788032119674292922}))
    assert isinstance(ignored, Ignored)
    assert "not used" in ignored.reason


# Malformed payloads: a clear PayloadError, never anything else


@pytest.mark.parametrize(
    ("topic", "change", "message"),
    [
        ("orders/create", {"id": None}, "id is required"),
        ("orders/create", {"id": True}, "id must be an id (a whole number or a string)"),
        ("orders/create", {"id": 1.5}, "id must be an id (a whole number or a string)"),
        ("orders/create", {"total_price": None}, "total_price is required"),
        ("orders/create", {"total_price": {"amount": "1"}}, "total_price must be an amount"),
        ("orders/create", {"total_price": "12,50"}, "total_price must be a decimal amount"),
        ("orders/create", {"total_price": "NaN"}, "total_price must be a decimal amount"),
        ("orders/create", {"total_price": "-1.00"}, "total_price must not be negative"),
        (
            "orders/create",
            {"currency": "US Dollar"},
            "currency must be a three-letter currency code",
        ),
        ("orders/create", {"currency": 840}, "currency must be a string"),
        ("orders/create", {"created_at": "yesterday"}, "created_at must be an ISO 8601 date-time"),
        ("orders/create", {"line_items": {"id": 1}}, "line_items must be a list"),
        ("orders/create", {"line_items": ["x"]}, "line_items[0] must be an object"),
        ("orders/create", {"customer": "jane"}, "customer must be an object"),
        ("orders/create", {"financial_status": 1}, "financial_status must be a string"),
        ("orders/create", {"test": "yes"}, "test must be true or false"),
        ("checkouts/create", {"token": None}, "token is required"),
        ("products/create", {"title": "  "}, "title is required"),
        ("products/create", {"variants": [{"price": []}]}, "variants[0].price must be an amount"),
        ("products/create", {"image": "x.jpg"}, "image must be an object"),
        (
            "customers/create",
            {"email_marketing_consent": "subscribed"},
            "email_marketing_consent must be an object",
        ),
        (
            "customers/create",
            {"email_marketing_consent": None, "accepts_marketing": "true"},
            "accepts_marketing must be true or false",
        ),
    ],
)
def test_wrong_types_are_payload_errors(topic, change, message) -> None:
    fixture = {
        "orders/create": "orders_create",
        "checkouts/create": "checkouts_create",
        "products/create": "products_create",
        "customers/create": "customers_create",
    }[topic]
    payload = load("shopify", fixture)
    payload.update(change)
    with pytest.raises(PayloadError) as refused:
        translate(topic, payload)
    assert str(refused.value) == message


def test_a_line_quantity_must_be_a_whole_number() -> None:
    payload = load("shopify", "orders_create")
    payload["line_items"][1]["quantity"] = "two"
    with pytest.raises(PayloadError, match=r"^line_items\[1\]\.quantity must be a whole number$"):
        translate("orders/create", payload)
    payload["line_items"][1]["quantity"] = Decimal("2.0")  # 2.0 in the JSON
    assert only(translate("orders/create", payload)).lines[1].quantity == 2


def test_a_body_that_is_not_an_object() -> None:
    with pytest.raises(PayloadError, match=r"^body must be a JSON object$"):
        shopify.translate("orders/create", [1, 2])  # type: ignore[arg-type]


# Valid platform data is fitted to what the e-commerce API stores, never refused


def test_tags_past_the_api_limits() -> None:
    payload = load("shopify", "products_create")
    note = "x" * 101  # Shopify allows tags of 255 characters; a category holds 100
    payload.update(
        product_type="", category=None, tags=", ".join([note, *(f"tag{n}" for n in range(60))])
    )
    categories = only(translate("products/update", payload)).categories
    assert categories == tuple(f"tag{n}" for n in range(50))


def test_a_long_title_is_cut_and_its_spaces_folded() -> None:
    payload = load("shopify", "products_create")
    payload["title"] = "  Example\n  T-Shirt  " + "!" * 600
    title = only(translate("products/update", payload)).title
    assert title.startswith("Example T-Shirt !!!")
    assert len(title) == 500


def test_a_wholesale_order_keeps_its_total_and_500_lines() -> None:
    payload = load("shopify", "orders_create")
    line = payload["line_items"][0]
    payload["line_items"] = [{**line, "product_id": n} for n in range(1, 602)]
    order = only(translate("orders/create", payload))
    assert len(order.lines) == 500
    assert order.total == "59.95"


def test_an_overlong_or_odd_link_is_left_out() -> None:
    payload = load("shopify", "checkouts_create")
    payload["abandoned_checkout_url"] = "https://shop.example.com/" + "a" * 2000
    assert only(translate("checkouts/update", payload)).checkout_url is None
    payload["abandoned_checkout_url"] = "javascript:alert(1)"
    assert only(translate("checkouts/update", payload)).checkout_url is None
