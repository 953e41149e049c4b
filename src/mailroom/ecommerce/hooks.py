"""`POST /hooks/shopify/{store_id}` and `POST /hooks/woocommerce/{store_id}`: the platforms'
own webhook deliveries (no key: the HMAC signature with the store's `webhook_secret` is the
credential, checked by `platforms.read_delivery`).

In this order:
- a store id that names no store, or a store of the other platform (or `custom`): 404;
- a body over 1 MB: 413 (the platforms' order, product and customer payloads are a few KB;
  the app-wide cap is 2 MB);
- a WooCommerce ping (the unsigned `webhook_id=N` sent when a webhook is saved): 200, nothing
  stored;
- a missing or wrong signature: 401, nothing stored (not even a delivery row: anybody may
  post here, and the log is the platform's deliveries);
- a body that is not the platform's JSON: 400, nothing stored;
- otherwise `deliveries.receive` applies it in one transaction and answers 200
  `{"received": true, "outcome", "detail"}` (outcomes in `deliveries`; data that breaks a
  rule is 200 with outcome `invalid`, so the platform does not retry it into disabling the
  webhook).

The store is looked up and the signature checked before any write transaction, so requests
that store nothing never wait for (or hold) SQLite's one write connection. No rate limit:
signed deliveries come from the platform, in bursts when a merchant bulk-edits, and
refusing them would only make it retry; an unsigned request costs one indexed read and one
HMAC.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request

from mailroom.accounts import service as accounts
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.ecommerce import deliveries
from mailroom.ecommerce.platforms import (
    WOOCOMMERCE_SIGNATURE_HEADER,
    PayloadError,
    SignatureError,
    read_delivery,
    woocommerce,
)
from mailroom.web.deps import get_db, get_settings_dep

router = APIRouter(include_in_schema=False)

MAX_BODY = 1024 * 1024
TOO_LARGE = "Request body too large: deliveries are limited to 1 MB"
STORE_NOT_FOUND = "Store not found"
Platform = Literal["shopify", "woocommerce"]


@router.post("/hooks/shopify/{store_id}")
async def shopify_delivery(store_id: str, request: Request) -> dict[str, Any]:
    return await _receive("shopify", store_id, request)


@router.post("/hooks/woocommerce/{store_id}")
async def woocommerce_delivery(store_id: str, request: Request) -> dict[str, Any]:
    return await _receive("woocommerce", store_id, request)


async def _receive(platform: Platform, store_id: str, request: Request) -> dict[str, Any]:
    db, settings = get_db(request), get_settings_dep(request)
    async with db.session(write=False) as session:
        store = await deliveries.public_store(session, platform, store_id)
        secret = store.webhook_secret if store is not None else ""
    if store is None:
        raise ApiError(404, STORE_NOT_FOUND)
    body = await _body(request)
    headers = request.headers
    if platform == "woocommerce" and woocommerce.is_ping(
        body, headers.get(WOOCOMMERCE_SIGNATURE_HEADER), headers.get("X-WC-Webhook-Topic")
    ):
        return {"received": True, "outcome": "ignored", "detail": "WooCommerce ping"}
    try:
        delivery = read_delivery(platform, headers, body, secret)
    except SignatureError as problem:
        raise ApiError(401, str(problem)) from None
    except PayloadError as problem:
        raise ApiError(400, str(problem)) from None
    try:
        async with db.transaction() as session:
            # Read again for this transaction: deleted or moved to another platform meanwhile
            # is a 404, a secret replaced meanwhile a 401 (in `receive`).
            current = await deliveries.public_store(session, platform, store_id)
            if current is None:
                raise ApiError(404, STORE_NOT_FOUND)
            principal = await accounts.principal_for_workspace(session, current.workspace_id)
            ctx = Context(session, principal, settings)
            received = await deliveries.receive(ctx, current, delivery, checked_with=secret)
    except SignatureError as problem:
        raise ApiError(401, str(problem)) from None
    return {"received": True, "outcome": received.outcome, "detail": received.detail}


async def _body(request: Request) -> bytes:
    """The raw body (the signature covers these exact bytes), refused past `MAX_BODY` as soon
    as its declared length or what has arrived says so."""
    declared = request.headers.get("content-length", "")
    if declared.isdecimal() and int(declared) > MAX_BODY:
        raise ApiError(413, TOO_LARGE)
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise ApiError(413, TOO_LARGE)
        parts.append(chunk)
    return b"".join(parts)
