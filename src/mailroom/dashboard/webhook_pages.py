"""The Webhooks pages (admins): endpoints with their events and filters, add and change one
(a server, a Slack incoming-webhook or a Teams Workflows URL), turn it off and on again,
rotate its secret (shown once), delete it, send a test and read the delivery log.

Everything runs on `webhooks.service` as the API does. Resolving a URL and sending a test are
network I/O: the page commits what it read first, so no pooled connection (on SQLite not the
single write connection) waits on DNS or on the receiver.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy import select

from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, refused, when
from mailroom.events.catalog import CATALOG, CHAT_EVENTS
from mailroom.models import Campaign, Form, MailingList, SendingDomain, Tag, WebhookEndpoint
from mailroom.people import sessions
from mailroom.webhooks import log, service, testing

router = APIRouter(include_in_schema=False)
LOG_PAGE = 25
CHANNELS = [
    ("", "Detect from the URL"),
    ("server", "Server (signed JSON)"),
    ("slack", "Slack incoming webhook"),
    ("teams", "Microsoft Teams workflow"),
]
# Filter dimension -> (heading, table, name column); at most FILTER_CHOICES of each are offered.
FILTERS: dict[str, tuple[str, Any, Any]] = {
    "list_ids": ("Lists", MailingList, MailingList.name),
    "tag_ids": ("Tags", Tag, Tag.name),
    "form_ids": ("Forms", Form, Form.name),
    "campaign_ids": ("Campaigns", Campaign, Campaign.name),
    "domain_ids": ("Sending domains", SendingDomain, SendingDomain.domain),
}
FILTER_CHOICES = 200


def _event_groups() -> list[dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for name, event in CATALOG.items():
        groups.setdefault(event.group, []).append(
            {"name": name, "description": event.description, "chat": event.chat}
        )
    return [{"group": g, "events": events} for g, events in groups.items()]


async def _filter_choices(ctx: Context, chosen: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Each dimension's rows of this workspace by name (what is already chosen always shown)."""
    choices = []
    for key, (heading, table, name) in FILTERS.items():
        rows = await ctx.session.execute(
            select(table.id, name)
            .where(table.workspace_id == ctx.workspace_id)
            .order_by(table.id.in_(chosen.get(key) or []).desc(), name)
            .limit(FILTER_CHOICES)
        )
        options = [{"id": row_id, "name": label} for row_id, label in rows.all()]
        if options:
            choices.append({"key": key, "heading": heading, "options": options})
    return choices


def _posted(form: dict[str, Any]) -> dict[str, Any]:
    """The endpoint form as the service's body."""
    filters = {key: list(form.get(key) or []) for key in FILTERS}
    return {
        "url": str(form.get("url") or ""),
        "description": str(form.get("description") or ""),
        "channel": str(form.get("channel") or "") or None,
        "event_types": list(form.get("event") or []),
        "filters": {k: v for k, v in filters.items() if v},
    }


def _endpoint_view(endpoint: WebhookEndpoint) -> dict[str, Any]:
    shown = service.as_dict(endpoint)
    health = shown["health"]
    return {
        **shown,
        "title": endpoint.description or endpoint.url,
        "kind": dict(CHANNELS).get(endpoint.channel, endpoint.channel),
        "last_success": when(health["last_success_at"]),
        "last_failure": when(health["last_failure_at"]),
        "disabled_at": when(health["disabled_at"]),
    }


async def _list_page(
    visitor: Visitor,
    ctx: Context,
    *,
    status: int = 200,
    draft: dict[str, Any] | None = None,
) -> Response:
    draft = draft or {"event_types": [], "filters": {}}
    endpoints = await service.list_endpoints(ctx)
    return render.page(
        "webhooks.html",
        status=status,
        title="Webhooks",
        section="webhooks",
        visitor=visitor,
        endpoints=[_endpoint_view(e) for e in endpoints],
        draft=draft,
        channels=CHANNELS,
        groups=_event_groups(),
        filter_choices=await _filter_choices(ctx, draft.get("filters") or {}),
        flashes=sessions.take_flash(visitor.row),
    )


async def _endpoint_page(
    visitor: Visitor,
    ctx: Context,
    endpoint: WebhookEndpoint,
    *,
    page: int = 1,
    status: int = 200,
    secret: str | None = None,
    draft: dict[str, Any] | None = None,
) -> Response:
    shown = _endpoint_view(endpoint)
    rows, total = await service.list_deliveries(ctx, endpoint.id, PageParams(page, LOG_PAGE))
    events = await log.events_for(ctx.session, rows)
    deliveries = []
    for row in rows:
        item = log.entry(row, events.get(row.event_id), with_payload=True)
        item["created"] = when(row.created_at)
        item["delivered"] = when(row.delivered_at)
        item["next_attempt"] = when(item["next_attempt_at"])
        payload = item.get("payload")
        item["payload_json"] = json.dumps(payload, indent=2, default=str) if payload else ""
        deliveries.append(item)
    pages = max(1, -(-total // LOG_PAGE))
    test_events = [n for n in CATALOG if endpoint.channel == "server" or n in CHAT_EVENTS]
    return render.page(
        "webhook.html",
        status=status,
        title=shown["title"],
        section="webhooks",
        visitor=visitor,
        endpoint=shown,
        secret=secret,
        draft=draft or shown,
        channels=CHANNELS,
        groups=_event_groups(),
        filter_choices=await _filter_choices(ctx, (draft or shown).get("filters") or {}),
        deliveries=deliveries,
        log_page=page,
        page_url=lambda n: f"?page={n}",
        log_pages=pages,
        log_total=total,
        test_events=test_events,
        test_default=next((n for n in endpoint.event_types if n in test_events), None),
        flashes=sessions.take_flash(visitor.row),
    )


def _page_number(request: Request) -> int:
    raw = request.query_params.get("page") or "1"
    return max(1, int(raw)) if raw.isdecimal() and len(raw) < 7 else 1


@router.get("/settings/webhooks")
async def webhooks_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return await _list_page(visitor, ctx)

    return await as_visitor(request, work, admin=True)


@router.post("/settings/webhooks")
async def add_webhook(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        body = _posted(form)
        await ctx.session.commit()  # the URL's name is resolved next: hold no connection
        try:
            endpoint = await service.create_endpoint(ctx, body)
        except ApiError as problem:
            await refused(ctx, visitor, problem)
            return await _list_page(visitor, ctx, status=problem.status, draft=body)
        audit_write(ctx, request, "create_webhook", endpoint.id, 201)
        sessions.flash(
            visitor.row, "ok", "Endpoint added. Copy its signing secret now: it is shown once."
        )
        return await _endpoint_page(visitor, ctx, endpoint, status=201, secret=endpoint.secret)

    return await as_visitor(request, work, admin=True)


@router.get("/settings/webhooks/{endpoint_id}")
async def webhook_page(endpoint_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        endpoint = await service.get_endpoint(ctx, endpoint_id)
        return await _endpoint_page(visitor, ctx, endpoint, page=_page_number(request))

    return await as_visitor(request, work, admin=True)


@router.post("/settings/webhooks/{endpoint_id}")
async def change_webhook(endpoint_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        body = _posted(form)
        if body["channel"] is None:
            body.pop("channel")  # "detect": the service detects it again for a new URL
        await ctx.session.commit()  # a new URL is resolved next: hold no connection
        try:
            endpoint = await service.update_endpoint(ctx, endpoint_id, body)
        except ApiError as problem:
            if problem.status == 404:
                raise
            await refused(ctx, visitor, problem)
            endpoint = await service.get_endpoint(ctx, endpoint_id)
            return await _endpoint_page(visitor, ctx, endpoint, status=problem.status, draft=body)
        audit_write(ctx, request, "update_webhook", endpoint.id, 200)
        sessions.flash(visitor.row, "ok", "Endpoint saved.")
        return RedirectResponse(f"/settings/webhooks/{endpoint.id}", status_code=303)

    return await as_visitor(request, work, admin=True)


@router.post("/settings/webhooks/{endpoint_id}/enabled")
async def switch_webhook(endpoint_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        enabled = form.get("enabled") == "on"
        endpoint = await service.update_endpoint(ctx, endpoint_id, {"enabled": enabled})
        audit_write(ctx, request, "update_webhook", endpoint.id, 200)
        text = (
            "Endpoint is on again; its failure count starts from zero."
            if enabled
            else "Endpoint is off: nothing is sent to it, and queued deliveries are dropped."
        )
        sessions.flash(visitor.row, "ok", text)
        return RedirectResponse(f"/settings/webhooks/{endpoint.id}", status_code=303)

    return await as_visitor(request, work, admin=True)


@router.post("/settings/webhooks/{endpoint_id}/test")
async def test_webhook_page(endpoint_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        endpoint = await service.get_endpoint(ctx, endpoint_id)
        await ctx.session.commit()  # the receiver may take its whole timeout
        result = await testing.send_test(
            ctx, endpoint, form.get("event_type"), visitor.workspace_name
        )
        await ctx.session.refresh(visitor.row)
        audit_write(ctx, request, "test_webhook", endpoint_id, 200)
        ok = bool(result["ok"])
        text = (
            f"Test delivered: the endpoint answered {result['status']}."
            if ok
            else "Test failed: "
            + (f"the endpoint answered {result['status']}" if result["status"] else "no answer")
            + (f" ({result['error']})" if result.get("error") else "")
            + "."
        )
        if request.headers.get("HX-Request"):
            return render.page("webhook_test_result.html", ok=ok, text=text)
        sessions.flash(visitor.row, "ok" if ok else "error", text)
        return RedirectResponse(f"/settings/webhooks/{endpoint_id}", status_code=303)

    return await as_visitor(request, work, admin=True)


# The question asked before each of these (GET), answered by the POST of the same path.
CONFIRMATIONS = {"rotate": "Rotate the secret", "delete": "Delete an endpoint"}


@router.get("/settings/webhooks/{endpoint_id}/{action}")
async def confirm_webhook_action(endpoint_id: str, action: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        if action not in CONFIRMATIONS:
            raise ApiError(404, "Page not found")
        endpoint = await service.get_endpoint(ctx, endpoint_id)
        return render.page(
            "webhook_confirm.html",
            title=CONFIRMATIONS[action],
            section="webhooks",
            visitor=visitor,
            endpoint=_endpoint_view(endpoint),
            action=action,
        )

    return await as_visitor(request, work, admin=True)


@router.post("/settings/webhooks/{endpoint_id}/rotate")
async def rotate_webhook(endpoint_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        endpoint = await service.rotate_secret(ctx, endpoint_id)
        audit_write(ctx, request, "rotate_webhook_secret", endpoint.id, 200)
        sessions.flash(
            visitor.row, "ok", "New secret issued; the old one no longer signs. Copy it now."
        )
        return await _endpoint_page(visitor, ctx, endpoint, secret=endpoint.secret)

    return await as_visitor(request, work, admin=True)


@router.post("/settings/webhooks/{endpoint_id}/delete")
async def delete_webhook(endpoint_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        endpoint = await service.get_endpoint(ctx, endpoint_id)
        title = endpoint.description or endpoint.url
        await service.delete_endpoint(ctx, endpoint_id)
        audit_write(ctx, request, "delete_webhook", endpoint_id, 200)
        sessions.flash(visitor.row, "ok", f"Endpoint “{title}” is deleted with its log.")
        return RedirectResponse("/settings/webhooks", status_code=303)

    return await as_visitor(request, work, admin=True)
