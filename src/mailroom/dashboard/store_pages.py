"""The Stores pages (`/app/stores`): a workspace's shops listed and added (the webhook secret
shown once, on the page the new store opens on), and a store's page: the webhook URL to give
Shopify or WooCommerce with the topics to choose, a form that replaces the secret (Shopify
signs the webhooks made in its admin with the shop's own key, which must be pasted here), and
the last deliveries with what came of each.

Everything runs on `ecommerce.service` and `ecommerce.deliveries`, as the API does; members
and admins alike (both hold `ecommerce:read` and `ecommerce:write`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, refused, when
from mailroom.ecommerce import deliveries, service
from mailroom.ecommerce.platforms import shopify, woocommerce
from mailroom.models import STORE_PLATFORMS, Store
from mailroom.people import sessions

router = APIRouter(include_in_schema=False)
PATH = "/app/stores"
SHOWN = 500  # stores on one page: a workspace has a few
LAST_DELIVERIES = 20
PLATFORM_NAMES = {"shopify": "Shopify", "woocommerce": "WooCommerce", "custom": "Custom (API)"}
TOPICS = {"shopify": shopify.TOPICS, "woocommerce": woocommerce.TOPICS}


def hook_url(ctx: Context, store: Store) -> str | None:
    """Where the store's platform posts its deliveries (None for a `custom` store: it has no
    platform to post)."""
    if store.platform not in TOPICS:
        return None
    return f"{ctx.settings.public_url.rstrip('/')}/hooks/{store.platform}/{store.id}"


def _posted(form: dict[str, Any]) -> dict[str, Any]:
    """The new-store form as the service's body."""
    return {
        "name": str(form.get("name") or ""),
        "currency": str(form.get("currency") or "").strip().upper(),
        "platform": str(form.get("platform") or "custom"),
    }


def _store_view(store: Store) -> dict[str, Any]:
    shown = service.as_dict(store)
    return {**shown, "platform_name": PLATFORM_NAMES.get(store.platform, store.platform)}


async def _list_page(
    visitor: Visitor, ctx: Context, *, status: int = 200, draft: dict[str, Any] | None = None
) -> Response:
    stores, _ = await service.list_stores(ctx, PageParams(1, SHOWN), None)
    return render.page(
        "stores.html",
        status=status,
        title="Stores",
        section="stores",
        visitor=visitor,
        stores=[_store_view(s) for s in stores],
        draft=draft or {"name": "", "currency": "", "platform": "shopify"},
        platforms=[(p, PLATFORM_NAMES[p]) for p in STORE_PLATFORMS],
        flashes=sessions.take_flash(visitor.row),
    )


async def _store_page(
    visitor: Visitor,
    ctx: Context,
    store: Store,
    *,
    status: int = 200,
    secret: str | None = None,
) -> Response:
    rows, total = await deliveries.page(ctx, store, PageParams(1, LAST_DELIVERIES))
    shown = [{**deliveries.as_dict(row), "received": when(row.received_at)} for row in rows]
    return render.page(
        "store.html",
        status=status,
        title=store.name,
        section="stores",
        visitor=visitor,
        store=_store_view(store),
        hook_url=hook_url(ctx, store),
        topics=TOPICS.get(store.platform, []),
        secret=secret,
        min_secret=service.MIN_SECRET,
        max_secret=service.MAX_SECRET,
        deliveries=shown,
        delivery_total=total,
        flashes=sessions.take_flash(visitor.row),
    )


@router.get(PATH)
async def stores_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return await _list_page(visitor, ctx)

    return await as_visitor(request, work)


@router.post(PATH)
async def add_store(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        body = _posted(form)
        try:
            store = await service.create_store(ctx, body)
        except ApiError as problem:
            await refused(ctx, visitor, problem)
            return await _list_page(visitor, ctx, status=problem.status, draft=body)
        audit_write(ctx, request, "create_store", store.id, 201)
        sessions.flash(visitor.row, "ok", f"Store “{store.name}” added.")
        return await _store_page(visitor, ctx, store, status=201, secret=store.webhook_secret)

    return await as_visitor(request, work)


@router.get(PATH + "/{store_id}")
async def store_page(store_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return await _store_page(visitor, ctx, await service.get_store(ctx, store_id))

    return await as_visitor(request, work)


@router.post(PATH + "/{store_id}/secret")
async def replace_secret(store_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        # A pasted key often brings a line break or a blank along: they are never part of it.
        typed = str(form.get("webhook_secret") or "").strip()
        try:
            store = await service.update_store(ctx, store_id, {"webhook_secret": typed})
        except ApiError as problem:
            if problem.status == 404:
                raise
            await refused(ctx, visitor, problem)
            store = await service.get_store(ctx, store_id)
            return await _store_page(visitor, ctx, store, status=problem.status)
        audit_write(ctx, request, "update_store", store.id, 200)
        sessions.flash(
            visitor.row,
            "ok",
            "Webhook secret replaced: deliveries signed with the old one are refused from now on.",
        )
        return RedirectResponse(f"{PATH}/{store.id}", status_code=303)

    return await as_visitor(request, work)
