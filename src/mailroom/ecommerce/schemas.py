"""Request and response shapes of `/api/v1/ecommerce`. Bodies are parsed loosely (see
`core.loose`): the service gives the exact message for a wrong value, while the published
schema states what it accepts."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from mailroom.core.loose import Doc, body_config, choice, name_field, nullable, text
from mailroom.core.pagination import Pagination
from mailroom.ecommerce import values
from mailroom.ecommerce.orders import MAX_BATCH
from mailroom.ecommerce.products import MAX_CATEGORIES, MAX_CATEGORY, MAX_TITLE
from mailroom.ecommerce.service import (
    MAX_ABANDON_MINUTES,
    MAX_ATTRIBUTION_DAYS,
    MAX_SECRET,
    MIN_SECRET,
    SECRET_PATTERN,
)
from mailroom.models import ORDER_STATUSES, STORE_PLATFORMS

MONEY = {
    "anyOf": [
        {"type": "string", "pattern": values.MONEY_PATTERN},
        {
            "type": "number",
            "minimum": 0,
            "maximum": float(values.MAX_MONEY),
            "multipleOf": 0.01,
        },
    ],
    "description": 'An amount with at most two decimal places: "19.90" (preferred) or 19.9.',
    "examples": ["19.90"],
}
CURRENCY = text(pattern=values.CURRENCY_PATTERN, description="ISO 4217, e.g. EUR.")
EXTERNAL_ID = text(
    pattern=values.EXTERNAL_ID_PATTERN,
    description="The shop's own id: 1-255 letters, digits or . _ : @ ~ + - (no leading dot).",
)
URL = text(values.MAX_URL, pattern=values.URL_PATTERN)
EMAIL = text(254, min_length=3, format="email")
MOMENT = {"type": "string", "format": "date-time"}
LINE = {
    "type": "object",
    "required": ["product_id", "quantity", "price"],
    "properties": {
        "product_id": EXTERNAL_ID,
        "quantity": {"type": "integer", "minimum": 0, "maximum": values.MAX_QUANTITY},
        "price": {**MONEY, "description": "Unit price."},
    },
}
LINES = {"type": "array", "maxItems": values.MAX_LINES, "items": LINE}
MINUTES = {"type": "integer", "minimum": 1, "maximum": MAX_ABANDON_MINUTES}
DAYS = {"type": "integer", "minimum": 1, "maximum": MAX_ATTRIBUTION_DAYS}

Money = Annotated[Any, Doc(MONEY)]
KEEPS = " Left out, the stored value stays (a new one takes the default)."


# ---------------------------------------------------------------- stores


class StoreCreate(BaseModel):
    model_config = body_config(
        "name", "currency", example={"name": "Main shop", "currency": "EUR", "platform": "custom"}
    )
    name: Annotated[Any, Doc(name_field(100))] = Field(
        None, description="1-100 characters, unique ignoring case."
    )
    currency: Annotated[Any, Doc(CURRENCY)] = Field(
        None, description="ISO 4217 (three capitals): every order and cart of the store is in it."
    )
    platform: Annotated[Any, Doc(nullable(choice(*STORE_PLATFORMS)))] = Field(
        None, description="custom (default), shopify or woocommerce."
    )
    abandon_after_minutes: Annotated[Any, Doc(nullable(MINUTES))] = Field(
        None, description="A cart untouched this long is abandoned: 1 to 10,080 (default 60)."
    )
    attribution_days: Annotated[Any, Doc(nullable(DAYS))] = Field(
        None, description="Days after a click that an order counts for the email: 1-90 (default 5)."
    )


class StoreUpdate(BaseModel):
    model_config = body_config(forbid_extra=True, rules=[{"minProperties": 1}])
    name: Annotated[Any, Doc(name_field(100))] = None
    currency: Annotated[Any, Doc(CURRENCY)] = Field(
        None, description="Only while the store has no orders (409 after)."
    )
    platform: Annotated[Any, Doc(choice(*STORE_PLATFORMS))] = None
    abandon_after_minutes: Annotated[Any, Doc(MINUTES)] = None
    attribution_days: Annotated[Any, Doc(DAYS)] = None
    webhook_secret: Annotated[
        Any, Doc(text(MAX_SECRET, min_length=MIN_SECRET, pattern=SECRET_PATTERN))
    ] = Field(
        None,
        description="Replaces the secret the platform's deliveries are signed with (Shopify: "
        'the key its admin shows under "Your webhooks will be signed with"): 16-100 '
        "printable ASCII characters, no spaces. Never shown again; deliveries signed with "
        "the old one are refused.",
    )


class StoreOut(BaseModel):
    id: str
    name: str
    currency: str
    platform: str
    abandon_after_minutes: int
    attribution_days: int
    created_at: datetime
    updated_at: datetime


class StoreCreated(StoreOut):
    webhook_secret: str = Field(
        description="Signs the platform's webhook deliveries: shown only here, once."
    )


class StoreEnvelope(BaseModel):
    store: StoreOut


class StoreCreatedEnvelope(BaseModel):
    store: StoreCreated


class StoreList(BaseModel):
    stores: list[StoreOut]
    pagination: Pagination


class StoreDeliveryOut(BaseModel):
    id: str
    store_id: str
    platform: str = Field(description="shopify or woocommerce")
    topic: str = Field(description="The platform's topic, e.g. orders/create or order.updated.")
    delivery_id: str | None = Field(description="The platform's own id of the delivery.")
    outcome: str = Field(description="applied, ignored or invalid")
    detail: str = Field(description="What came of it, or why it was not applied.")
    received_at: datetime


class StoreDeliveryList(BaseModel):
    deliveries: list[StoreDeliveryOut]
    pagination: Pagination


class Deleted(BaseModel):
    success: bool
    id: str


class DeletedExternal(Deleted):
    external_id: str


# ---------------------------------------------------------------- products


class ProductPut(BaseModel):
    model_config = body_config(
        "title",
        example={
            "title": "Linen shirt",
            "url": "https://shop.example.com/p/linen-shirt",
            "price": "49.00",
            "categories": ["Shirts"],
        },
    )
    title: Annotated[Any, Doc(name_field(MAX_TITLE))] = None
    url: Annotated[Any, Doc(nullable(URL))] = Field(None, description="http(s) link, or null.")
    image_url: Annotated[Any, Doc(nullable(URL))] = Field(None, description="http(s), or null.")
    price: Annotated[Any, Doc(nullable(MONEY))] = None
    categories: Annotated[
        Any,
        Doc(
            nullable(
                {"type": "array", "maxItems": MAX_CATEGORIES, "items": name_field(MAX_CATEGORY)}
            )
        ),
    ] = Field(None, description="Category names (up to 50, each up to 100 characters).")


class ProductOut(BaseModel):
    id: str
    external_id: str
    store_id: str
    title: str
    url: str | None
    image_url: str | None
    price: str | None = Field(description='Two decimal places, e.g. "49.00".')
    categories: list[str]
    created_at: datetime
    updated_at: datetime


class ProductEnvelope(BaseModel):
    product: ProductOut


class ProductList(BaseModel):
    products: list[ProductOut]
    pagination: Pagination


# ---------------------------------------------------------------- orders and carts

ORDER_FIELDS: dict[str, Any] = {
    "email": nullable(EMAIL),
    "status": choice(*ORDER_STATUSES),
    "total": MONEY,
    "currency": nullable(CURRENCY),
    "placed_at": nullable(MOMENT),
    "lines": nullable(LINES),
    "cart_id": nullable(EXTERNAL_ID),
}
ORDER_EXAMPLE = {
    "email": "jane@example.com",
    "status": "paid",
    "total": "59.80",
    "currency": "EUR",
    "placed_at": "2026-03-15T10:30:00Z",
    "lines": [{"product_id": "shirt-1", "quantity": 2, "price": "29.90"}],
}


class OrderPut(BaseModel):
    model_config = body_config("total", example=ORDER_EXAMPLE)
    email: Annotated[Any, Doc(ORDER_FIELDS["email"])] = Field(
        None, description="The customer's address (null: none)." + KEEPS
    )
    status: Annotated[Any, Doc(ORDER_FIELDS["status"])] = Field(
        None, description="placed (default), paid, fulfilled, cancelled or refunded." + KEEPS
    )
    total: Annotated[Any, Doc(MONEY)] = None
    currency: Annotated[Any, Doc(ORDER_FIELDS["currency"])] = Field(
        None, description="Must be the store's (400 `currency must be <it>`); default it."
    )
    placed_at: Annotated[Any, Doc(ORDER_FIELDS["placed_at"])] = Field(
        None, description="When it was placed (default: when first received)." + KEEPS
    )
    lines: Annotated[Any, Doc(ORDER_FIELDS["lines"])] = Field(
        None, description="Up to 500 `{product_id, quantity, price}`." + KEEPS
    )
    cart_id: Annotated[Any, Doc(ORDER_FIELDS["cart_id"])] = Field(
        None, description="External id of the cart this order converts." + KEEPS
    )


BATCH_ORDER = {
    "type": "object",
    "required": ["external_id", "total"],
    "properties": {"external_id": EXTERNAL_ID, **ORDER_FIELDS},
}


class OrderBatch(BaseModel):
    model_config = body_config(
        "orders", example={"orders": [{"external_id": "1001", **ORDER_EXAMPLE}]}
    )
    orders: Annotated[Any, Doc({"type": "array", "maxItems": MAX_BATCH, "items": BATCH_ORDER})] = (
        Field(
            None, description=f"Up to {MAX_BATCH} orders, each a PUT body with its `external_id`."
        )
    )


class LineOut(BaseModel):
    product_id: str
    quantity: int
    price: str


class Attribution(BaseModel):
    type: str = Field(description="campaign or automation")
    id: str


class OrderOut(BaseModel):
    id: str
    external_id: str
    store_id: str
    email: str | None
    contact_id: str | None = Field(description="The contact with this address, if one exists.")
    status: str
    total: str
    currency: str
    placed_at: datetime
    lines: list[LineOut]
    attributed_to: Attribution | None


class OrderEnvelope(BaseModel):
    order: OrderOut


class OrderList(BaseModel):
    orders: list[OrderOut]
    pagination: Pagination


class BatchResult(BaseModel):
    id: str
    external_id: str
    result: str = Field(description="created, updated or unchanged")


class BatchAnswer(BaseModel):
    created: int
    updated: int
    unchanged: int
    orders: list[BatchResult]


class CartPut(BaseModel):
    model_config = body_config(
        "total",
        example={
            "email": "jane@example.com",
            "total": "29.90",
            "lines": [{"product_id": "shirt-1", "quantity": 1, "price": "29.90"}],
            "checkout_url": "https://shop.example.com/checkout/abc",
        },
    )
    email: Annotated[Any, Doc(nullable(EMAIL))] = Field(None, description="Null: none." + KEEPS)
    total: Annotated[Any, Doc(MONEY)] = None
    currency: Annotated[Any, Doc(nullable(CURRENCY))] = Field(
        None, description="Must be the store's; default it."
    )
    lines: Annotated[Any, Doc(nullable(LINES))] = Field(None, description=KEEPS.strip())
    checkout_url: Annotated[Any, Doc(nullable(URL))] = Field(
        None, description="Where the shopper picks the cart up again." + KEEPS
    )


class CartOut(BaseModel):
    id: str
    external_id: str
    store_id: str
    email: str | None
    contact_id: str | None
    status: str = Field(description="active, abandoned or converted")
    total: str
    currency: str
    lines: list[LineOut]
    checkout_url: str | None
    order_id: str | None = Field(description="External id of the order that converted it.")
    abandoned_at: datetime | None
    converted_at: datetime | None
    created_at: datetime
    updated_at: datetime


class CartEnvelope(BaseModel):
    cart: CartOut


class CartList(BaseModel):
    carts: list[CartOut]
    pagination: Pagination
