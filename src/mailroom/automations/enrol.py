"""Enrolment: starting runs, in the transaction of the change that triggers them.

`enrol(ctx, trigger, contact_ids, **match)` starts one run in every active automation of the
workspace with that trigger (and matching tag, list or form) for each contact given, with one
INSERT ... SELECT per automation, so an import of 50,000 contacts costs a statement, not
50,000. Only subscribed contacts enter. Exactly once: a contact already in the automation
is left alone (a unique index on the live run settles a race), and one that has been in it
before enters again only when the automation allows re-entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import exists, literal, literal_column, select

from mailroom.automations.steps import walk
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.dbtypes import JSONValue, UTCDateTime
from mailroom.db import chunks, insert_ignoring_conflicts, sql_uuid
from mailroom.models import Automation, AutomationRun, Contact

_MATCH = {
    "tag_added": "tag_id",
    "list_joined": "list_id",
    "form_submitted": "form_id",
    "order_placed": "store_id",
    "cart_abandoned": "store_id",
}


_CACHE_KEY = "active_automations"


def known_none(ctx: Context) -> None:
    """The caller read, in this transaction, that the workspace has no active automation: no
    trigger of this unit of work asks again (forms.loading)."""
    ctx.cache[_CACHE_KEY] = []


async def active(ctx: Context, trigger: str, **match: str) -> list[Automation]:
    """The workspace's active automations with this trigger (and tag, list, form or store).
    All of them are read once per unit of work (a form submission asks for three triggers,
    an import for each tag and list; a workspace has a handful live)."""
    found: list[Automation] | None = ctx.cache.get(_CACHE_KEY)
    if found is None:
        found = ctx.cache[_CACHE_KEY] = list(
            (
                await ctx.session.scalars(
                    select(Automation).where(
                        Automation.workspace_id == ctx.workspace_id,
                        Automation.status == "active",
                    )
                )
            ).all()
        )
    key = _MATCH.get(trigger)
    return [
        a
        for a in found
        if a.trigger_type == trigger
        and a.steps
        and (key is None or a.trigger.get(key) == match.get(key))
    ]


def forget(ctx: Context) -> None:
    """Automations changed in this unit of work: read them again next time."""
    ctx.cache.pop(_CACHE_KEY, None)


async def enrol(ctx: Context, trigger: str, contact_ids: Sequence[str] | Any, **match: str) -> int:
    """Runs started. `contact_ids`: ids, or a SELECT of contact ids."""
    automations = await active(ctx, trigger, **match)
    if not automations:
        return 0
    return await start(ctx, automations, contact_ids)


async def start(
    ctx: Context, automations: list[Automation], contact_ids: Any, *, again: bool = False
) -> int:
    """Runs started. `again`: a contact who finished may enter again whatever the automation
    says (a yearly anniversary is a new occasion each year)."""
    if isinstance(contact_ids, list | tuple):
        groups = [Contact.id.in_(part) for part in chunks(ctx.session, sorted(set(contact_ids)))]
    else:
        groups = [Contact.id.in_(contact_ids)]
    now = utcnow()
    started = 0
    for automation in automations:
        first, _places = walk(automation.steps)
        before = AutomationRun.automation_id == automation.id
        if not (automation.allow_reentry or again):
            been = exists().where(before, AutomationRun.contact_id == Contact.id)
        else:
            been = exists().where(
                before, AutomationRun.contact_id == Contact.id, AutomationRun.status == "pending"
            )
        for among in groups:
            rows: Any = select(
                literal_column(sql_uuid(ctx.dialect)),
                literal(ctx.workspace_id),
                literal(automation.id),
                Contact.id,
                literal("active"),
                literal(first),
                literal(False),
                literal([], JSONValue),
                literal("pending"),
                literal(now, UTCDateTime),
                literal(now, UTCDateTime),
                literal(now, UTCDateTime),
            ).where(
                Contact.workspace_id == ctx.workspace_id,
                Contact.status == "subscribed",
                among,
                ~been,
            )
            columns = [
                "id",
                "workspace_id",
                "automation_id",
                "contact_id",
                "state",
                "step_id",
                "waiting",
                "history",
                "status",
                "run_at",
                "created_at",
                "updated_at",
            ]
            # ON CONFLICT DO NOTHING: the live-run index settles two enrolments racing.
            statement = insert_ignoring_conflicts(ctx.session, AutomationRun).from_select(
                columns, rows
            )
            done = await ctx.session.execute(statement)
            started += max(int(getattr(done, "rowcount", 0) or 0), 0)
    return started
