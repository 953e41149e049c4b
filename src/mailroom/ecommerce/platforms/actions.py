"""What a platform delivery asks Mailroom to do, in Mailroom's own terms.

The translators (`shopify.translate`, `woocommerce.translate`) turn a webhook into a list of
these; the endpoint applies them with the same services the `/api/v1/ecommerce` routes use.
They are plain values: nothing here touches the database.

Money is always a string with two decimal places (`"19.90"`), read from the platform's own
decimal text; dates are timezone-aware UTC datetimes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

OrderStatus = Literal["placed", "paid", "fulfilled", "cancelled", "refunded"]
ORDER_STATUSES: tuple[OrderStatus, ...] = ("placed", "paid", "fulfilled", "cancelled", "refunded")


class PayloadError(ValueError):
    """The delivery is not something a platform sends: not JSON, or a field of the wrong type.

    The endpoint answers 400 with `str(error)` and stores nothing. Fields that are merely
    missing or null do not raise (they become None); only the few an action cannot exist
    without do (an order's id and total, a product's id and title, a checkout's token).
    """


class SignatureError(ValueError):
    """The delivery is not signed with the store's webhook secret: the endpoint answers 401
    and stores nothing."""


@dataclass(frozen=True)
class LineIn:
    """One line of an order or a cart. `price` is the unit price."""

    product_id: str
    quantity: int
    price: str
    title: str | None = None


@dataclass(frozen=True)
class OrderUpsert:
    """Create or update the order `external_id` (the platform's order id).

    `currency` is None only when the platform left it out (the store's currency applies);
    `placed_at` is None when the payload carries no creation date (use the time received).
    `updated_at` is the platform's last-change time when it sends one: deliveries can arrive
    out of order, so an upsert older than what is stored may be skipped. `cart_id` is the
    external id of the cart this order converts (Shopify's checkout token). `test` is the
    platform's test-order flag (Shopify's bogus gateway and "send test notification").
    """

    external_id: str
    email: str | None
    status: OrderStatus
    total: str
    currency: str | None
    placed_at: datetime | None
    lines: tuple[LineIn, ...] = ()
    cart_id: str | None = None
    updated_at: datetime | None = None
    test: bool = False


@dataclass(frozen=True)
class CartUpsert:
    """Create or update the cart `external_id` (Shopify: the checkout token, the same value
    a later order carries as `checkout_token`, so the order converts this cart)."""

    external_id: str
    email: str | None
    lines: tuple[LineIn, ...]
    total: str
    checkout_url: str | None
    currency: str | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True)
class ProductUpsert:
    """Create or update the product `external_id`; `price` is None when the platform has none
    (a WooCommerce product without a price, a Shopify product without variants)."""

    external_id: str
    title: str
    url: str | None
    image_url: str | None
    price: str | None
    categories: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConsentChange:
    """What the platform says about an address's email-marketing consent.

    - `subscribed=True`: the platform says the person subscribed (Shopify state `subscribed`,
      or `accepts_marketing: true`): subscribe the contact (creating it if need be).
    - `subscribed=False`: the platform says the person withdrew consent (Shopify state
      `unsubscribed`): they must not be mailed as a subscriber; never a reason to create one.
    - `subscribed=None`: nothing to do about consent (never subscribed, pending double opt-in,
      redacted, invalid, or the platform does not say). The address is still a known customer.
    """

    email: str
    subscribed: bool | None
    customer_id: str | None = None


@dataclass(frozen=True)
class Ignored:
    """A delivery that changes nothing in Mailroom (a topic it does not use, a deletion, a
    WooCommerce ping). The endpoint still answers 200 so the platform does not retry."""

    reason: str


Action = OrderUpsert | CartUpsert | ProductUpsert | ConsentChange | Ignored


@dataclass(frozen=True)
class Delivery:
    """A verified, translated webhook delivery.

    `delivery_id` is the platform's id for this delivery, the same on its retries
    (`X-Shopify-Webhook-Id`, `X-WC-Webhook-Delivery-ID`): the key to recognise a repeat.
    `event_id` is Shopify's `X-Shopify-Event-Id` (one event delivered to several
    subscriptions carries the same one); None for WooCommerce.
    """

    platform: Literal["shopify", "woocommerce"]
    topic: str
    delivery_id: str | None
    actions: tuple[Action, ...] = field(default=())
    event_id: str | None = None
