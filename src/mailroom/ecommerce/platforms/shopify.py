"""Shopify webhook deliveries -> Mailroom actions.

Shopify posts the resource itself as the body (the REST Admin API's representation of the
order, checkout, product or customer, unwrapped) and names it in `X-Shopify-Topic`.

| topic                                          | action                                |
|------------------------------------------------|---------------------------------------|
| orders/create, orders/updated, orders/paid,    | OrderUpsert                           |
| orders/cancelled, orders/fulfilled,            |                                       |
| orders/partially_fulfilled                     |                                       |
| checkouts/create, checkouts/update             | CartUpsert (Ignored once completed)   |
| products/create, products/update               | ProductUpsert                         |
| customers/create, customers/update             | ConsentChange                         |
| customers_email_marketing_consent/update       | ConsentChange                         |
| anything else (deletions included)             | Ignored                               |

Order status, first rule that holds wins:

| Shopify                                               | Mailroom    |
|-------------------------------------------------------|-------------|
| `cancelled_at` set, or `financial_status` `voided`    | `cancelled` |
| `financial_status` `refunded`                         | `refunded`  |
| `fulfillment_status` `fulfilled`                      | `fulfilled` |
| `financial_status` `paid` or `partially_refunded`     | `paid`      |
| anything else (`pending`, `authorized`,               | `placed`    |
| `partially_paid`, null, a value added later)          |             |

Consent: an order never subscribes anyone (its `buyer_accepts_marketing` is not read). A
customer's `email_marketing_consent.state` decides when present: `subscribed` subscribes,
`unsubscribed` is a withdrawal, anything else (`not_subscribed`, `pending`, `redacted`,
`invalid`) changes nothing. Only when that object is absent or null (API versions before
2022-04, or a customer without it) does the legacy `accepts_marketing: true` subscribe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from . import fields as f
from .actions import (
    Action,
    CartUpsert,
    ConsentChange,
    Ignored,
    LineIn,
    OrderStatus,
    OrderUpsert,
    PayloadError,
    ProductUpsert,
)

ORDER_TOPICS = frozenset(
    {
        "orders/create",
        "orders/updated",
        "orders/paid",
        "orders/cancelled",
        "orders/fulfilled",
        "orders/partially_fulfilled",
    }
)
CHECKOUT_TOPICS = frozenset({"checkouts/create", "checkouts/update"})
PRODUCT_TOPICS = frozenset({"products/create", "products/update"})
CUSTOMER_TOPICS = frozenset({"customers/create", "customers/update"})
CONSENT_TOPIC = "customers_email_marketing_consent/update"
# What the set-up guide asks a merchant to subscribe to.
TOPICS = sorted(
    {
        "orders/create",
        "orders/updated",
        "orders/paid",
        "orders/cancelled",
        "orders/fulfilled",
        *CHECKOUT_TOPICS,
        *PRODUCT_TOPICS,
        *CUSTOMER_TOPICS,
        CONSENT_TOPIC,
    }
)


def translate(
    topic: str, payload: Mapping[str, Any], shop_domain: str | None = None
) -> list[Action]:
    """The actions for one delivery. `shop_domain` is `X-Shopify-Shop-Domain` (product pages
    live at `https://<shop>/products/<handle>`; a myshopify.com domain redirects to the
    shop's own). Raises `PayloadError` for a payload of the wrong shape."""
    if not isinstance(payload, Mapping):
        raise PayloadError("body must be a JSON object")
    name = topic.strip().lower()
    handler = _HANDLERS.get(name)
    if handler is None:
        return [Ignored(f"Shopify topic {name or '(none)'} is not used by Mailroom")]
    return handler(_unwrapped(payload, name), shop_domain)


def _unwrapped(payload: Mapping[str, Any], topic: str) -> Mapping[str, Any]:
    """Webhooks send the resource bare; the REST API wraps it (`{"order": {...}}`). Someone
    replaying an API response by hand should not get a puzzling error."""
    key = topic.split("/", 1)[0].rstrip("s")
    inner = payload.get(key)
    if len(payload) == 1 and isinstance(inner, dict):
        return inner
    return payload


def order_status(order: Mapping[str, Any]) -> OrderStatus:
    """The table in the module docstring."""
    financial = (f.text(order.get("financial_status"), "financial_status") or "").lower()
    fulfillment = (f.text(order.get("fulfillment_status"), "fulfillment_status") or "").lower()
    if f.text(order.get("cancelled_at"), "cancelled_at") or financial == "voided":
        return "cancelled"
    if financial == "refunded":
        return "refunded"
    if fulfillment == "fulfilled":
        return "fulfilled"
    if financial in ("paid", "partially_refunded"):
        return "paid"
    return "placed"


def _order(order: Mapping[str, Any], shop_domain: str | None) -> list[Action]:
    external_id = f.required_id(order.get("id"), "id")
    total = f.money(order.get("total_price"), "total_price")
    if total is None:
        raise PayloadError("total_price is required")
    customer = f.obj(order.get("customer"), "customer")
    email = f.first(
        f.email(order.get("email"), "email"),
        f.email(order.get("contact_email"), "contact_email"),
        f.email(customer.get("email"), "customer.email"),
    )
    placed_at = f.timestamp(order.get("created_at"), "created_at")
    if placed_at is None:
        placed_at = f.timestamp(order.get("processed_at"), "processed_at")
    return [
        OrderUpsert(
            external_id=external_id,
            email=email,
            status=order_status(order),
            total=f.two_places(total),
            currency=f.currency(order.get("currency"), "currency"),
            placed_at=placed_at,
            lines=_lines(order.get("line_items")),
            cart_id=f.identifier(order.get("checkout_token"), "checkout_token"),
            updated_at=f.timestamp(order.get("updated_at"), "updated_at"),
            test=bool(f.flag(order.get("test"), "test")),
        )
    ]


def _lines(value: Any) -> tuple[LineIn, ...]:
    """Lines with a product and a quantity: a custom item, a tip or a gift card without a
    product, and a line reduced to nothing, say nothing about what the person bought."""
    lines: list[LineIn] = []
    for index, raw in enumerate(f.items(value, "line_items")):
        where = f"line_items[{index}]"
        line = f.obj(raw, where)
        product_id = f.identifier(line.get("product_id"), f"{where}.product_id")
        quantity = f.quantity(line.get("quantity"), f"{where}.quantity")
        price = f.money(line.get("price"), f"{where}.price")
        title = f.first(
            f.title(line.get("title"), f"{where}.title"), f.title(line.get("name"), f"{where}.name")
        )
        if product_id is None or quantity == 0:
            continue
        if len(lines) == f.MAX_LINES:
            break  # the lines feed "bought X"; the order's total is already whole
        lines.append(LineIn(product_id, quantity, f.two_places(price or Decimal(0)), title))
    return tuple(lines)


def _checkout(checkout: Mapping[str, Any], shop_domain: str | None) -> list[Action]:
    token = f.required_id(checkout.get("token"), "token")
    total = f.money(checkout.get("total_price"), "total_price")
    completed = f.timestamp(checkout.get("completed_at"), "completed_at")
    lines = _lines(checkout.get("line_items"))
    customer = f.obj(checkout.get("customer"), "customer")
    email = f.first(
        f.email(checkout.get("email"), "email"), f.email(customer.get("email"), "customer.email")
    )
    if completed is not None:
        # The order it became carries this token as checkout_token and converts the cart;
        # touching the cart again now could only make it look fresh.
        return [Ignored(f"checkout {token} is completed: its order converts the cart")]
    return [
        CartUpsert(
            external_id=token,
            email=email,
            lines=lines,
            total=f.two_places(total if total is not None else _lines_total(lines)),
            checkout_url=f.url(checkout.get("abandoned_checkout_url"), "abandoned_checkout_url"),
            currency=f.currency(checkout.get("currency"), "currency"),
            updated_at=f.timestamp(checkout.get("updated_at"), "updated_at"),
        )
    ]


def _lines_total(lines: tuple[LineIn, ...]) -> Decimal:
    return sum((Decimal(line.price) * line.quantity for line in lines), Decimal(0))


def _product(product: Mapping[str, Any], shop_domain: str | None) -> list[Action]:
    external_id = f.required_id(product.get("id"), "id")
    title = f.title(product.get("title"), "title")
    if title is None:
        raise PayloadError("title is required")
    handle = f.text(product.get("handle"), "handle")
    domain = _domain(shop_domain)
    prices = []
    for index, raw in enumerate(f.items(product.get("variants"), "variants")):
        variant = f.obj(raw, f"variants[{index}]")
        price = f.money(variant.get("price"), f"variants[{index}].price")
        if price is not None:
            prices.append(price)
    return [
        ProductUpsert(
            external_id=external_id,
            title=title,
            url=f"https://{domain}/products/{handle}" if domain and handle else None,
            image_url=_image(product),
            price=f.two_places(min(prices)) if prices else None,  # "from" price of the variants
            categories=_categories(product),
        )
    ]


def _domain(shop_domain: str | None) -> str | None:
    """The shop's host as Shopify names it; anything that is not a bare host is dropped
    rather than put into a link."""
    if not shop_domain:
        return None
    host = shop_domain.strip().lower()
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789.-")
    return host if host and "." in host and set(host) <= allowed else None


def _image(product: Mapping[str, Any]) -> str | None:
    """The featured `image`, else the first of `images` (both null/empty when it has none)."""
    featured = f.obj(product.get("image"), "image")
    found = f.url(featured.get("src"), "image.src")
    if found:
        return found
    for index, raw in enumerate(f.items(product.get("images"), "images")):
        found = f.url(f.obj(raw, f"images[{index}]").get("src"), f"images[{index}].src")
        if found:
            return found
    return None


def _categories(product: Mapping[str, Any]) -> tuple[str, ...]:
    """What a merchant files a product under: its product type, its standard-taxonomy
    category (newer API versions) and its tags (one comma-separated string)."""
    names: list[str | None] = []
    product_type = f.text(product.get("product_type"), "product_type")
    if product_type:
        names.append(product_type)
    category = f.text(f.obj(product.get("category"), "category").get("name"), "category.name")
    if category:
        names.append(category)
    tags = product.get("tags")
    if isinstance(tags, list):  # GraphQL-shaped payloads list them
        tag_names = [f.text(tag, "tags[]") for tag in tags]
    else:
        tag_names = [part.strip() for part in (f.text(tags, "tags") or "").split(",")]
    names.extend(tag_names)
    return f.categories(names)


def customer_consent(customer: Mapping[str, Any]) -> bool | None:
    """The consent rule in the module docstring, for a customer object."""
    consent = customer.get("email_marketing_consent")
    if consent is not None:
        state = f.text(f.obj(consent, "email_marketing_consent").get("state"), "state")
        return _consent_state(state)
    return True if f.flag(customer.get("accepts_marketing"), "accepts_marketing") else None


def _consent_state(state: str | None) -> bool | None:
    normalized = (state or "").lower()
    if normalized == "subscribed":
        return True
    if normalized == "unsubscribed":
        return False
    return None


def _customer(customer: Mapping[str, Any], shop_domain: str | None) -> list[Action]:
    customer_id = f.identifier(customer.get("id"), "id")
    subscribed = customer_consent(customer)
    email = f.email(customer.get("email"), "email")
    if email is None:
        return [Ignored(f"customer {customer_id or '(no id)'} has no email address")]
    return [ConsentChange(email=email, subscribed=subscribed, customer_id=customer_id)]


def _consent_update(payload: Mapping[str, Any], shop_domain: str | None) -> list[Action]:
    """`{customer_id, email_address, email_marketing_consent: {state, opt_in_level,
    consent_updated_at}}` (API 2022-07 and later)."""
    customer_id = f.identifier(payload.get("customer_id"), "customer_id")
    consent = f.obj(payload.get("email_marketing_consent"), "email_marketing_consent")
    subscribed = _consent_state(f.text(consent.get("state"), "email_marketing_consent.state"))
    email = f.email(payload.get("email_address"), "email_address")
    if email is None:
        return [Ignored(f"customer {customer_id or '(no id)'} has no email address")]
    return [ConsentChange(email=email, subscribed=subscribed, customer_id=customer_id)]


_Handler = Callable[[Mapping[str, Any], str | None], list[Action]]
_HANDLERS: dict[str, _Handler] = {
    **dict.fromkeys(ORDER_TOPICS, _order),
    **dict.fromkeys(CHECKOUT_TOPICS, _checkout),
    **dict.fromkeys(PRODUCT_TOPICS, _product),
    **dict.fromkeys(CUSTOMER_TOPICS, _customer),
    CONSENT_TOPIC: _consent_update,
}
