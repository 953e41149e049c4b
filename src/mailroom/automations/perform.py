"""What each step does, for a batch's runs at one step together (`group`) or for one run
(`one`: the rarer steps, and a step of a run about an order or cart).

A group is the runs of one automation at one step. Its common steps are written for all of
them at once: a wait is a due time, a condition one SELECT of who matches, an add_tag one
INSERT (`tags.attach_many`), a send_email one INSERT of the queued messages with one
suppression read and one reservation of the month's allowance (`transactional.queue_many`).
The rest are done run by run, each in a savepoint, as a single run would be.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import inspect, select
from sqlalchemy.exc import InvalidRequestError

from mailroom.automations import commerce
from mailroom.automations import steps as shape
from mailroom.contacts import service as contacts
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.events import service as events
from mailroom.lists import service as lists
from mailroom.models import Automation, Contact, Tag, Template
from mailroom.segments import service as segments
from mailroom.sending import service as sending
from mailroom.sending import transactional
from mailroom.tags import service as tags

log = logging.getLogger("mailroom.automations")


class Outcome:
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


DONE = Outcome("done")


async def group(
    ctx: Context,
    automation: Automation,
    place: shape.Place,
    contexts: list[dict[str, Any] | None],
    people: list[Contact],
    now: datetime,
) -> list[Outcome]:
    """The step at `place` for runs of `automation` (their `contexts` and contacts, in the
    same order): one outcome each. Raises only on an unexpected error (the caller then works
    the batch again run by run)."""
    step = place.step
    kind = step["type"]
    count = len(people)
    if kind == "wait":
        return [Outcome("waiting", until=wait_until(step, automation.time_zone, now))] * count
    if kind == "exit":
        return [Outcome("exit step", end="exited")] * count
    if kind == "condition":
        matched = await matching(ctx, step["rules"], [contact.id for contact in people])
        yes = Outcome("yes", goto=shape.branch_start(step, True, place.after), jump=True)
        no = Outcome("no", goto=shape.branch_start(step, False, place.after), jump=True)
        return [yes if contact.id in matched else no for contact in people]
    if kind == "add_tag":
        tag = await _row(ctx, Tag, step["tag_id"])
        if tag is None:
            return [Outcome("tag not found", end="failed")] * count
        await tags.attach_many(ctx, tag, people)
        return [DONE] * count
    outcomes: list[Outcome | None] = [None] * count
    if kind == "send_email":
        plain = [i for i in range(count) if not contexts[i]]
        if plain:
            sent = await _send_emails(ctx, step, automation.id, [people[i] for i in plain])
            for i, outcome in zip(plain, sent or [], strict=False):
                outcomes[i] = outcome
    return [
        outcome
        if outcome is not None
        else await one(ctx, automation, place, contexts[i], people[i], now)
        for i, outcome in enumerate(outcomes)
    ]


async def one(
    ctx: Context,
    automation: Automation,
    place: shape.Place,
    context: dict[str, Any] | None,
    contact: Contact,
    now: datetime,
) -> Outcome:
    """The step for one run, in a savepoint: an unexpected error fails that run alone."""
    try:
        async with ctx.session.begin_nested():
            return await _perform(ctx, automation, place, context, contact, now)
    except Exception:
        log.exception(
            "automation %s: step %s failed on an unexpected error", automation.id, place.step["id"]
        )
        await _reload(ctx, contact)
        return Outcome("internal error", end="failed")


async def _reload(ctx: Context, contact: Contact) -> None:
    """The savepoint's rollback expired what the step had changed (the contact, by an
    update_field): read it again now, so the batch's other runs of this contact (in other
    automations) can still read it without I/O."""
    if not inspect(contact).expired_attributes:
        return
    with contextlib.suppress(InvalidRequestError):  # its row is gone: a later read says so
        await ctx.session.refresh(contact)


async def _perform(
    ctx: Context,
    automation: Automation,
    place: shape.Place,
    context: dict[str, Any] | None,
    contact: Contact,
    now: datetime,
) -> Outcome:
    step = place.step
    kind = step["type"]
    if kind in ("wait", "exit", "condition", "add_tag"):
        return (await group(ctx, automation, place, [context], [contact], now))[0]
    if kind == "send_email":
        return await _send_email(ctx, contact, step, automation.id, context)
    if kind == "remove_tag":
        tag = await _row(ctx, Tag, step["tag_id"])
        if tag is None:
            return Outcome("tag not found", end="failed")
        try:
            await tags.detach(ctx, contact.id, tag.id)
        except ApiError as error:
            if error.status != 404:  # not tagged: nothing to do
                raise
        return DONE
    if kind in ("add_to_list", "remove_from_list"):
        try:
            if kind == "add_to_list":
                await lists.add_members(ctx, step["list_id"], [contact.id])
            else:
                await lists.remove_member(ctx, step["list_id"], contact.id)
        except ApiError as error:
            if error.message == "List not found":
                return Outcome("list not found", end="failed")
            if error.status != 404:
                raise
        return DONE
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
            return Outcome(error.message, end="failed")
        return DONE
    # call_webhook
    data = {
        "automation": {"id": automation.id, "name": automation.name},
        "step": {"id": step["id"], "label": step["label"]},
        "contact": events.contact_snapshot(contact, await events.tag_names(ctx, contact.id)),
    }
    await events.emit(ctx, "automation.step_reached", data, endpoint_ids=step.get("endpoint_ids"))
    return DONE


async def _row(ctx: Context, model: Any, row_id: str) -> Any:
    """A tag or template of the workspace, read once per batch (None: it is gone)."""
    memo = ctx.cache.setdefault(f"automation_{model.__tablename__}", {})
    if row_id not in memo:
        memo[row_id] = await ctx.session.scalar(
            select(model).where(model.id == row_id, model.workspace_id == ctx.workspace_id)
        )
    return memo[row_id]


def _sender(step: dict[str, Any]) -> dict[str, Any]:
    return {name: step[name] for name in ("from_email", "from_name") if step.get(name)}


def _refused(error: ApiError) -> Outcome:
    if error.status == 429:
        return Outcome("hourly sending limit reached", hold=True)
    if error.status == 422:  # suppressed meanwhile: this contact cannot be mailed
        return Outcome(error.message, end="exited")
    return Outcome(error.message, end="failed")


async def _send_emails(
    ctx: Context, step: dict[str, Any], automation_id: str, people: list[Contact]
) -> list[Outcome] | None:
    """The step's email queued to each of `people` at once; None when the month's allowance
    cannot take them all (then each is queued alone, as far as it goes)."""
    template = await _row(ctx, Template, step["template_id"])
    if template is None:
        return [Outcome("template not found", end="failed")] * len(people)
    if (await sending.settings_of(ctx)).paused:
        return [Outcome("sending paused", hold=True)] * len(people)
    try:
        queued = await transactional.queue_many(
            ctx, template, people, _sender(step), automation_id=automation_id
        )
    except ApiError as error:
        return [_refused(error)] * len(people)
    if queued is None:
        return None
    return [
        _refused(row) if isinstance(row, ApiError) else Outcome(f"email queued ({row})")
        for row in queued
    ]


async def _send_email(
    ctx: Context,
    contact: Contact,
    step: dict[str, Any],
    automation_id: str,
    context: dict[str, Any] | None,
) -> Outcome:
    """Queue the step's email; a run about an order or cart (`context`) passes it, as it is
    now, as the template's `vars.order` / `vars.cart`, or ends when it is gone (converted)."""
    variables, gone = await commerce.email_data(ctx, context)
    if gone is not None:
        return Outcome(gone, end="exited")
    template = await _row(ctx, Template, step["template_id"])
    if template is None:
        return Outcome("template not found", end="failed")
    identity = await sending.settings_of(ctx)
    if identity.paused:
        return Outcome("sending paused", hold=True)
    body: dict[str, Any] = {"contact_id": contact.id, "template_id": template.id}
    if variables:
        body["variables"] = variables
    body.update(_sender(step))
    try:
        row = await transactional.queue(
            ctx, body, kind="automation", loaded=(contact, template), automation_id=automation_id
        )
    except ApiError as error:
        return _refused(error)
    return Outcome(f"email queued ({row.id})")


async def matching(ctx: Context, stored_rules: dict[str, Any], contact_ids: list[str]) -> set[str]:
    """Which of these contacts meet a condition step's rule now (read as a saved segment's:
    a condition on a deleted or retyped custom field matches nobody)."""
    where = await segments.saved_rule_condition(ctx, stored_rules)
    found = await ctx.session.scalars(select(Contact.id).where(Contact.id.in_(contact_ids), where))
    return set(found.all())


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
