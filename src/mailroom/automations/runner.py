"""Working automation runs: the worker host's `automations` loop.

Each tick claims due runs of active automations (`claim_due`: leased, so a killed worker's
runs come back within seconds) and moves each as far as it goes now, in one transaction per
batch with a savepoint per run: a step's effect (a tag, a queued email, a list join) and the
run's new place commit together, so a crash repeats nothing and loses nothing. A wait is a
due time on the row, so it survives restarts. No network I/O happens here (emails are queued
for the sending engine, webhooks written to the outbox).

A run ends `completed` after its last step, `exited` when its contact is gone, archived or no
longer subscribed (or at an `exit` step, when its step was removed by an edit, or when the
cart it is about was converted or deleted before its email: `commerce.email_data`), and
`failed` when a step cannot complete (a deleted template or tag, sending paused for more than
a day): `automation.failed` then fires, at most once per automation per day.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import exists, select

from mailroom.automations import commerce
from mailroom.automations import steps as shape
from mailroom.background import WorkerContext
from mailroom.contacts import service as contacts
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.db import claim_due
from mailroom.events import service as events
from mailroom.lists import service as lists
from mailroom.models import Automation, AutomationRun, Contact, Tag, Template
from mailroom.segments import service as segments
from mailroom.sending import service as sending
from mailroom.sending import transactional
from mailroom.sending.outcomes import Contexts
from mailroom.tags import service as tags

log = logging.getLogger("mailroom.automations")

BATCH = 200
LEASE_SECONDS = 120
STEPS_AT_ONCE = 50  # then the run goes back in line, so one long path cannot hog a tick
HOLD_RETRY = timedelta(minutes=5)  # sending paused or the hourly ceiling reached
HOLD_LIMIT = timedelta(days=1)  # held longer than this: the run fails
FAILED_EVERY = timedelta(days=1)
MAX_HISTORY = 200


class _Outcome:
    """What a step did: go on (to `goto` when `jump`, else the next step), wait until
    `until`, hold (try again later), or `end` the run in that state."""

    def __init__(
        self,
        note: str,
        *,
        goto: str | None = None,
        jump: bool = False,
        until: datetime | None = None,
        hold: bool = False,
        end: str | None = None,
    ) -> None:
        self.note, self.goto, self.jump = note, goto, jump
        self.until, self.hold, self.end = until, hold, end


async def tick(worker: WorkerContext) -> int:
    async with worker.db.transaction() as session:
        claimed = await claim_due(
            session,
            AutomationRun,
            worker_id=worker.worker_id,
            limit=BATCH,
            lease_seconds=LEASE_SECONDS,
            where=[
                exists().where(
                    Automation.id == AutomationRun.automation_id, Automation.status == "active"
                )
            ],
        )
        ids = [run.id for run in claimed]
    if ids:
        await work(worker.db, worker.settings, ids)
    return len(ids)


async def work(db: Any, settings: Any, run_ids: list[str]) -> None:
    async with db.transaction() as session:
        runs = list(
            (
                await session.scalars(
                    select(AutomationRun)
                    .where(AutomationRun.id.in_(run_ids))
                    .order_by(AutomationRun.run_at)
                )
            ).all()
        )
        automations = {
            a.id: a
            for a in (
                await session.scalars(
                    select(Automation).where(Automation.id.in_({r.automation_id for r in runs}))
                )
            ).all()
        }
        contexts = Contexts(session, settings)
        # The batch's contacts in one read (a run checks its contact before every move).
        people = {
            c.id: c
            for c in (
                await session.scalars(
                    select(Contact).where(Contact.id.in_({r.contact_id for r in runs}))
                )
            ).all()
        }
        for run in runs:
            ctx = await contexts(run.workspace_id)
            try:
                async with session.begin_nested():
                    await advance(ctx, automations[run.automation_id], run, people)
            except Exception:
                log.exception("automation run %s failed on an unexpected error", run.id)
                await _fail(ctx, automations[run.automation_id], run, None, "internal error")


async def advance(
    ctx: Context,
    automation: Automation,
    run: AutomationRun,
    people: dict[str, Contact] | None = None,
) -> None:
    now = utcnow()
    if people is not None:
        found = people.get(run.contact_id)
        contact = found if found is not None and found.workspace_id == ctx.workspace_id else None
    else:
        contact = await ctx.session.scalar(
            select(Contact).where(
                Contact.id == run.contact_id, Contact.workspace_id == ctx.workspace_id
            )
        )
    if contact is None or contact.status != "subscribed":
        why = "contact deleted" if contact is None else f"contact {contact.status}"
        _end(run, "exited", run.step_id, why, now)
        return
    _first, places = shape.walk(automation.steps)
    current = run.step_id
    if run.waiting:
        place = places.get(current or "")
        if place is None:
            _end(run, "exited", current, "step removed", now)
            return
        _note(run, current, "waited", now)
        current, run.waiting = place.after, False
    for _ in range(STEPS_AT_ONCE):
        if current is None:
            _end(run, "completed", None, "completed", now)
            return
        place = places.get(current)
        if place is None:
            _end(run, "exited", current, "step removed", now)
            return
        outcome = await _perform(ctx, automation, run, contact, place, now)
        if outcome.end == "failed":
            await _fail(ctx, automation, run, place.step, outcome.note)
            return
        if outcome.end:
            _end(run, outcome.end, current, outcome.note, now)
            return
        if outcome.hold:
            run.held_since = run.held_since or now
            if now - run.held_since > HOLD_LIMIT:
                await _fail(ctx, automation, run, place.step, f"{outcome.note} for over a day")
                return
            _later(run, current, now + HOLD_RETRY, "active", now)
            return
        run.held_since = None
        if outcome.until is not None:
            _note(run, current, outcome.note, now)
            run.waiting = True
            _later(run, current, outcome.until, "waiting", now)
            return
        _note(run, current, outcome.note, now)
        current = outcome.goto if outcome.jump else place.after
    _later(run, current, now, "active", now)


async def _perform(
    ctx: Context,
    automation: Automation,
    run: AutomationRun,
    contact: Contact,
    place: shape.Place,
    now: datetime,
) -> _Outcome:
    step = place.step
    kind = step["type"]
    if kind == "wait":
        return _Outcome("waiting", until=wait_until(step, automation.time_zone, now))
    if kind == "send_email":
        return await _send_email(ctx, contact, step, automation.id, run.context)
    if kind in ("add_tag", "remove_tag"):
        tag = await _row(ctx, Tag, step["tag_id"])
        if tag is None:
            return _Outcome("tag not found", end="failed")
        try:
            if kind == "add_tag":
                await tags.attach(ctx, contact.id, tag.id, loaded=(contact, tag))
            else:
                await tags.detach(ctx, contact.id, tag.id)
        except ApiError as error:
            if error.status not in (404, 409):  # already tagged / not tagged: nothing to do
                raise
        return _Outcome("done")
    if kind in ("add_to_list", "remove_from_list"):
        try:
            if kind == "add_to_list":
                await lists.add_members(ctx, step["list_id"], [contact.id])
            else:
                await lists.remove_member(ctx, step["list_id"], contact.id)
        except ApiError as error:
            if error.message == "List not found":
                return _Outcome("list not found", end="failed")
            if error.status != 404:
                raise
        return _Outcome("done")
    if kind == "update_field":
        field: str = step["field"]
        if field.startswith("custom_fields."):
            body: dict[str, Any] = {
                "custom_fields": {field.removeprefix("custom_fields."): step["value"]}
            }
        else:
            body = {field: step["value"]}
        try:
            await contacts.update_contact(ctx, contact.id, body)
        except ApiError as error:
            return _Outcome(error.message, end="failed")
        return _Outcome("done")
    if kind == "condition":
        matched = await matches(ctx, step["rules"], contact.id)
        goto = shape.branch_start(step, matched, place.after)
        return _Outcome("yes" if matched else "no", goto=goto, jump=True)
    if kind == "call_webhook":
        data = {
            "automation": {"id": automation.id, "name": automation.name},
            "step": {"id": step["id"], "label": step["label"]},
            "contact": events.contact_snapshot(contact, await events.tag_names(ctx, contact.id)),
        }
        await events.emit(
            ctx, "automation.step_reached", data, endpoint_ids=step.get("endpoint_ids")
        )
        return _Outcome("done")
    return _Outcome("exit step", end="exited")  # exit


async def _row(ctx: Context, model: Any, row_id: str) -> Any:
    """A tag or template of the workspace, read once per batch (None: it is gone)."""
    memo = ctx.cache.setdefault(f"automation_{model.__tablename__}", {})
    if row_id not in memo:
        memo[row_id] = await ctx.session.scalar(
            select(model).where(model.id == row_id, model.workspace_id == ctx.workspace_id)
        )
    return memo[row_id]


async def _send_email(
    ctx: Context,
    contact: Contact,
    step: dict[str, Any],
    automation_id: str,
    context: dict[str, Any] | None,
) -> _Outcome:
    """Queue the step's email; a run about an order or cart (`context`) passes it, as it is
    now, as the template's `vars.order` / `vars.cart`, or ends when it is gone (converted)."""
    variables, gone = await commerce.email_data(ctx, context)
    if gone is not None:
        return _Outcome(gone, end="exited")
    template = await _row(ctx, Template, step["template_id"])
    if template is None:
        return _Outcome("template not found", end="failed")
    identity = await sending.settings_of(ctx)
    if identity.paused:
        return _Outcome("sending paused", hold=True)
    body: dict[str, Any] = {"contact_id": contact.id, "template_id": template.id}
    if variables:
        body["variables"] = variables
    for name in ("from_email", "from_name"):
        if step.get(name):
            body[name] = step[name]
    try:
        row = await transactional.queue(
            ctx, body, kind="automation", loaded=(contact, template), automation_id=automation_id
        )
    except ApiError as error:
        if error.status == 429:
            return _Outcome("hourly sending limit reached", hold=True)
        if error.status == 422:  # suppressed meanwhile: this contact cannot be mailed
            return _Outcome(error.message, end="exited")
        return _Outcome(error.message, end="failed")
    return _Outcome(f"email queued ({row.id})")


async def matches(ctx: Context, stored_rules: dict[str, Any], contact_id: str) -> bool:
    """Whether the contact meets a condition step's rule now (read as a saved segment's:
    a condition on a deleted or retyped custom field matches nobody)."""
    where = await segments.saved_rule_condition(ctx, stored_rules)
    found = await ctx.session.scalar(select(Contact.id).where(Contact.id == contact_id, where))
    return found is not None


def wait_until(step: dict[str, Any], time_zone: str, now: datetime) -> datetime:
    if "seconds" in step:
        return now + timedelta(seconds=int(step["seconds"]))
    until = step["until"]
    zone = ZoneInfo(time_zone)
    local = now.astimezone(zone)
    hour, minute = (int(part) for part in until["time"].split(":"))
    days = (shape.WEEKDAYS.index(until["weekday"]) - local.weekday()) % 7
    moment = (local + timedelta(days=days)).replace(
        hour=hour, minute=minute, second=0, microsecond=0
    )
    if moment <= local:
        moment += timedelta(days=7)
    return moment.astimezone(now.tzinfo)


def _note(run: AutomationRun, step_id: str | None, outcome: str, now: datetime) -> None:
    history = list(run.history or [])
    history.append(
        {"step_id": step_id, "at": now.isoformat().replace("+00:00", "Z"), "outcome": outcome}
    )
    run.history = history[-MAX_HISTORY:]


def _later(
    run: AutomationRun, step_id: str | None, when: datetime, state: str, now: datetime
) -> None:
    run.step_id, run.run_at, run.state = step_id, when, state
    run.locked_until, run.locked_by, run.updated_at = None, None, now


def _end(run: AutomationRun, state: str, step_id: str | None, note: str, now: datetime) -> None:
    _note(run, step_id, note, now)
    run.step_id, run.state, run.status, run.ended_at = step_id, state, "done", now
    run.waiting, run.locked_until, run.locked_by, run.updated_at = False, None, None, now


async def _fail(
    ctx: Context,
    automation: Automation,
    run: AutomationRun,
    step: dict[str, Any] | None,
    reason: str,
) -> None:
    now = utcnow()
    _end(run, "failed", step["id"] if step else run.step_id, f"failed: {reason}", now)
    if automation.failed_notified_at and now - automation.failed_notified_at < FAILED_EVERY:
        return
    automation.failed_notified_at = now
    await events.emit(
        ctx,
        "automation.failed",
        {
            "automation": {"id": automation.id, "name": automation.name},
            "step": {"id": step["id"], "label": step["label"]} if step else None,
            "contact_id": run.contact_id,
            "reason": reason,
        },
    )
