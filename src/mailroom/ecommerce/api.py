from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from mailroom.core.context import Context
from mailroom.core.loose import Doc, choice
from mailroom.core.pagination import Pagination
from mailroom.ecommerce import carts, deliveries, orders, products, service, values
from mailroom.ecommerce.schemas import (
    EXTERNAL_ID,
    BatchAnswer,
    CartEnvelope,
    CartList,
    CartPut,
    Deleted,
    DeletedExternal,
    OrderBatch,
    OrderEnvelope,
    OrderList,
    OrderPut,
    ProductEnvelope,
    ProductList,
    ProductPut,
    StoreCreate,
    StoreCreatedEnvelope,
    StoreDeliveryList,
    StoreEnvelope,
    StoreList,
    StoreUpdate,
)
from mailroom.models import CART_STATUSES
from mailroom.web.deps import Paging, set_audit_target, set_status, use
from mailroom.web.openapi import errors

router = APIRouter(prefix="/api/v1/ecommerce", tags=["E-commerce"])

Read = Annotated[Context, use("ecommerce:read")]
Write = Annotated[Context, use("ecommerce:write")]
ExternalId = Annotated[str, Doc(EXTERNAL_ID)]
STORE_404 = "Store not found"
PUT_NOTE = " Answers 201 when it created the {0}, 200 when it updated it or nothing changed."


def _created(request: Request, response: Response, created: bool, row_id: str) -> None:
    set_audit_target(request, row_id)
    if created:
        set_status(request, response, 201)


# ---------------------------------------------------------------- stores


@router.get(
    "/stores",
    response_model=StoreList,
    summary="List stores",
    description="The workspace's stores by name.",
    responses=errors(400),
)
async def list_stores(
    ctx: Read,
    paging: Paging,
    q: Annotated[str | None, Query(description="Case-insensitive substring of the name.")] = None,
) -> dict[str, Any]:
    stores, total = await service.list_stores(ctx, paging, q)
    return {
        "stores": [service.as_dict(s) for s in stores],
        "pagination": Pagination.of(paging, total),
    }


@router.post(
    "/stores",
    status_code=201,
    response_model=StoreCreatedEnvelope,
    summary="Create a store",
    description="A shop whose products, orders and carts Mailroom keeps. The answer carries "
    "the store's `webhook_secret`, which signs its platform's webhook deliveries: shown here "
    "only.",
    responses=errors(400, 409, e409="A store with this name already exists"),
)
async def create_store(body: StoreCreate, request: Request, ctx: Write) -> dict[str, Any]:
    store = await service.create_store(ctx, body.model_dump(exclude_unset=True))
    set_audit_target(request, store.id)
    return {"store": service.as_dict(store, with_secret=True)}


@router.get(
    "/stores/{id}", response_model=StoreEnvelope, summary="Get a store", responses=errors(404)
)
async def get_store(id: str, ctx: Read) -> dict[str, Any]:
    return {"store": service.as_dict(await service.get_store(ctx, id))}


@router.patch(
    "/stores/{id}",
    response_model=StoreEnvelope,
    summary="Change a store",
    description="Name, platform, abandon_after_minutes, attribution_days, webhook_secret (never "
    "shown again); currency only while the store has no orders.",
    responses=errors(400, 404, 409),
)
async def update_store(id: str, body: StoreUpdate, ctx: Write) -> dict[str, Any]:
    store = await service.update_store(ctx, id, body.model_dump(exclude_unset=True))
    return {"store": service.as_dict(store)}


@router.delete(
    "/stores/{id}",
    response_model=Deleted,
    summary="Delete a store",
    description="Removes the store with its products, orders and carts.",
    responses=errors(404),
)
async def delete_store(id: str, ctx: Write) -> dict[str, Any]:
    await service.delete_store(ctx, id)
    return {"success": True, "id": id}


@router.get(
    "/stores/{store_id}/deliveries",
    response_model=StoreDeliveryList,
    summary="List a store's webhook deliveries",
    description="What Shopify or WooCommerce posted to the store's `/hooks/<platform>/{id}` "
    "and what came of it, newest first. Deliveries refused for their signature are not "
    "kept, and a platform's retry of a delivery already received adds none.",
    responses=errors(400, 404, e404=STORE_404),
)
async def list_store_deliveries(store_id: str, ctx: Read, paging: Paging) -> dict[str, Any]:
    store = await service.get_store(ctx, store_id)
    rows, total = await deliveries.page(ctx, store, paging)
    return {
        "deliveries": [deliveries.as_dict(d) for d in rows],
        "pagination": Pagination.of(paging, total),
    }


# ---------------------------------------------------------------- products


@router.get(
    "/stores/{store_id}/products",
    response_model=ProductList,
    summary="List a store's products",
    description="By title.",
    responses=errors(400, 404, e404=STORE_404),
)
async def list_products(
    store_id: str,
    ctx: Read,
    paging: Paging,
    q: Annotated[str | None, Query(description="Case-insensitive substring of the title.")] = None,
) -> dict[str, Any]:
    store = await service.get_store(ctx, store_id)
    rows, total = await products.page(ctx, store, paging, q)
    return {
        "products": [products.as_dict(p) for p in rows],
        "pagination": Pagination.of(paging, total),
    }


@router.get(
    "/stores/{store_id}/products/{external_id}",
    response_model=ProductEnvelope,
    summary="Get a product",
    responses=errors(404, e404="Store not found / Product not found"),
)
async def get_product(store_id: str, external_id: ExternalId, ctx: Read) -> dict[str, Any]:
    store = await service.get_store(ctx, store_id)
    return {"product": products.as_dict(await products.get(ctx, store, external_id))}


@router.put(
    "/stores/{store_id}/products/{external_id}",
    response_model=ProductEnvelope,
    summary="Create or update a product",
    description="By the shop's own id." + PUT_NOTE.format("product"),
    responses={201: {"model": ProductEnvelope, "description": "Created"}, **errors(400, 404)},
)
async def put_product(
    store_id: str,
    external_id: ExternalId,
    body: ProductPut,
    request: Request,
    response: Response,
    ctx: Write,
) -> dict[str, Any]:
    store = await service.get_store(ctx, store_id)
    item = products.clean(body.model_dump(exclude_unset=True))
    product, created, _changed = await products.upsert(
        ctx, store, values.external_id(external_id), item
    )
    _created(request, response, created, product.id)
    return {"product": products.as_dict(product)}


@router.delete(
    "/stores/{store_id}/products/{external_id}",
    response_model=DeletedExternal,
    summary="Delete a product",
    description="Orders and carts naming it keep their lines.",
    responses=errors(404, e404="Store not found / Product not found"),
)
async def delete_product(store_id: str, external_id: ExternalId, ctx: Write) -> dict[str, Any]:
    store = await service.get_store(ctx, store_id)
    product = await products.remove(ctx, store, external_id)
    return {"success": True, "id": product.id, "external_id": product.external_id}


# ---------------------------------------------------------------- orders


@router.get(
    "/stores/{store_id}/orders",
    response_model=OrderList,
    summary="List a store's orders",
    description="Newest placed first.",
    responses=errors(400, 404, e404=STORE_404),
)
async def list_orders(
    store_id: str,
    ctx: Read,
    paging: Paging,
    email: Annotated[str | None, Query(description="The customer's address (any case).")] = None,
    contact_id: Annotated[str | None, Query(description="The contact's id.")] = None,
) -> dict[str, Any]:
    store = await service.get_store(ctx, store_id)
    rows, total = await orders.page(ctx, store, paging, email=email, contact_id=contact_id)
    return {"orders": [orders.as_dict(o) for o in rows], "pagination": Pagination.of(paging, total)}


@router.post(
    "/stores/{store_id}/orders/batch",
    response_model=BatchAnswer,
    summary="Create or update orders in bulk",
    description=f"Up to {orders.MAX_BATCH} orders, all or none: a refused one (its `index` "
    "and `external_id` beside the error) stores nothing. Each is upserted as by PUT; an "
    "order id given twice is one order, the later fields winning.",
    responses=errors(400, 404, e404=STORE_404),
)
async def batch_orders(store_id: str, body: OrderBatch, ctx: Write) -> dict[str, Any]:
    store = await service.get_store(ctx, store_id)
    results = await orders.upsert_many(ctx, store, orders.clean_batch(body.orders))
    listed = [
        {
            "id": r.order.id,
            "external_id": r.order.external_id,
            "result": "created" if r.created else "updated" if r.changed else "unchanged",
        }
        for r in results
    ]
    return {
        "created": sum(1 for r in results if r.created),
        "updated": sum(1 for r in results if r.changed and not r.created),
        "unchanged": sum(1 for r in results if not r.changed),
        "orders": listed,
    }


@router.get(
    "/stores/{store_id}/orders/{external_id}",
    response_model=OrderEnvelope,
    summary="Get an order",
    responses=errors(404, e404="Store not found / Order not found"),
)
async def get_order(store_id: str, external_id: ExternalId, ctx: Read) -> dict[str, Any]:
    store = await service.get_store(ctx, store_id)
    return {"order": orders.as_dict(await orders.get(ctx, store, external_id))}


@router.put(
    "/stores/{store_id}/orders/{external_id}",
    response_model=OrderEnvelope,
    summary="Create or update an order",
    description="By the shop's own id. Sending what is stored changes nothing. An order never "
    "makes its address a contact; it names the contact with that address when there is one. "
    "Naming `cart_id` converts that cart." + PUT_NOTE.format("order"),
    responses={201: {"model": OrderEnvelope, "description": "Created"}, **errors(400, 404)},
)
async def put_order(
    store_id: str,
    external_id: ExternalId,
    body: OrderPut,
    request: Request,
    response: Response,
    ctx: Write,
) -> dict[str, Any]:
    store = await service.get_store(ctx, store_id)
    item = orders.clean(body.model_dump(exclude_unset=True), values.external_id(external_id))
    result = await orders.upsert(ctx, store, item)
    _created(request, response, result.created, result.order.id)
    return {"order": orders.as_dict(result.order)}


@router.delete(
    "/stores/{store_id}/orders/{external_id}",
    response_model=DeletedExternal,
    summary="Delete an order",
    responses=errors(404, e404="Store not found / Order not found"),
)
async def delete_order(store_id: str, external_id: ExternalId, ctx: Write) -> dict[str, Any]:
    store = await service.get_store(ctx, store_id)
    order = await orders.remove(ctx, store, external_id)
    return {"success": True, "id": order.id, "external_id": order.external_id}


# ---------------------------------------------------------------- carts


@router.get(
    "/stores/{store_id}/carts",
    response_model=CartList,
    summary="List a store's carts",
    description="Most recently changed first.",
    responses=errors(400, 404, e404=STORE_404),
)
async def list_carts(
    store_id: str,
    ctx: Read,
    paging: Paging,
    email: Annotated[str | None, Query(description="The shopper's address (any case).")] = None,
    contact_id: Annotated[str | None, Query(description="The contact's id.")] = None,
    status: Annotated[
        str | None,
        Query(description="active, abandoned or converted."),
        Doc(choice(*CART_STATUSES)),
    ] = None,
) -> dict[str, Any]:
    store = await service.get_store(ctx, store_id)
    rows, total = await carts.page(
        ctx, store, paging, email=email, contact_id=contact_id, status=status
    )
    return {"carts": [carts.as_dict(c) for c in rows], "pagination": Pagination.of(paging, total)}


@router.get(
    "/stores/{store_id}/carts/{external_id}",
    response_model=CartEnvelope,
    summary="Get a cart",
    responses=errors(404, e404="Store not found / Cart not found"),
)
async def get_cart(store_id: str, external_id: ExternalId, ctx: Read) -> dict[str, Any]:
    store = await service.get_store(ctx, store_id)
    return {"cart": carts.as_dict(await carts.get(ctx, store, external_id))}


@router.put(
    "/stores/{store_id}/carts/{external_id}",
    response_model=CartEnvelope,
    summary="Create or update a cart",
    description="By the shop's own id. A cart untouched (unchanged) for the store's "
    "`abandon_after_minutes` becomes `abandoned`, once; an order naming it as `cart_id` makes "
    "it `converted`." + PUT_NOTE.format("cart"),
    responses={201: {"model": CartEnvelope, "description": "Created"}, **errors(400, 404)},
)
async def put_cart(
    store_id: str,
    external_id: ExternalId,
    body: CartPut,
    request: Request,
    response: Response,
    ctx: Write,
) -> dict[str, Any]:
    store = await service.get_store(ctx, store_id)
    item = carts.clean(body.model_dump(exclude_unset=True), values.external_id(external_id))
    result = await carts.upsert(ctx, store, item)
    _created(request, response, result.created, result.cart.id)
    return {"cart": carts.as_dict(result.cart)}


@router.delete(
    "/stores/{store_id}/carts/{external_id}",
    response_model=DeletedExternal,
    summary="Delete a cart",
    responses=errors(404, e404="Store not found / Cart not found"),
)
async def delete_cart(store_id: str, external_id: ExternalId, ctx: Write) -> dict[str, Any]:
    store = await service.get_store(ctx, store_id)
    cart = await carts.remove(ctx, store, external_id)
    return {"success": True, "id": cart.id, "external_id": cart.external_id}
