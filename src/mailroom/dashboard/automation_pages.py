"""Automations (`/app/automations`): the list with where contacts are; an editor for the
trigger (the settings of the chosen one) and a list of steps (wait, send an email, tags,
lists, update a field, a condition, call a webhook endpoint, exit): add, move up or down,
remove, each step keeping its id so contacts on it stay there; activate and pause (the plan's
cap explained by the API's message); the runs.

The e-commerce triggers pick a store (and, for orders, whether only a first order counts).

A condition step has its rule (the segment builder's rows) and its yes and no branches, each
a path a new step can be added to (the form's shape: automation_form). Changing a step's
type, the trigger, or a rule condition's field lays the form out again in place (htmx);
without script, "Show the settings" does.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy import func, select

from mailroom.automations import service as automations
from mailroom.automations.steps import LABELS, STEP_TYPES, TRIGGERS
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.custom_fields import service as custom_fields
from mailroom.dashboard import automation_form as af
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, refused, when
from mailroom.dashboard.segment_pages import RuleChoices, rule_choices
from mailroom.ecommerce import service as stores
from mailroom.forms import service as forms
from mailroom.models import AutomationRun
from mailroom.people import sessions
from mailroom.templates import service as templates
from mailroom.webhooks import service as webhooks

router = APIRouter(include_in_schema=False)
PATH = "/app/automations"
SHOWN = 500
TRIGGER_NAMES = {
    "contact_created": "a contact is created",
    "tag_added": "a tag is added",
    "list_joined": "a contact joins a list",
    "form_submitted": "a form is submitted",
    "date_anniversary": "a date comes round",
    "manual": "you add contacts (API)",
    "order_placed": "an order is placed",
    "cart_abandoned": "a cart is abandoned",
}
TRIGGER_HELP = {
    "contact_created": "A contact created through the API enters, and an import's new "
    "subscribed contacts when the import runs automations.",
    "tag_added": "A contact enters when this tag is added to it.",
    "list_joined": "A contact enters when it joins this list (confirmed, with double opt-in).",
    "form_submitted": "A contact enters when it submits this form.",
    "date_anniversary": "Each year, on the date in this field (shifted by the days), at this "
    "time in the automation's time zone.",
    "manual": "Contacts enter only when you enrol them through the API "
    "(POST /api/v1/automations/{id}/enrol).",
    "order_placed": "A subscribed contact enters when a new order in this store is placed "
    "with its email address. Its emails can show the order: {{ order.total }}, "
    "{{ order.currency }} and {{ order.lines }} (each line's title, url, image_url, quantity "
    "and price).",
    "cart_abandoned": "A subscribed contact enters when its cart in this store is abandoned "
    "(once per cart). Its emails can show the cart: {{ cart.lines }}, {{ cart.total }} and "
    "{{ cart.checkout_url }}; a cart bought before an email goes ends the run.",
}


async def _choices(ctx: Context, rules: RuleChoices) -> dict[str, list[tuple[str, str]]]:
    first = PageParams(1, SHOWN)
    template_rows, _ = await templates.list_templates(ctx, first, None)
    form_rows, _ = await forms.list_forms(ctx, first, None)
    store_rows, _ = await stores.list_stores(ctx, first, None)
    registry = await custom_fields.registry(ctx)
    endpoints = await webhooks.list_endpoints(ctx) if ctx.principal.is_admin else []
    return {
        "tags": list(rules.by_id["tags"].items()),
        "lists": list(rules.by_id["lists"].items()),
        "templates": [(t.id, t.name) for t in template_rows],
        "forms": [(f.id, f.name) for f in form_rows],
        "stores": [(s.id, s.name) for s in store_rows],
        "fields": [(k, f.label) for k, f in registry.items()],
        "date_fields": [(k, f.label) for k, f in registry.items() if f.type == "date"],
        "endpoints": [(e.id, e.description or e.url) for e in endpoints if e.channel == "server"],
    }


@router.get(PATH)
async def automations_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        rows, _ = await automations.list_automations(ctx, PageParams(1, SHOWN), None, None)
        stats = await automations.stats_of(ctx, [a.id for a in rows])
        return render.page(
            "automations.html",
            title="Automations",
            section="automations",
            visitor=visitor,
            rows=[
                {
                    "id": a.id,
                    "name": a.name,
                    "status": a.status,
                    "trigger": a.trigger_type.replace("_", " "),
                    **stats[a.id],
                }
                for a in rows
            ],
            cap=ctx.principal.plan.live_automations,
            flashes=sessions.take_flash(visitor.row),
        )

    return await as_visitor(request, work)


async def _where_they_are(ctx: Context, automation_id: str) -> dict[str, int]:
    rows = await ctx.session.execute(
        select(AutomationRun.step_id, func.count())
        .where(
            AutomationRun.workspace_id == ctx.workspace_id,
            AutomationRun.automation_id == automation_id,
            AutomationRun.ended_at.is_(None),
        )
        .group_by(AutomationRun.step_id)
    )
    return {str(step_id): int(n) for step_id, n in rows.all()}


async def _editor(
    visitor: Visitor,
    ctx: Context,
    draft: dict[str, Any],
    *,
    automation_id: str = "",
    status: int = 200,
    rules: RuleChoices | None = None,
) -> Response:
    stats, here, recent = None, {}, []
    if automation_id:
        stats = (await automations.stats_of(ctx, [automation_id]))[automation_id]
        here = await _where_they_are(ctx, automation_id)
        runs, _ = await automations.runs(ctx, automation_id, PageParams(1, 20), None)
        recent = [{**r, "started": when(r["created_at"])} for r in runs]
    rules = rules or await rule_choices(ctx)
    return render.page(
        "automation.html",
        status=status,
        title=draft.get("name") or "New automation",
        section="automations",
        visitor=visitor,
        draft=draft,
        automation_id=automation_id,
        triggers=TRIGGERS,
        trigger_names=TRIGGER_NAMES,
        trigger_help=TRIGGER_HELP,
        step_types=STEP_TYPES,
        labels=LABELS,
        units=list(af.UNITS),
        places=af.places(draft["rows"]),
        choices=await _choices(ctx, rules),
        **rules.shown(),
        stats=stats,
        here=here,
        runs=recent,
        cap=ctx.principal.plan.live_automations,
        flashes=sessions.take_flash(visitor.row),
    )


@router.get(f"{PATH}/new")
async def new_automation(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        draft = {
            "name": "",
            "status": "draft",
            "trigger": {"type": "contact_created"},
            "rows": af.lay_out([af.StepRow(type="wait")]),
            "allow_reentry": False,
            "time_zone": "UTC",
        }
        return await _editor(visitor, ctx, draft)

    return await as_visitor(request, work)


@router.get(f"{PATH}/{{automation_id}}")
async def automation_page(automation_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        stored = await automations.get_automation(ctx, automation_id)
        rules = await rule_choices(ctx)
        draft = {
            "name": stored.name,
            "status": stored.status,
            "trigger": dict(stored.trigger),
            "rows": af.rows_of(stored.steps, rules.by_id),
            "allow_reentry": stored.allow_reentry,
            "time_zone": stored.time_zone,
        }
        return await _editor(visitor, ctx, draft, automation_id=automation_id, rules=rules)

    return await as_visitor(request, work)


def _draft_of(form: dict[str, Any], rows: list[af.StepRow]) -> dict[str, Any]:
    return {
        "name": str(form.get("name") or ""),
        "status": str(form.get("status") or "draft"),
        "trigger": af.trigger_of(form),
        "rows": rows,
        "allow_reentry": form.get("allow_reentry") == "on",
        "time_zone": str(form.get("time_zone") or "UTC"),
    }


@router.post(f"{PATH}/save")
async def save_automation(request: Request) -> Response:
    """Save, or (add, move, a changed type: `layout`) lay the steps out again unsaved."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        automation_id = str(form.get("automation_id") or "")
        rows = af.rows_from_form(form)
        draft = _draft_of(form, rows)
        if any(form.get(k) for k in ("add", "move", "addrule", "layout")):
            return await _editor(visitor, ctx, draft, automation_id=automation_id)
        try:
            rules = await rule_choices(ctx)
            body = {
                "name": draft["name"],
                "trigger": draft["trigger"],
                "steps": af.steps_of(rows, rules.registry, rules.by_name),
                "allow_reentry": draft["allow_reentry"],
                "time_zone": draft["time_zone"],
            }
            if automation_id:
                saved = await automations.update_automation(ctx, automation_id, body)
            else:
                saved = await automations.create_automation(ctx, body)
        except ApiError as problem:
            if problem.status == 404:
                raise
            await refused(ctx, visitor, problem)
            return await _editor(
                visitor, ctx, draft, automation_id=automation_id, status=problem.status
            )
        operation = "update_automation" if automation_id else "create_automation"
        audit_write(ctx, request, operation, saved.id, 200 if automation_id else 201)
        sessions.flash(visitor.row, "ok", f"Automation “{saved.name}” saved.")
        return RedirectResponse(f"{PATH}/{saved.id}", status_code=303)

    return await as_visitor(request, work)


@router.post(f"{PATH}/{{automation_id}}/{{action}}")
async def automation_action(automation_id: str, action: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        here = f"{PATH}/{automation_id}"
        try:
            if action == "activate":
                await automations.activate(ctx, automation_id)
                text = "Active: new contacts that meet the trigger enter it."
            elif action == "pause":
                await automations.pause(ctx, automation_id)
                text = "Paused: nobody enters and nobody moves until it is active again."
            elif action == "delete":
                name = (await automations.get_automation(ctx, automation_id)).name
                await automations.delete_automation(ctx, automation_id)
                audit_write(ctx, request, "delete_automation", automation_id, 200)
                sessions.flash(visitor.row, "ok", f"Automation “{name}” deleted.")
                return RedirectResponse(PATH, status_code=303)
            else:
                raise ApiError(404, "Page not found")
        except ApiError as problem:
            if problem.status == 404:
                raise
            await refused(ctx, visitor, problem)
            return RedirectResponse(here, status_code=303)
        audit_write(ctx, request, f"{action}_automation", automation_id, 200)
        sessions.flash(visitor.row, "ok", text)
        return RedirectResponse(here, status_code=303)

    return await as_visitor(request, work)
