"""Automations (`/app/automations`): the list with where contacts are; an editor for the
trigger and a list of steps (wait, send an email, tags, lists, update a field, call a webhook
endpoint, exit): add, move up or down, remove, each step keeping its id so contacts on it stay
there; activate and pause (the plan's cap explained by the API's message); the runs.

A condition step (yes/no branches) made through the API is kept as it is, shown as a summary,
and can be moved or removed; its branches are edited through the API for now.
"""

from __future__ import annotations

import json
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
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, refused, when
from mailroom.forms import service as forms
from mailroom.lists import service as lists
from mailroom.models import AutomationRun
from mailroom.people import sessions
from mailroom.tags import service as tags
from mailroom.templates import service as templates
from mailroom.webhooks import service as webhooks

router = APIRouter(include_in_schema=False)
PATH = "/app/automations"
SHOWN = 500
UNITS = {"minutes": 60, "hours": 3600, "days": 86400}
EDITABLE = [t for t in STEP_TYPES if t != "condition"]
MAX_ROWS = 100


def _wait_parts(seconds: int) -> tuple[int, str]:
    for unit in ("days", "hours", "minutes"):
        if seconds % UNITS[unit] == 0:
            return seconds // UNITS[unit], unit
    return max(1, seconds // 60), "minutes"


def _row_of(step: dict[str, Any]) -> dict[str, Any]:
    """A stored step as the editor's row."""
    row: dict[str, Any] = {"id": step["id"], "type": step["type"], "label": step.get("label") or ""}
    if step["type"] == "wait":
        if "until" in step:
            row["raw"] = json.dumps(step)
        else:
            row["amount"], row["unit"] = _wait_parts(int(step["seconds"]))
    elif step["type"] == "condition":
        row["raw"] = json.dumps(step)
        row["summary"] = (
            f"{len(step.get('yes') or [])} step(s) if it matches, "
            f"{len(step.get('no') or [])} if not"
        )
    else:
        for key in ("template_id", "tag_id", "list_id", "field", "value"):
            if key in step:
                row[key] = step[key]
        if "endpoint_ids" in step:
            row["endpoint_id"] = (step["endpoint_ids"] or [""])[0]
    return row


def _rows_from_form(form: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for i in range(MAX_ROWS):
        if f"type_{i}" not in form:
            break
        if form.get(f"remove_{i}") == "on":
            continue
        row = {
            k: str(form.get(f"{k}_{i}") or "")
            for k in (
                "id",
                "type",
                "label",
                "amount",
                "unit",
                "template_id",
                "tag_id",
                "list_id",
                "field",
                "value",
                "endpoint_id",
                "raw",
            )
        }
        rows.append(row)
    move = str(form.get("move") or "")
    if move:
        direction, _, index = move.partition("_")
        i = int(index) if index.isdigit() else -1
        j = i - 1 if direction == "up" else i + 1
        if 0 <= i < len(rows) and 0 <= j < len(rows):
            rows[i], rows[j] = rows[j], rows[i]
    if form.get("add"):
        rows.append({"type": str(form.get("add_type") or "wait"), "amount": "1", "unit": "days"})
    return rows


def _step_of(row: dict[str, Any]) -> dict[str, Any]:
    """A row as the API's step (the service checks it)."""
    if row.get("raw"):
        return json.loads(row["raw"])
    step: dict[str, Any] = {"type": row["type"]}
    if row.get("id"):
        step["id"] = row["id"]
    if row.get("label"):
        step["label"] = row["label"]
    kind = row["type"]
    if kind == "wait":
        amount = row.get("amount") or ""
        step["seconds"] = (
            int(amount) * UNITS.get(row.get("unit") or "days", 86400)
            if amount.isdigit()
            else amount
        )
    elif kind == "send_email":
        step["template_id"] = row.get("template_id")
    elif kind in ("add_tag", "remove_tag"):
        step["tag_id"] = row.get("tag_id")
    elif kind in ("add_to_list", "remove_from_list"):
        step["list_id"] = row.get("list_id")
    elif kind == "update_field":
        step["field"], step["value"] = row.get("field"), row.get("value")
    elif kind == "call_webhook":
        step["endpoint_ids"] = [row["endpoint_id"]] if row.get("endpoint_id") else []
    return step


def _trigger_of(form: dict[str, Any]) -> dict[str, Any]:
    kind = str(form.get("trigger_type") or "contact_created")
    trigger: dict[str, Any] = {"type": kind}
    for key in ("tag_id", "list_id", "form_id", "field"):
        if form.get(f"trigger_{key}"):
            trigger[key] = str(form.get(f"trigger_{key}"))
    if kind == "date_anniversary":
        days = str(form.get("trigger_days") or "0")
        trigger["days"] = int(days) if days.lstrip("-").isdigit() else days
        trigger["time"] = str(form.get("trigger_time") or "09:00")
    return trigger


async def _choices(ctx: Context) -> dict[str, list[tuple[str, str]]]:
    first = PageParams(1, SHOWN)
    tag_rows, _ = await tags.list_tags(ctx, first, None)
    list_rows, _ = await lists.list_lists(ctx, first)
    template_rows, _ = await templates.list_templates(ctx, first, None)
    form_rows, _ = await forms.list_forms(ctx, first, None)
    registry = await custom_fields.registry(ctx)
    endpoints = await webhooks.list_endpoints(ctx) if ctx.principal.is_admin else []
    return {
        "tags": [(t.id, t.name) for t in tag_rows],
        "lists": [(m.id, m.name) for m in list_rows],
        "templates": [(t.id, t.name) for t in template_rows],
        "forms": [(f.id, f.name) for f in form_rows],
        "fields": [(k, f.label) for k, f in registry.items()],
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
) -> Response:
    stats, here, recent = None, {}, []
    if automation_id:
        stats = (await automations.stats_of(ctx, [automation_id]))[automation_id]
        here = await _where_they_are(ctx, automation_id)
        runs, _ = await automations.runs(ctx, automation_id, PageParams(1, 20), None)
        recent = [{**r, "started": when(r["created_at"])} for r in runs]
    return render.page(
        "automation.html",
        status=status,
        title=draft.get("name") or "New automation",
        section="automations",
        visitor=visitor,
        draft=draft,
        automation_id=automation_id,
        triggers=TRIGGERS,
        step_types=EDITABLE,
        labels=LABELS,
        units=list(UNITS),
        choices=await _choices(ctx),
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
            "rows": [{"type": "wait", "amount": 1, "unit": "days"}],
            "allow_reentry": False,
            "time_zone": "UTC",
        }
        return await _editor(visitor, ctx, draft)

    return await as_visitor(request, work)


@router.get(f"{PATH}/{{automation_id}}")
async def automation_page(automation_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        stored = await automations.get_automation(ctx, automation_id)
        draft = {
            "name": stored.name,
            "status": stored.status,
            "trigger": dict(stored.trigger),
            "rows": [_row_of(s) for s in stored.steps],
            "allow_reentry": stored.allow_reentry,
            "time_zone": stored.time_zone,
        }
        return await _editor(visitor, ctx, draft, automation_id=automation_id)

    return await as_visitor(request, work)


def _draft_of(form: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": str(form.get("name") or ""),
        "status": str(form.get("status") or "draft"),
        "trigger": _trigger_of(form),
        "rows": rows,
        "allow_reentry": form.get("allow_reentry") == "on",
        "time_zone": str(form.get("time_zone") or "UTC"),
    }


@router.post(f"{PATH}/save")
async def save_automation(request: Request) -> Response:
    """Save, or (add / move) lay the steps out again without saving."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        automation_id = str(form.get("automation_id") or "")
        rows = _rows_from_form(form)
        draft = _draft_of(form, rows)
        if form.get("add") or form.get("move"):
            return await _editor(visitor, ctx, draft, automation_id=automation_id)
        body = {
            "name": draft["name"],
            "trigger": draft["trigger"],
            "steps": [_step_of(r) for r in rows],
            "allow_reentry": draft["allow_reentry"],
            "time_zone": draft["time_zone"],
        }
        try:
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
