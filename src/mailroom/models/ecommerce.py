"""E-commerce: a workspace's stores and what their shops send (products, orders, carts).

Money is stored in minor units (cents, `BigInteger`) and shown as two-place decimal strings.
A customer is only an address on an order or cart: `email_hash` (the contacts' HMAC) links it
to the workspace's contact with that address, as `contact_id`, when one exists or appears
later; erasing the contact empties `email` and `email_hash` and keeps the amounts.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.core.ids import new_id
from mailroom.db import Base

STORE_PLATFORMS = ("custom", "shopify", "woocommerce")
ORDER_STATUSES = ("placed", "paid", "fulfilled", "cancelled", "refunded")
# What a purchase is (what revenue and purchase figures count): not cancelled, not refunded.
PURCHASE_STATUSES = ("placed", "paid", "fulfilled")
CART_STATUSES = ("active", "abandoned", "converted")


class Store(Base):
    __tablename__ = "ecommerce_stores"
    __table_args__ = (UniqueConstraint("workspace_id", "name_key"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    name_key: Mapped[str] = mapped_column(Text)  # casefolded name (see mailroom.named)
    currency: Mapped[str] = mapped_column(String(3))
    platform: Mapped[str] = mapped_column(String(20), default="custom")
    abandon_after_minutes: Mapped[int] = mapped_column(Integer, default=60)
    attribution_days: Mapped[int] = mapped_column(Integer, default=5)
    # Signs the platform's webhook deliveries; shown once, when the store is made.
    webhook_secret: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Product(Base):
    __tablename__ = "ecommerce_products"
    __table_args__ = (
        UniqueConstraint("store_id", "external_id"),
        Index("ix_ecommerce_products_store_title", "store_id", "title_key", "id"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(String(36))
    store_id: Mapped[str] = mapped_column(ForeignKey("ecommerce_stores.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(String(255))  # the shop's own id
    title: Mapped[str] = mapped_column(String(500))
    title_key: Mapped[str] = mapped_column(Text)  # casefolded title: what `q` searches
    url: Mapped[str | None] = mapped_column(Text, default=None)
    image_url: Mapped[str | None] = mapped_column(Text, default=None)
    price: Mapped[int | None] = mapped_column(BigInteger, default=None)  # minor units
    categories: Mapped[list[str]] = mapped_column(JSONValue, default=list)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Order(Base):
    """One order of a store, upserted by the shop's id. `lines` is the answer's copy
    (`[{product_id, quantity, price}]`, prices in minor units); `OrderLine` rows hold the same
    lines for queries ("bought product X")."""

    __tablename__ = "ecommerce_orders"
    __table_args__ = (
        UniqueConstraint("store_id", "external_id"),
        Index("ix_ecommerce_orders_store_placed", "store_id", "placed_at", "id"),
        # A contact's orders (timeline, segments, attribution), and linking by address;
        # status and total too, so a segment's per-contact figures read the index alone.
        Index(
            "ix_ecommerce_orders_contact",
            "workspace_id",
            "contact_id",
            "placed_at",
            "status",
            "total",
        ),
        Index("ix_ecommerce_orders_email_hash", "workspace_id", "email_hash"),
        # A cart arriving after the order that converted it.
        Index("ix_ecommerce_orders_cart", "store_id", "cart_id"),
        # Revenue of a campaign or automation (its report, the campaign list).
        Index("ix_ecommerce_orders_attributed", "workspace_id", "attributed_id", "status"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(String(36))
    store_id: Mapped[str] = mapped_column(ForeignKey("ecommerce_stores.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(String(255))
    email: Mapped[str | None] = mapped_column(String(254), default=None)
    email_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    # Not a foreign key: deleting a contact unlinks its orders in one set-based UPDATE
    # (ecommerce.customers.forget), not a cascade probing this table row by row.
    contact_id: Mapped[str | None] = mapped_column(String(36), default=None)
    status: Mapped[str] = mapped_column(String(12), default="placed")
    total: Mapped[int] = mapped_column(BigInteger)  # minor units
    currency: Mapped[str] = mapped_column(String(3))
    placed_at: Mapped[datetime] = mapped_column(UTCDateTime)
    lines: Mapped[list[dict[str, Any]]] = mapped_column(JSONValue, default=list)
    cart_id: Mapped[str | None] = mapped_column(String(255), default=None)  # a cart's external id
    # The platform's own last-change time, when it sends one: an older delivery is skipped.
    source_updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # The email whose link the buyer clicked last within the store's attribution window
    # before placing it: "campaign" or "automation", and its id (set once, when created).
    attributed_type: Mapped[str | None] = mapped_column(String(12), default=None)
    attributed_id: Mapped[str | None] = mapped_column(String(36), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class CustomerTotals(Base):
    """A contact's purchase figures over its orders in all the workspace's stores, counting
    only purchases (placed, paid, fulfilled): what segments' total spent, number of orders
    and last order read, one index probe per contact or one index range per rule, instead of
    adding up its orders. A contact without purchases has no row (0, 0, no last order).
    Derived from `ecommerce_orders` only, rewritten for the contacts a change touches in the
    change's own transaction (`ecommerce.customers.refresh_purchases`)."""

    __tablename__ = "ecommerce_customer_totals"
    __table_args__ = (
        Index("ix_ecommerce_customer_totals_spent", "workspace_id", "total_spent", "contact_id"),
        Index("ix_ecommerce_customer_totals_count", "workspace_id", "orders_count", "contact_id"),
        Index("ix_ecommerce_customer_totals_last", "workspace_id", "last_order_at", "contact_id"),
    )

    contact_id: Mapped[str] = mapped_column(
        ForeignKey("contacts.id", ondelete="CASCADE"), primary_key=True
    )
    workspace_id: Mapped[str] = mapped_column(String(36))
    total_spent: Mapped[int] = mapped_column(BigInteger)  # minor units, any currency
    orders_count: Mapped[int] = mapped_column(Integer)
    last_order_at: Mapped[datetime] = mapped_column(UTCDateTime)


class CustomerProduct(Base):
    """What a contact has bought: one row per product (a store's product id) among its
    purchases, with when it last bought it. What segments' `purchased` reads: a product's or
    a category's buyers are an index range here, not its order lines joined to their orders.
    Kept like `CustomerTotals`, from the orders and their lines."""

    __tablename__ = "ecommerce_customer_products"
    __table_args__ = (
        Index(
            "ix_ecommerce_customer_products_product",
            "store_id",
            "product_id",
            "last_purchased_at",
            "contact_id",
        ),
    )

    contact_id: Mapped[str] = mapped_column(
        ForeignKey("contacts.id", ondelete="CASCADE"), primary_key=True
    )
    store_id: Mapped[str] = mapped_column(
        ForeignKey("ecommerce_stores.id", ondelete="CASCADE"), primary_key=True
    )
    product_id: Mapped[str] = mapped_column(String(255), primary_key=True)  # external id
    workspace_id: Mapped[str] = mapped_column(String(36))
    last_purchased_at: Mapped[datetime] = mapped_column(UTCDateTime)


class OrderLine(Base):
    """An order's line, mirrored from its `lines` for set-based reads (what each contact
    bought, `CustomerProduct`), by order."""

    __tablename__ = "ecommerce_order_lines"

    order_id: Mapped[str] = mapped_column(
        ForeignKey("ecommerce_orders.id", ondelete="CASCADE"), primary_key=True
    )
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    workspace_id: Mapped[str] = mapped_column(String(36))
    store_id: Mapped[str] = mapped_column(String(36))
    product_id: Mapped[str] = mapped_column(String(255))  # the product's external id
    quantity: Mapped[int] = mapped_column(Integer)
    price: Mapped[int] = mapped_column(BigInteger)  # unit price, minor units


class Cart(Base):
    """A shopper's cart. `status`: active -> abandoned (once, by the worker, when untouched for
    the store's `abandon_after_minutes`) and/or converted (an order named it)."""

    __tablename__ = "ecommerce_carts"
    __table_args__ = (
        UniqueConstraint("store_id", "external_id"),
        Index("ix_ecommerce_carts_store_updated", "store_id", "updated_at", "id"),
        # What the abandonment loop reads: active carts by last change.
        Index("ix_ecommerce_carts_status_updated", "status", "updated_at"),
        Index("ix_ecommerce_carts_contact", "workspace_id", "contact_id"),
        Index("ix_ecommerce_carts_email_hash", "workspace_id", "email_hash"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(String(36))
    store_id: Mapped[str] = mapped_column(ForeignKey("ecommerce_stores.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(String(255))
    email: Mapped[str | None] = mapped_column(String(254), default=None)
    email_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    contact_id: Mapped[str | None] = mapped_column(String(36), default=None)
    status: Mapped[str] = mapped_column(String(10), default="active")
    total: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    lines: Mapped[list[dict[str, Any]]] = mapped_column(JSONValue, default=list)
    checkout_url: Mapped[str | None] = mapped_column(Text, default=None)
    order_id: Mapped[str | None] = mapped_column(String(255), default=None)  # order's external id
    abandoned_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    converted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    source_updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The last change of its content: what "untouched for abandon_after_minutes" counts from.
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class StoreDelivery(Base):
    """One webhook delivery a store platform made to /hooks/<platform>/{store_id}: what the
    store page lists, and how a platform's retry of one delivery is recognised (its
    `delivery_id`, the platform's own, once per store). A delivery refused for its signature
    is not stored."""

    __tablename__ = "ecommerce_deliveries"
    __table_args__ = (
        UniqueConstraint("store_id", "delivery_id"),
        Index("ix_ecommerce_deliveries_store_received", "store_id", "received_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(String(36))
    store_id: Mapped[str] = mapped_column(ForeignKey("ecommerce_stores.id", ondelete="CASCADE"))
    platform: Mapped[str] = mapped_column(String(20))
    topic: Mapped[str] = mapped_column(String(100))
    delivery_id: Mapped[str | None] = mapped_column(String(255), default=None)
    outcome: Mapped[str] = mapped_column(String(12))  # applied, ignored, duplicate, invalid
    detail: Mapped[str] = mapped_column(Text, default="")
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
