"""WooCommerce deliveries translated: each topic on its documented REST payload, the status
table, the consent rule (core WooCommerce sends none), exact money and malformed payloads."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mailroom.ecommerce.platforms import (
    ConsentChange,
    Ignored,
    LineIn,
    OrderUpsert,
    PayloadError,
    ProductUpsert,
    woocommerce,
)

from .platform_fixtures import load


def only(actions: list):
    assert len(actions) == 1, actions
    return actions[0]


# Orders


def test_order_created() -> None:
    assert woocommerce.translate("order.created", load("woocommerce", "order_created")) == [
        OrderUpsert(
            external_id="727",
            email="john.doe@example.com",
            status="paid",
            total="29.35",
            currency="USD",
            placed_at=datetime(2017, 3, 22, 19, 28, 2, tzinfo=UTC),  # date_created_gmt
            lines=(
                LineIn("93", 2, "3.00", "Woo Single #1"),
                LineIn("22", 1, "12.00", "Ship Your Idea – Color: Black, Size: M Test"),
            ),
            cart_id=None,  # WooCommerce has no cart id to give
            updated_at=datetime(2017, 3, 22, 19, 28, 8, tzinfo=UTC),
            test=False,
        )
    ]


@pytest.mark.parametrize(
    "topic", ["order.created", "order.updated", "order.restored", "ORDER.UPDATED"]
)
def test_every_order_topic_upserts_the_order(topic) -> None:
    order = only(woocommerce.translate(topic, load("woocommerce", "order_created")))
    assert isinstance(order, OrderUpsert)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("pending", "placed"),
        ("on-hold", "placed"),
        ("processing", "paid"),
        ("completed", "fulfilled"),
        ("cancelled", "cancelled"),
        ("failed", "cancelled"),
        ("trash", "cancelled"),
        ("refunded", "refunded"),
        ("wc-completed", "fulfilled"),
        ("Processing", "paid"),
        ("shipped", "placed"),  # a plugin's own status: placed, not an error
        (None, "placed"),
    ],
)
def test_order_status_table(status, expected) -> None:
    payload = load("woocommerce", "order_created")
    payload["status"] = status
    assert only(woocommerce.translate("order.updated", payload)).status == expected


def test_the_unit_price_comes_from_the_line_total_string() -> None:
    payload = load("woocommerce", "order_created")
    line = payload["line_items"][0]
    line.update(quantity=3, total="10.00", price=3.3333333333333335)  # the float WC sends
    assert only(woocommerce.translate("order.updated", payload)).lines[0] == LineIn(
        "93", 3, "3.33", "Woo Single #1"
    )
    del line["total"]  # older payloads: only the price is there
    line["price"] = 3
    assert only(woocommerce.translate("order.updated", payload)).lines[0].price == "3.00"


def test_lines_of_deleted_products_or_nothing_left_are_dropped() -> None:
    payload = load("woocommerce", "order_created")
    payload["line_items"][0]["product_id"] = 0  # WooCommerce's "product since deleted"
    payload["line_items"][1]["quantity"] = 0
    assert only(woocommerce.translate("order.updated", payload)).lines == ()


def test_an_order_without_an_email_is_kept_without_one() -> None:
    payload = load("woocommerce", "order_created")
    payload["billing"]["email"] = ""  # a phone order typed in the admin
    assert only(woocommerce.translate("order.created", payload)).email is None
    payload["billing"] = []  # PHP's empty array: [] where an object belongs
    assert only(woocommerce.translate("order.created", payload)).email is None
    del payload["billing"]
    assert only(woocommerce.translate("order.created", payload)).email is None


def test_placed_at_falls_back_to_the_local_date() -> None:
    payload = load("woocommerce", "order_created")
    payload["date_created_gmt"] = None
    placed = only(woocommerce.translate("order.created", payload)).placed_at
    assert placed == datetime(2017, 3, 22, 16, 28, 2, tzinfo=UTC)


def test_an_order_never_subscribes_anyone() -> None:
    payload = load("woocommerce", "order_created")
    payload["meta_data"].append({"id": 1, "key": "accepts_marketing", "value": "yes"})
    payload["accepts_marketing"] = True
    actions = woocommerce.translate("order.created", payload)
    assert [type(action) for action in actions] == [OrderUpsert]


# Products


def test_product_updated() -> None:
    assert woocommerce.translate("product.updated", load("woocommerce", "product_updated")) == [
        ProductUpsert(
            external_id="794",
            title="Premium Quality",
            url="https://example.com/product/premium-quality-19/",
            image_url="https://example.com/wp-content/uploads/2017/03/T_2_front-4.jpg",
            price="21.99",
            categories=("Clothing", "T-shirts"),
        )
    ]


def test_a_product_without_price_images_or_categories() -> None:
    payload = load("woocommerce", "product_updated")
    payload.update(price="", images=[], categories=[], permalink=None)
    product = only(woocommerce.translate("product.created", payload))
    assert (product.price, product.image_url, product.categories, product.url) == (
        None,
        None,
        (),
        None,
    )


def test_a_variation_is_left_to_its_parent() -> None:
    payload = load("woocommerce", "product_updated")
    payload.update(id=23, type="variation", parent_id=22)
    assert isinstance(only(woocommerce.translate("product.updated", payload)), Ignored)


# Customers and consent


def test_the_documented_customer_says_nothing_about_consent() -> None:
    assert woocommerce.translate("customer.created", load("woocommerce", "customer_created")) == [
        ConsentChange(email="john.doe@example.com", subscribed=None, customer_id="25")
    ]


@pytest.mark.parametrize(
    ("accepts_marketing", "meta", "expected"),
    [
        (True, [], True),
        (False, [], None),
        (None, [{"id": 1, "key": "accepts_marketing", "value": "yes"}], True),
        (None, [{"id": 1, "key": "accepts_marketing", "value": "1"}], True),
        (None, [{"id": 1, "key": "accepts_marketing", "value": True}], True),
        (None, [{"id": 1, "key": "accepts_marketing", "value": " TRUE "}], True),
        (None, [{"id": 1, "key": "accepts_marketing", "value": "no"}], None),
        (None, [{"id": 1, "key": "accepts_marketing", "value": "0"}], None),
        (None, [{"id": 1, "key": "accepts_marketing", "value": ["yes"]}], None),
        (None, [{"id": 1, "key": "newsletter", "value": "yes"}], None),
        (False, [{"id": 1, "key": "accepts_marketing", "value": "yes"}], True),
    ],
)
def test_customer_consent_rule(accepts_marketing, meta, expected) -> None:
    payload = load("woocommerce", "customer_created")
    payload["meta_data"] = meta
    if accepts_marketing is not None:
        payload["accepts_marketing"] = accepts_marketing
    for topic in ("customer.created", "customer.updated"):
        assert only(woocommerce.translate(topic, payload)).subscribed is expected


def test_a_customer_email_falls_back_to_billing() -> None:
    payload = load("woocommerce", "customer_created")
    payload["email"] = ""
    assert only(woocommerce.translate("customer.updated", payload)).email == "john.doe@example.com"
    payload["billing"]["email"] = ""
    assert isinstance(only(woocommerce.translate("customer.updated", payload)), Ignored)


# Topics Mailroom does not use


@pytest.mark.parametrize(
    "topic",
    [
        "order.deleted",
        "product.deleted",
        "customer.deleted",
        "coupon.created",
        "action.woocommerce_add_to_cart",
        "",
    ],
)
def test_other_topics_are_ignored(topic) -> None:
    ignored = only(woocommerce.translate(topic, {"id": 727}))  # a deletion sends only the id
    assert isinstance(ignored, Ignored)
    assert "not used" in ignored.reason


# Malformed payloads


@pytest.mark.parametrize(
    ("topic", "change", "message"),
    [
        ("order.created", {"id": None}, "id is required"),
        ("order.created", {"total": None}, "total is required"),
        ("order.created", {"total": 29.35}, None),  # a float is its own shortest text: fine
        ("order.created", {"total": "29,35"}, "total must be a decimal amount"),
        ("order.created", {"status": 3}, "status must be a string"),
        ("order.created", {"billing": "john.doe@example.com"}, "billing must be an object"),
        (
            "order.created",
            {"line_items": [{"product_id": 93, "quantity": -1}]},
            "line_items[0].quantity must be a whole number between 0 and 1000000",
        ),
        (
            "order.created",
            {"line_items": [{"product_id": [93], "quantity": 1}]},
            "line_items[0].product_id must be an id (a whole number or a string)",
        ),
        (
            "order.created",
            {"date_created_gmt": "22/03/2017"},
            "date_created_gmt must be an ISO 8601 date-time",
        ),
        ("product.updated", {"name": ""}, "name is required"),
        ("product.updated", {"categories": ["Clothing"]}, "categories[0] must be an object"),
        ("product.updated", {"price": True}, "price must be an amount"),
        (
            "customer.created",
            {"meta_data": {"accepts_marketing": "yes"}},
            "meta_data must be a list",
        ),
        (
            "customer.created",
            {"accepts_marketing": "yes"},
            "accepts_marketing must be true or false",
        ),
    ],
)
def test_wrong_types_are_payload_errors(topic, change, message) -> None:
    fixture = {
        "order.created": "order_created",
        "product.updated": "product_updated",
        "customer.created": "customer_created",
    }[topic]
    payload = load("woocommerce", fixture)
    payload.update(change)
    if message is None:
        assert only(woocommerce.translate(topic, payload)).total == "29.35"
        return
    with pytest.raises(PayloadError) as refused:
        woocommerce.translate(topic, payload)
    assert str(refused.value) == message


def test_is_ping() -> None:
    assert woocommerce.is_ping(b"webhook_id=142", None, None)
    assert woocommerce.is_ping(b"webhook_id=142\n", "", " ")
    assert not woocommerce.is_ping(b"webhook_id=142", "c2ln", None)
    assert not woocommerce.is_ping(b"webhook_id=142", None, "order.created")
    assert not woocommerce.is_ping(b"webhook_id=abc", None, None)
    assert not woocommerce.is_ping(b"id=142", None, None)


def test_wordpress_entities_in_names_are_decoded() -> None:
    payload = load("woocommerce", "product_updated")
    payload["name"] = "Tea &amp; Cake &#8211; Gift Box"
    payload["categories"] = [{"id": 9, "name": "Food &amp; Drink", "slug": "food-drink"}]
    product = only(woocommerce.translate("product.updated", payload))
    assert (product.title, product.categories) == ("Tea & Cake – Gift Box", ("Food & Drink",))
