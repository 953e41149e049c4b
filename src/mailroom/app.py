"""create_app(): routers, error handlers, middleware, OpenAPI; the worker in-process if asked."""

from __future__ import annotations

import gc
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.routing import APIRoute
from starlette.routing import Route

from mailroom import API_VERSION
from mailroom.accounts.api import router as account_router
from mailroom.assistants.api import router as assistants_router
from mailroom.assistants.oauth import build_routes as oauth_routes
from mailroom.audit.api import router as audit_router
from mailroom.automations.api import router as automations_router
from mailroom.blueprints.api import router as blueprints_router
from mailroom.campaigns.api import router as campaigns_router
from mailroom.contacts.api import router as contacts_router
from mailroom.core import logs, multiprocess
from mailroom.custom_fields.api import router as custom_fields_router
from mailroom.dashboard.ab_test_pages import router as dashboard_ab_tests_router
from mailroom.dashboard.assistant_pages import router as dashboard_assistants_router
from mailroom.dashboard.automation_pages import router as dashboard_automations_router
from mailroom.dashboard.blueprint_pages import router as dashboard_blueprints_router
from mailroom.dashboard.campaign_pages import router as dashboard_campaigns_router
from mailroom.dashboard.consent_pages import router as dashboard_consent_router
from mailroom.dashboard.contact_pages import router as dashboard_contacts_router
from mailroom.dashboard.feed_pages import router as dashboard_feeds_router
from mailroom.dashboard.field_pages import router as dashboard_fields_router
from mailroom.dashboard.form_pages import router as dashboard_forms_router
from mailroom.dashboard.group_pages import router as dashboard_groups_router
from mailroom.dashboard.import_pages import router as dashboard_import_router
from mailroom.dashboard.overview_pages import router as dashboard_overview_router
from mailroom.dashboard.pages import router as dashboard_router
from mailroom.dashboard.people_pages import router as dashboard_people_router
from mailroom.dashboard.platform_import_pages import router as dashboard_platform_import_router
from mailroom.dashboard.render import note_delivery
from mailroom.dashboard.security_pages import router as dashboard_security_router
from mailroom.dashboard.segment_pages import router as dashboard_segments_router
from mailroom.dashboard.sending_pages import router as dashboard_sending_router
from mailroom.dashboard.settings_pages import router as dashboard_settings_router
from mailroom.dashboard.store_pages import router as dashboard_stores_router
from mailroom.dashboard.suppression_pages import router as dashboard_suppressions_router
from mailroom.dashboard.template_pages import router as dashboard_templates_router
from mailroom.dashboard.webhook_pages import router as dashboard_webhooks_router
from mailroom.dashboard.workspace_pages import router as dashboard_workspaces_router
from mailroom.db import Database
from mailroom.domains.api import router as domains_router
from mailroom.ecommerce.api import router as ecommerce_router
from mailroom.ecommerce.hooks import router as store_hooks_router
from mailroom.forms.api import router as forms_router
from mailroom.forms.pages import router as form_pages_router
from mailroom.lists.api import router as lists_router
from mailroom.mcp.server import MCP_PATH, McpHttpEndpoint
from mailroom.media.api import public_router as media_public_router
from mailroom.media.api import router as media_router
from mailroom.pages.api import router as pages_router
from mailroom.platform_imports.api import router as platform_imports_router
from mailroom.rss.api import router as rss_router
from mailroom.segments.api import router as segments_router
from mailroom.sending.api import router as sending_router
from mailroom.settings import Settings, get_settings
from mailroom.suppressions.api import router as suppressions_router
from mailroom.system.api import router as system_router
from mailroom.tags.api import router as tags_router
from mailroom.templates.api import router as templates_router
from mailroom.tracking.api import router as tracking_router
from mailroom.tracking.recorder import HitRecorder
from mailroom.web.bodylimit import BodyLimitMiddleware
from mailroom.web.docs import router as docs_router
from mailroom.web.errors import install_error_handlers
from mailroom.web.idempotency import IdempotencyMiddleware
from mailroom.web.linkhost import LinkHostMiddleware, LinkHosts
from mailroom.web.linkhost import router as tls_router
from mailroom.web.methods import MethodMiddleware
from mailroom.web.middleware import ApiKeyMiddleware
from mailroom.web.observe import ObserveMiddleware
from mailroom.web.openapi import build_openapi
from mailroom.webhooks.api import router as webhooks_router
from mailroom.worker import ServerHeartbeat, WorkerHost

DESCRIPTION = """\
Mailroom's JSON API. Every `/api/v1` call needs a workspace API key in the `x-api-key` header;
each operation names the permission it needs. Errors are `{"error": "<message>"}` plus named
extras. Writes (POST, PUT, PATCH, DELETE) count toward the plan's hourly write limit; reads
never do, and neither do previews (POST operations marked `x-read-only`).
"""

# The dashboard's pages: each says when mail only goes to the outbox folder (note_delivery).
DASHBOARD_ROUTERS = [
    dashboard_router,
    dashboard_overview_router,
    dashboard_contacts_router,
    dashboard_groups_router,
    dashboard_fields_router,
    dashboard_import_router,
    dashboard_platform_import_router,
    dashboard_segments_router,
    dashboard_templates_router,
    dashboard_campaigns_router,
    dashboard_ab_tests_router,
    dashboard_forms_router,
    dashboard_automations_router,
    dashboard_people_router,
    dashboard_security_router,
    dashboard_settings_router,
    dashboard_sending_router,
    dashboard_webhooks_router,
    dashboard_suppressions_router,
    dashboard_consent_router,
    dashboard_assistants_router,
    dashboard_stores_router,
    dashboard_feeds_router,
    dashboard_blueprints_router,
    dashboard_workspaces_router,
]

ROUTERS = [
    # First: the open pixel and click redirect are the hottest paths (route matching walks
    # this list in order).
    tracking_router,
    # Then the other public pages that take traffic from the internet (forms, subscriber
    # pages): matching walks every route before them (~10 % of a form submission's CPU).
    form_pages_router,
    pages_router,
    # Shopify's and WooCommerce's webhook deliveries (signed, no key).
    store_hooks_router,
    system_router,
    tls_router,
    account_router,
    audit_router,
    assistants_router,
    contacts_router,
    tags_router,
    lists_router,
    custom_fields_router,
    suppressions_router,
    webhooks_router,
    templates_router,
    segments_router,
    domains_router,
    campaigns_router,
    rss_router,
    platform_imports_router,
    blueprints_router,
    automations_router,
    ecommerce_router,
    forms_router,
    sending_router,
    media_router,
    media_public_router,
    *DASHBOARD_ROUTERS,
    # /docs, /redoc and /favicon.ico, served from here (never a CDN).
    docs_router,
]


def operation_id(route: APIRoute) -> str:
    """Short, stable operation ids: the handler's name (`list_contacts`)."""
    return route.name


def freeze_startup_heap() -> None:
    """What start-up made (modules, routes, templates) lives as long as the process: moved
    out of the garbage collector's reach, so the occasional full collection walks only what
    requests make. Measured on a 50,000-recipient report page: the slowest of 60 visits went
    from 236 ms (a full collection) to 84 ms; the median did not move."""
    gc.collect()
    gc.freeze()


def create_app(settings: Settings | None = None, *, run_worker: bool = False) -> FastAPI:
    settings = settings or get_settings()
    db = Database(settings.resolved_database_url)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await db.warm()
        host = WorkerHost(db, settings) if run_worker else None
        # Without the loops, the server beats on a row of its own (role "server"), so that a
        # restore sees it running; with them, the worker's row says so already.
        presence = None if host else ServerHeartbeat(db)
        if host:
            host.start()
        if presence:
            await presence.start()
        freeze_startup_heap()
        try:
            async with app.state.mcp.running():
                yield
        finally:
            gc.unfreeze()  # collectable again: a process serving apps one after another
            if host:
                host.stop()
                await host.join()
            await app.state.hits.close()
            if presence:  # the last write: running until here
                await presence.stop()
            await db.dispose()
            multiprocess.process_exited()

    app = FastAPI(
        title="Mailroom API",
        version=API_VERSION,
        description=DESCRIPTION,
        lifespan=lifespan,
        generate_unique_id_function=operation_id,
        # FastAPI's own pages load Swagger UI from a CDN: web.docs serves them offline.
        docs_url=None,
        redoc_url=None,
    )
    app.state.db = db
    app.state.settings = settings
    app.state.hits = HitRecorder(db, settings)
    install_error_handlers(app)
    # Added innermost first: the key check runs before the others look at the request, and
    # a body is capped before the idempotency check reads it.
    app.add_middleware(IdempotencyMiddleware)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_json_body_bytes)
    app.add_middleware(MethodMiddleware)
    app.add_middleware(ApiKeyMiddleware)
    # A sending domain's link host answers only its links' paths.
    app.state.link_hosts = LinkHosts(db)
    app.add_middleware(LinkHostMiddleware, hosts=app.state.link_hosts, settings=settings)
    # Outermost: every answer gets its request id, metrics and access-log line; an unhandled
    # exception is logged and answered (500) there, inside the request's context.
    app.add_middleware(ObserveMiddleware)
    for router in ROUTERS:
        dashboard = router in DASHBOARD_ROUTERS
        app.include_router(router, dependencies=[Depends(note_delivery)] if dashboard else None)
    # Agents: the same operations as MCP tools (not an OpenAPI operation itself).
    app.state.mcp = McpHttpEndpoint(app, settings.public_url)
    app.router.routes.append(Route(MCP_PATH, app.state.mcp, methods=["GET", "POST", "DELETE"]))
    # OAuth for MCP clients: metadata, authorize, token, register, revoke (assistants.oauth).
    app.router.routes.extend(oauth_routes(db, settings))

    def openapi() -> dict[str, Any]:
        return build_openapi(app)

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def create_served_app() -> FastAPI:
    """Factory for `uvicorn --factory` (used by `mailroom serve`, one per server process; also
    usable with uvicorn directly, so the data directory is made private here too)."""
    settings = get_settings()
    logs.configure(settings.log_format, settings.log_level)
    settings.prepare_storage()
    return create_app(settings, run_worker=os.environ.get("MAILROOM_SERVE_WORKER", "1") == "1")
