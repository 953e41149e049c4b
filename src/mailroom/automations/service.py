"""Automations: CRUD (the shared named shape), activation under the plan's cap, pausing,
statistics and runs. Enrolment is `automations.enrol`; working runs is `automations.runner`."""

from __future__ import annotations

from typing import Any

from sqlalchemy import case, func, select

from mailroom.automations import enrol
from mailroom.automations import steps as shape
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.custom_fields import service as custom_fields
from mailroom.db import serialise
from mailroom.ecommerce import attribution
from mailroom.models import (
    AUTOMATION_STATUSES,
    RUN_STATES,
    Automation,
    AutomationRun,
    Contact,
    Form,
    MailingList,
    Store,
    Tag,
    Template,
    WebhookEndpoint,
)
from mailroom.named import Named, known_ids
from mailroom.segments import rules as segment_rules
from mailroom.segments import service as segments

MAX_NAME = 100
AUTOMATIONS = Named(Automation, "automation", MAX_NAME, newest_first=True)
LIVE = ("active", "waiting")


async def get_automation(ctx: Context, automation_id: Any) -> Automation:
    return await AUTOMATIONS.get(ctx, automation_id)


async def list_automations(
    ctx: Context, page: PageParams, q: str | None, status: str | None
) -> tuple[list[Automation], int]:
    if status is not None and status not in AUTOMATION_STATUSES:
        raise ApiError(400, f"status must be one of: {', '.join(AUTOMATION_STATUSES)}")
    where = [Automation.status == status] if status else []
    return await AUTOMATIONS.page(ctx, page, q=q, where=where)


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ApiError(400, f"{name} must be true or false")
    return value


async def _checked(ctx: Context, body: dict[str, Any], automation: Automation | None) -> dict:
    """The trigger and steps of `body` (those it carries), checked against the workspace."""
    refs = shape.new_references()
    values: dict[str, Any] = {}
    if "trigger" in body or automation is None:
        values["trigger"] = shape.clean_trigger(body.get("trigger"), refs)
        values["trigger_type"] = values["trigger"]["type"]
    if "steps" in body or automation is None:
        values["steps"] = shape.clean_steps(body.get("steps"), refs)
    if "allow_reentry" in body:
        values["allow_reentry"] = _flag(body["allow_reentry"], "allow_reentry")
    if "time_zone" in body:
        values["time_zone"] = shape.clean_time_zone(body["time_zone"])
    await known_ids(ctx, Tag, refs.tags, "Tag not found")
    await known_ids(ctx, MailingList, refs.lists, "List not found")
    await known_ids(ctx, Template, refs.templates, "Template not found")
    await known_ids(ctx, WebhookEndpoint, refs.endpoints, "Webhook endpoint not found")
    await known_ids(ctx, Form, refs.forms, "Form not found")
    await known_ids(ctx, Store, refs.stores, "Store not found")
    if refs.fields:
        registry = await custom_fields.registry(ctx)
        for place, key in refs.fields:
            field = registry.get(key)
            if field is None:
                raise ApiError(400, f"{place}: custom field {key} is not registered")
            if place == "trigger.field" and field.type != "date":
                raise ApiError(400, f"{place}: custom field {key} is not a date field")
    if refs.rules:
        checked = {place: await _rules(ctx, place, raw) for place, raw in refs.rules}
        _store_rules(values.get("steps") or [], "steps", checked)
    return values


async def _rules(ctx: Context, place: str, raw: Any) -> dict[str, Any]:
    try:
        parsed = await segments.check_rules(ctx, raw)
    except ApiError as error:
        raise ApiError(400, f"{place}: {error.message}") from None
    return segment_rules.for_storage(parsed)


def _store_rules(items: list[dict[str, Any]], place: str, checked: dict[str, Any]) -> None:
    for index, step in enumerate(items):
        here = f"{place}[{index}]"
        if step["type"] == "condition":
            step["rules"] = checked[f"{here}.rules"]
            _store_rules(step["yes"], f"{here}.yes", checked)
            _store_rules(step["no"], f"{here}.no", checked)


async def create_automation(ctx: Context, body: dict[str, Any]) -> Automation:
    enrol.forget(ctx)
    name = await AUTOMATIONS.claim_name(ctx, body.get("name"))
    values = await _checked(ctx, body, None)
    return await AUTOMATIONS.create(
        ctx,
        name,
        status="draft",
        allow_reentry=values.pop("allow_reentry", False),
        time_zone=values.pop("time_zone", "UTC"),
        **values,
    )


async def update_automation(ctx: Context, automation_id: str, body: dict[str, Any]) -> Automation:
    """Editing an active automation is allowed: runs stay on their step (by id); a run whose
    step was removed exits when it next moves."""
    automation = await get_automation(ctx, automation_id)
    enrol.forget(ctx)
    if not body:
        raise ApiError(400, "No updatable fields provided")
    if "name" in body:
        await AUTOMATIONS.rename(ctx, automation, body["name"])
    values = await _checked(ctx, body, automation)
    if values.get("trigger", automation.trigger) != automation.trigger:
        automation.anniversaries_through = None  # a new date or time counts from today
    for name, value in values.items():
        setattr(automation, name, value)
    AUTOMATIONS.touch(automation)
    await AUTOMATIONS.flush(ctx)
    return automation


async def delete_automation(ctx: Context, automation_id: str) -> None:
    enrol.forget(ctx)
    await AUTOMATIONS.delete(ctx, await get_automation(ctx, automation_id))


async def activate(ctx: Context, automation_id: str) -> Automation:
    """Live from now on; counts against the plan's cap of live automations per workspace
    (checked and switched under one lock, so two activations cannot both take the last
    place)."""
    await serialise(ctx.session, f"automations:{ctx.workspace_id}")
    enrol.forget(ctx)
    automation = await get_automation(ctx, automation_id)
    if automation.status == "active":
        return automation
    if not automation.steps:
        raise ApiError(409, "An automation needs at least one step to be activated")
    cap = ctx.principal.plan.live_automations
    if cap is not None:
        live = await ctx.session.scalar(
            select(func.count()).where(
                Automation.workspace_id == ctx.workspace_id, Automation.status == "active"
            )
        )
        if int(live or 0) >= cap:
            raise ApiError(
                403,
                f"Your plan allows {cap} live automations across your workspaces. "
                "Pause one or upgrade.",
            )
    automation.status = "active"
    automation.anniversaries_through = None  # anniversaries count from today, not back
    AUTOMATIONS.touch(automation)
    return automation


async def pause(ctx: Context, automation_id: str) -> Automation:
    """No new enrolments and no step runs; runs keep their place and go on when activated."""
    enrol.forget(ctx)
    automation = await get_automation(ctx, automation_id)
    if automation.status == "active":
        automation.status = "paused"
        AUTOMATIONS.touch(automation)
    return automation


async def enrol_manually(ctx: Context, automation_id: str, body: dict[str, Any]) -> int:
    """`POST /automations/{id}/enrol`: contact ids or a segment, into an active `manual`
    automation; the runs started."""
    automation = await get_automation(ctx, automation_id)
    if automation.trigger_type != "manual":
        raise ApiError(409, "Only an automation with the manual trigger takes enrolments")
    if automation.status != "active":
        raise ApiError(409, "Activate the automation before enrolling contacts")
    ids, segment_id = body.get("contact_ids"), body.get("segment_id")
    if (ids is None) == (segment_id is None):
        raise ApiError(400, "Send contact_ids or segment_id")
    if segment_id is not None:
        return await enrol.start(ctx, [automation], await segments.matching_ids(ctx, segment_id))
    if not isinstance(ids, list) or not ids:
        raise ApiError(400, "contact_ids must be a non-empty array of contact ids")
    if len(ids) > 1000:
        raise ApiError(400, "contact_ids may have at most 1000 ids")
    if not all(isinstance(i, str) and i for i in ids):
        raise ApiError(400, "contact_ids must be an array of contact ids")
    return await enrol.start(ctx, [automation], list(ids))


# ---------------------------------------------------------------- runs and statistics


def shown_state() -> Any:
    """A run's state as clients see it: a live run whose contact is gone, archived or no
    longer subscribed has ended (`exited`), whether or not the runner has written it yet."""
    contact_status = (
        select(Contact.status).where(Contact.id == AutomationRun.contact_id).scalar_subquery()
    )
    return case(
        (
            AutomationRun.state.in_(LIVE)
            & func.coalesce(contact_status, "deleted").not_in(("subscribed",)),
            "exited",
        ),
        else_=AutomationRun.state,
    )


async def stats_of(ctx: Context, automation_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Runs by state, and the revenue of the orders attributed to each automation's emails."""
    found: dict[str, dict[str, Any]] = {
        a: {"enrolled": 0, "active": 0, "completed": 0, "exited": 0, "failed": 0}
        for a in automation_ids
    }
    if not automation_ids:
        return found
    state = shown_state()
    rows = await ctx.session.execute(
        select(AutomationRun.automation_id, state, func.count())
        .where(
            AutomationRun.workspace_id == ctx.workspace_id,
            AutomationRun.automation_id.in_(automation_ids),
        )
        .group_by(AutomationRun.automation_id, state)
    )
    for automation_id, run_state, count in rows:
        stats = found[automation_id]
        stats["enrolled"] += count
        stats["active" if run_state in LIVE else run_state] += count
    revenue = await attribution.revenue_of(ctx, "automation", automation_ids)
    for automation_id, stats in found.items():
        stats["revenue"] = revenue[automation_id]
    return found


async def runs(
    ctx: Context, automation_id: str, page: PageParams, state: str | None
) -> tuple[list[dict[str, Any]], int]:
    automation = await get_automation(ctx, automation_id)
    if state is not None and state not in RUN_STATES:
        raise ApiError(400, f"status must be one of: {', '.join(RUN_STATES)}")
    shown = shown_state().label("shown")
    where = [
        AutomationRun.workspace_id == ctx.workspace_id,
        AutomationRun.automation_id == automation.id,
    ]
    query = select(AutomationRun, shown).where(*where)
    count = select(func.count()).select_from(AutomationRun).where(*where)
    if state:
        query = query.where(shown_state() == state)
        count = count.where(shown_state() == state)
    total = int(await ctx.session.scalar(count) or 0)
    rows = await ctx.session.execute(
        query.order_by(AutomationRun.created_at.desc(), AutomationRun.id.desc())
        .offset(page.offset)
        .limit(page.limit)
    )
    return [run_dict(run, run_state) for run, run_state in rows.all()], total


def run_dict(run: AutomationRun, state: str) -> dict[str, Any]:
    live = state in LIVE
    return {
        "id": run.id,
        "contact_id": run.contact_id,
        "status": state,
        "step_id": run.step_id,
        "next_run_at": run.run_at if live else None,
        "history": list(run.history or []),
        "created_at": run.created_at,
        "ended_at": run.ended_at,
    }


def as_dict(automation: Automation, stats: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": automation.id,
        "name": automation.name,
        "status": automation.status,
        "trigger": dict(automation.trigger),
        "steps": [_shown_step(s) for s in automation.steps],
        "allow_reentry": automation.allow_reentry,
        "time_zone": automation.time_zone,
        "stats": stats,
        "created_at": automation.created_at,
        "updated_at": automation.updated_at,
    }


def _shown_step(step: dict[str, Any]) -> dict[str, Any]:
    shown = dict(step)
    if step["type"] == "condition":
        shown["rules"], _registered = segment_rules.stored(step["rules"])
        shown["yes"] = [_shown_step(s) for s in step.get("yes") or []]
        shown["no"] = [_shown_step(s) for s in step.get("no") or []]
    return shown
