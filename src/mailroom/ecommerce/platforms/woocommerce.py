"""WooCommerce webhook deliveries -> Mailroom actions.

WooCommerce posts the resource as its REST API (`/wp-json/wc/v3/<resource>s/<id>`) returns
it and names it in `X-WC-Webhook-Topic` (`<resource>.<event>`). A deletion sends only
`{"id": N}`.

| topic                                               | action        |
|-----------------------------------------------------|---------------|
| order.created, order.updated, order.restored        | OrderUpsert   |
| product.created, product.updated, product.restored  | ProductUpsert |
| customer.created, customer.updated                  | ConsentChange |
| anything else (deletions, coupons, action.*)        | Ignored       |

WooCommerce has no cart or checkout webhook: its abandoned carts reach Mailroom only through
the API (`PUT /api/v1/ecommerce/stores/{id}/carts/{external_id}`), and its orders carry no
`cart_id`.

Order status:

| WooCommerce                                      | Mailroom    |
|--------------------------------------------------|-------------|
| `pending` (awaiting payment), `on-hold`          | `placed`    |
| `processing` (paid, not yet shipped)             | `paid`      |
| `completed`                                      | `fulfilled` |
| `cancelled`, `failed` (payment declined), `trash`| `cancelled` |
| `refunded`                                       | `refunded`  |
| any other (a plugin's own status)                | `placed`    |

Consent: core WooCommerce records no marketing consent (its customer has no such field), so
a WooCommerce customer subscribes only when the shop adds it: an `accepts_marketing` field
that is `true`, or a `meta_data` entry with the key `accepts_marketing` and the value `true`,
`"1"`, `"yes"` or `"true"`. Anything else changes nothing; an order never subscribes anyone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from . import fields as f
from .actions import (
    Action,
    ConsentChange,
    Ignored,
    LineIn,
    OrderStatus,
    OrderUpsert,
    PayloadError,
    ProductUpsert,
)

ORDER_TOPICS = frozenset({"order.created", "order.updated", "order.restored"})
PRODUCT_TOPICS = frozenset({"product.created", "product.updated", "product.restored"})
CUSTOMER_TOPICS = frozenset({"customer.created", "customer.updated"})
# What the set-up guide asks a merchant to add (one WooCommerce webhook per topic).
TOPICS = sorted(
    {"order.created", "order.updated", "product.created", "product.updated", *CUSTOMER_TOPICS}
)

STATUS_MAP: dict[str, OrderStatus] = {
    "pending": "placed",
    "on-hold": "placed",
    "processing": "paid",
    "completed": "fulfilled",
    "cancelled": "cancelled",
    "failed": "cancelled",
    "trash": "cancelled",
    "refunded": "refunded",
}
CONSENT_META_KEY = "accepts_marketing"
_YES = frozenset({"1", "yes", "true"})


def translate(topic: str, payload: Mapping[str, Any]) -> list[Action]:
    """The actions for one delivery; raises `PayloadError` for a payload of the wrong shape."""
    if not isinstance(payload, Mapping):
        raise PayloadError("body must be a JSON object")
    name = topic.strip().lower()
    handler = _HANDLERS.get(name)
    if handler is None:
        return [Ignored(f"WooCommerce topic {name or '(none)'} is not used by Mailroom")]
    return handler(payload)


def order_status(value: str | None) -> OrderStatus:
    """The table in the module docstring (`wc-` prefixed names read the same)."""
    status = (value or "").lower().removeprefix("wc-")
    return STATUS_MAP.get(status, "placed")


def _order(order: Mapping[str, Any]) -> list[Action]:
    external_id = f.required_id(order.get("id"), "id")
    total = f.money(order.get("total"), "total")
    if total is None:
        raise PayloadError("total is required")
    billing = f.obj(order.get("billing"), "billing")
    placed_at = f.timestamp(order.get("date_created_gmt"), "date_created_gmt")
    if placed_at is None:  # site-local time; only when the GMT one is missing
        placed_at = f.timestamp(order.get("date_created"), "date_created")
    return [
        OrderUpsert(
            external_id=external_id,
            email=f.email(billing.get("email"), "billing.email"),
            status=order_status(f.text(order.get("status"), "status")),
            total=f.two_places(total),
            currency=f.currency(order.get("currency"), "currency"),
            placed_at=placed_at,
            lines=_lines(order.get("line_items")),
            updated_at=f.timestamp(order.get("date_modified_gmt"), "date_modified_gmt"),
        )
    ]


def _lines(value: Any) -> tuple[LineIn, ...]:
    """The unit price is the line's `total` (a decimal string, after discounts) divided by
    its quantity: WooCommerce's own `price` is that same division sent as a JSON number."""
    lines: list[LineIn] = []
    for index, raw in enumerate(f.items(value, "line_items")):
        where = f"line_items[{index}]"
        line = f.obj(raw, where)
        product_id = f.product_identifier(line.get("product_id"), f"{where}.product_id")
        quantity = f.quantity(line.get("quantity"), f"{where}.quantity")
        line_total = f.money(line.get("total"), f"{where}.total")
        price = f.money(line.get("price"), f"{where}.price")
        title = f.title(line.get("name"), f"{where}.name", entities=True)
        if product_id is None or quantity == 0:
            continue  # a product since deleted, or a line refunded to nothing
        if len(lines) == f.MAX_LINES:
            break  # the lines feed "bought X"; the order's total is already whole
        unit = line_total / quantity if line_total is not None else price
        lines.append(LineIn(product_id, quantity, f.two_places(unit or Decimal(0)), title))
    return tuple(lines)


def _product(product: Mapping[str, Any]) -> list[Action]:
    external_id = f.required_id(product.get("id"), "id")
    if (f.text(product.get("type"), "type") or "").lower() == "variation":
        # Order lines name the parent product (product_id; the variation is variation_id),
        # and the parent's own delivery carries its title, link and "from" price.
        return [Ignored(f"product {external_id} is a variation: its parent product stands for it")]
    title = f.title(product.get("name"), "name", entities=True)
    if title is None:
        raise PayloadError("name is required")
    image = None
    for index, raw in enumerate(f.items(product.get("images"), "images")):
        image = f.url(f.obj(raw, f"images[{index}]").get("src"), f"images[{index}].src")
        if image:
            break
    names = [
        f.title(
            f.obj(raw, f"categories[{index}]").get("name"),
            f"categories[{index}].name",
            entities=True,
        )
        for index, raw in enumerate(f.items(product.get("categories"), "categories"))
    ]
    price = f.money(product.get("price"), "price")
    return [
        ProductUpsert(
            external_id=external_id,
            title=title,
            url=f.url(product.get("permalink"), "permalink"),
            image_url=image,
            price=f.two_places(price) if price is not None else None,
            categories=f.categories(names),
        )
    ]


def customer_consent(customer: Mapping[str, Any]) -> bool | None:
    """True only when the shop says yes (module docstring); never False: WooCommerce has no
    withdrawal to report, and a missing yes is not a no."""
    if f.flag(customer.get("accepts_marketing"), "accepts_marketing"):
        return True
    for index, raw in enumerate(f.items(customer.get("meta_data"), "meta_data")):
        meta = f.obj(raw, f"meta_data[{index}]")
        if meta.get("key") == CONSENT_META_KEY and _says_yes(meta.get("value")):
            return True
    return None


def _says_yes(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value == 1
    return isinstance(value, str) and value.strip().lower() in _YES


def _customer(customer: Mapping[str, Any]) -> list[Action]:
    customer_id = f.identifier(customer.get("id"), "id")
    subscribed = customer_consent(customer)
    billing = f.obj(customer.get("billing"), "billing")
    email = f.first(
        f.email(customer.get("email"), "email"), f.email(billing.get("email"), "billing.email")
    )
    if email is None:
        return [Ignored(f"customer {customer_id or '(no id)'} has no email address")]
    return [ConsentChange(email=email, subscribed=subscribed, customer_id=customer_id)]


_HANDLERS: dict[str, Callable[[Mapping[str, Any]], list[Action]]] = {
    **dict.fromkeys(ORDER_TOPICS, _order),
    **dict.fromkeys(PRODUCT_TOPICS, _product),
    **dict.fromkeys(CUSTOMER_TOPICS, _customer),
}


def is_ping(body: bytes, signature: str | None, topic: str | None) -> bool:
    """WooCommerce's test ping, sent once when a webhook is saved as active: a form body
    `webhook_id=<n>` with no signature and no topic. It must be answered 200 or WooCommerce
    shows the merchant "Delivery URL returned response code"; it carries nothing to store."""
    if (signature and signature.strip()) or (topic and topic.strip()):
        return False
    name, _, number = body.strip().partition(b"=")
    return name == b"webhook_id" and number.isdigit() and len(number) <= 20
