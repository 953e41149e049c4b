"""The store platforms' webhook deliveries, applied: what `POST /hooks/<platform>/{store_id}`
does once `platforms.read_delivery` has verified and translated a request.

One unit of work per delivery: its actions go through the services the API uses
(`orders.upsert`, `carts.upsert`, `products.upsert`, `contacts.create_contact`), and one
`StoreDelivery` row says what came of it (`outcome`, with a `detail` a person can read):

- `applied`: an order, cart or product upserted (even when nothing changed), or a contact
  subscribed;
- `ignored`: nothing to do: a topic Mailroom does not use, a deletion, a Shopify test order
  (the admin's "Send test notification" and the bogus gateway: not revenue), a consent that
  subscribes nobody;
- `invalid`: the data breaks one of Mailroom's rules (an order in another currency than the
  store's, an id Mailroom cannot store, the plan's contact limit). Nothing of it is kept and
  the message is recorded, but the platform is answered 200 all the same: it retries any
  other answer (Shopify 8 times over 4 hours, WooCommerce turns the webhook off after 5
  failures), and retrying data that is wrong for good can only fail again while taking the
  webhook down for the deliveries that would succeed. The store page shows the message.
- `duplicate`: the platform's delivery id was seen before (its retry of one delivery):
  nothing is applied again and no row is added (the first one's row stands).

Consent is the one action that may make a contact, and only ever a subscriber: a platform's
"subscribed" creates the contact (source `shopify`/`woocommerce`, `consent_source`
`<platform>:<store id>`) with the events, webhooks and automations of any new contact, when
the workspace has no contact and no suppression for the address. A contact that exists is
left as it is: the platform repeats its consent state on every later customer update, so it
cannot stand as fresh consent over an unsubscribe, bounce or archive recorded in Mailroom
(resubscribing is the person's own, through a form, or the API's `resubscribe`). A
withdrawal on the platform unsubscribes nobody either (issue 27: deliveries never
unsubscribe), and an order never subscribes anyone.

Details name orders, carts, products and customers by the platform's ids, never by address:
an erased contact leaves no address behind here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.contacts import service as contacts
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.ecommerce import carts, orders, products, values
from mailroom.ecommerce.platforms import (
    Action,
    CartUpsert,
    ConsentChange,
    Delivery,
    Ignored,
    LineIn,
    OrderUpsert,
    ProductUpsert,
    SignatureError,
)
from mailroom.ecommerce.service import lock
from mailroom.models import Store, StoreDelivery
from mailroom.suppressions import service as suppressions

OUTCOMES = ("applied", "ignored", "duplicate", "invalid")
MAX_TOPIC = 100  # the columns' sizes
MAX_DELIVERY_ID = 255
MAX_STORE_ID = 36


@dataclass(frozen=True)
class Received:
    """What a delivery came to: the answer's `outcome` and `detail`, and its row (None for a
    duplicate)."""

    outcome: str
    detail: str
    row: StoreDelivery | None = None


# ---------------------------------------------------------------- receiving


async def public_store(session: AsyncSession, platform: str, store_id: str) -> Store | None:
    """The store a hook URL names, in any workspace (its id is the address, as a form's is),
    or None when there is none or it is not on `platform` (a Shopify delivery to a
    WooCommerce store is as unknown as a made-up id)."""
    if not store_id or len(store_id) > MAX_STORE_ID:
        return None
    store: Store | None = await session.get(Store, store_id)
    if store is None or store.platform != platform:
        return None
    return store


async def receive(ctx: Context, store: Store, delivery: Delivery, *, checked_with: str) -> Received:
    """Apply a verified delivery to `store` in the caller's transaction and record it.
    `checked_with` is the secret the signature was verified with: a secret replaced since
    then refuses the delivery as if it had been checked now (`SignatureError`)."""
    if store.webhook_secret != checked_with:
        raise SignatureError("the signature does not match the store's webhook secret")
    await lock(ctx, store)  # a retry arriving during the first attempt waits, then is seen
    delivery_id = (delivery.delivery_id or "")[:MAX_DELIVERY_ID] or None
    if delivery_id is not None and await _seen(ctx, store, delivery_id):
        return Received("duplicate", f"delivery {delivery_id} was received before")
    try:
        async with ctx.session.begin_nested():
            applied, notes = await _apply_all(ctx, store, delivery)
        outcome = "applied" if applied else "ignored"
        detail = "; ".join(notes)
    except ApiError as problem:  # undone to the savepoint: nothing of it stays
        outcome, detail = "invalid", problem.message
    row = StoreDelivery(
        workspace_id=ctx.workspace_id,
        store_id=store.id,
        platform=delivery.platform,
        topic=delivery.topic[:MAX_TOPIC],
        delivery_id=delivery_id,
        outcome=outcome,
        detail=detail,
        received_at=utcnow(),
    )
    ctx.session.add(row)
    await ctx.session.flush()
    return Received(outcome, detail, row)


async def _seen(ctx: Context, store: Store, delivery_id: str) -> bool:
    found = await ctx.session.scalar(
        select(StoreDelivery.id)
        .where(StoreDelivery.store_id == store.id, StoreDelivery.delivery_id == delivery_id)
        .limit(1)
    )
    return found is not None


async def _apply_all(ctx: Context, store: Store, delivery: Delivery) -> tuple[bool, list[str]]:
    applied, notes = False, []
    for action in delivery.actions:
        done, note = await apply(ctx, store, delivery.platform, action)
        applied = applied or done
        notes.append(note)
    return applied, notes or ["nothing to do"]


async def apply(ctx: Context, store: Store, platform: str, action: Action) -> tuple[bool, str]:
    """One action: (whether it applied, what came of it). Raises `ApiError` for data that
    breaks a rule (the caller records the delivery as invalid)."""
    if isinstance(action, OrderUpsert):
        return await _order(ctx, store, action)
    if isinstance(action, CartUpsert):
        return await _cart(ctx, store, action)
    if isinstance(action, ProductUpsert):
        return await _product(ctx, store, action)
    if isinstance(action, ConsentChange):
        return await _consent(ctx, store, platform, action)
    if isinstance(action, Ignored):
        return False, action.reason
    raise TypeError(f"unknown action {action!r}")


def _result(kind: str, external_id: str, created: bool, changed: bool) -> str:
    return f"{kind} {external_id} " + (
        "created" if created else "updated" if changed else "unchanged"
    )


def _lines(lines: tuple[LineIn, ...]) -> list[dict[str, Any]]:
    """Lines as an API body has them (the platforms' titles are not stored on orders)."""
    return [{"product_id": x.product_id, "quantity": x.quantity, "price": x.price} for x in lines]


async def _order(ctx: Context, store: Store, action: OrderUpsert) -> tuple[bool, str]:
    external_id = values.external_id(action.external_id, "order id")
    if action.test:
        return False, f"order {external_id} is a test order: not stored"
    # Left out when the platform did not say: the stored value (or the default) stays.
    body: dict[str, Any] = {
        "total": action.total,
        "status": action.status,
        "lines": _lines(action.lines),
    }
    if action.email is not None:
        body["email"] = action.email
    if action.currency is not None:
        body["currency"] = action.currency
    if action.placed_at is not None:
        body["placed_at"] = action.placed_at.isoformat()
    if action.cart_id is not None:
        body["cart_id"] = action.cart_id
    item = replace(orders.clean(body, external_id), source_updated_at=action.updated_at)
    result = await orders.upsert(ctx, store, item)
    return True, _result("order", external_id, result.created, result.changed)


async def _cart(ctx: Context, store: Store, action: CartUpsert) -> tuple[bool, str]:
    external_id = values.external_id(action.external_id, "checkout token")
    body: dict[str, Any] = {"total": action.total, "lines": _lines(action.lines)}
    if action.email is not None:
        body["email"] = action.email
    if action.currency is not None:
        body["currency"] = action.currency
    if action.checkout_url is not None:
        body["checkout_url"] = action.checkout_url
    item = replace(carts.clean(body, external_id), source_updated_at=action.updated_at)
    result = await carts.upsert(ctx, store, item)
    return True, _result("cart", external_id, result.created, result.changed)


async def _product(ctx: Context, store: Store, action: ProductUpsert) -> tuple[bool, str]:
    external_id = values.external_id(action.external_id, "product id")
    item = products.clean(
        {
            "title": action.title,
            "url": action.url,
            "image_url": action.image_url,
            "price": action.price,
            "categories": list(action.categories),
        }
    )
    _product_row, created, changed = await products.upsert(ctx, store, external_id, item)
    return True, _result("product", external_id, created, changed)


async def _consent(
    ctx: Context, store: Store, platform: str, action: ConsentChange
) -> tuple[bool, str]:
    """The rule in the module docstring."""
    who = f"customer {action.customer_id}" if action.customer_id else "the customer"
    if action.subscribed is None:
        return False, f"{who}: no marketing consent to act on"
    if action.subscribed is False:
        return False, f"{who} withdrew marketing consent on {platform}: not applied here"
    email = action.email
    contact = await contacts.find_by_email(ctx, email)
    if contact is not None:
        if contact.status == "subscribed":
            return False, f"{who} is a subscribed contact already"
        return False, f"{who} is a contact whose status is {contact.status}: left as it is"
    suppression = await suppressions.find(ctx, ctx.hash_email(email))
    if suppression is not None:
        return False, f"{who}'s address is suppressed ({suppression.reason}): not subscribed"
    now = utcnow().isoformat().replace("+00:00", "Z")
    consent = {"consent_source": f"{platform}:{store.id}", "consent_confirmed_at": now}
    created = await contacts.create_contact(
        ctx, {"email": email, "source": platform}, consent=consent, looked_up=True
    )
    return True, f"{who} subscribed: contact {created.id} created"


# ---------------------------------------------------------------- reading


# A platform retries a delivery within hours (Shopify 48 h at most): after a month a row is
# needed neither to recognise a retry nor on the store page.
KEEP_DAYS = 30


async def prune(session: AsyncSession, *, now: datetime | None = None) -> int:
    """Delete deliveries older than KEEP_DAYS, every store at once; returns how many."""
    cutoff = (now or utcnow()) - timedelta(days=KEEP_DAYS)
    result = await session.execute(delete(StoreDelivery).where(StoreDelivery.received_at < cutoff))
    return int(getattr(result, "rowcount", 0) or 0)


async def page(ctx: Context, store: Store, params: PageParams) -> tuple[list[StoreDelivery], int]:
    """The store's deliveries, newest first."""
    conditions = [
        StoreDelivery.store_id == store.id,
        StoreDelivery.workspace_id == ctx.workspace_id,
    ]
    total = int(await ctx.session.scalar(select(func.count()).where(*conditions)) or 0)
    rows = await ctx.session.scalars(
        select(StoreDelivery)
        .where(*conditions)
        .order_by(StoreDelivery.received_at.desc(), StoreDelivery.id.desc())
        .offset(params.offset)
        .limit(params.limit)
    )
    return list(rows.all()), total


def as_dict(row: StoreDelivery) -> dict[str, Any]:
    return {
        "id": row.id,
        "store_id": row.store_id,
        "platform": row.platform,
        "topic": row.topic,
        "delivery_id": row.delivery_id,
        "outcome": row.outcome,
        "detail": row.detail,
        "received_at": row.received_at,
    }
