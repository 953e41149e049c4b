"""Working automation runs: the worker host's `automations` loop.

Each tick claims due runs of active automations (`claim_due`: leased, so a killed worker's
runs come back within seconds) and moves them as far as they go now, in one transaction per
batch: a step's effect (a tag, a queued email, a list join) and the run's new place commit
together, so a crash repeats nothing and loses nothing. A wait is a due time on the row, so
it survives restarts. No network I/O happens here (emails are queued for the sending engine,
webhooks written to the outbox).

A batch moves together, step by step: its runs at the same step of the same automation form
a group, and each group's step is done for all of them at once (`perform.group`: a few
statements, not a few per run); the runs are written back in one statement. Should that
fail unexpectedly, the batch is worked again run by run, each run in a savepoint, so one bad
run fails alone (`internal error`) and the others go on.

A run ends `completed` after its last step, `exited` when its contact is gone, archived or no
longer subscribed (or at an `exit` step, when its step was removed by an edit, or when the
cart it is about was converted or deleted before its email: `commerce.email_data`), and
`failed` when a step cannot complete (a deleted template or tag, sending paused for more than
a day): `automation.failed` then fires, at most once per automation per day.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, bindparam, exists, select, update

from mailroom.automations import perform
from mailroom.automations import steps as shape
from mailroom.background import WorkerContext
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.db import claim_due
from mailroom.events import service as events
from mailroom.models import Automation, AutomationRun, Contact
from mailroom.sending.outcomes import Contexts

log = logging.getLogger("mailroom.automations")

BATCH = 200
LEASE_SECONDS = 120
STEPS_AT_ONCE = 50  # then the run goes back in line, so one long path cannot hog a tick
HOLD_RETRY = timedelta(minutes=5)  # sending paused or the hourly ceiling reached
HOLD_LIMIT = timedelta(days=1)  # held longer than this: the run fails
FAILED_EVERY = timedelta(days=1)
MAX_HISTORY = 200


@dataclass
class _Run:
    """A claimed run as its batch moves it; written back once, at the batch's end."""

    id: str
    workspace_id: str
    automation_id: str
    contact_id: str
    state: str
    step_id: str | None
    waiting: bool
    held_since: datetime | None
    history: list[dict[str, Any]]
    context: dict[str, Any] | None
    status: str
    run_at: datetime
    locked_until: datetime | None
    locked_by: str | None
    updated_at: datetime
    ended_at: datetime | None
    at: str | None = None  # the step it has reached in this batch
    written: bool = False  # ended, and written already (see _write_ended)

    def copy(self) -> _Run:
        return replace(self, history=list(self.history or []))


_COLUMNS = [f.name for f in fields(_Run) if f.name not in ("at", "written")]
_WRITTEN = [
    c for c in _COLUMNS if c not in ("workspace_id", "automation_id", "contact_id", "context")
]
_TABLE = cast(Table, AutomationRun.__table__)
_WRITE = (
    update(_TABLE)
    .where(_TABLE.c.id == bindparam("b_id"))
    .values({name: bindparam(f"b_{name}") for name in _WRITTEN if name != "id"})
)


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
    try:
        async with db.transaction() as session:
            await _work(session, settings, run_ids, together=True)
    except Exception:
        log.exception("automation batch of %d runs failed: working them one by one", len(run_ids))
        async with db.transaction() as session:
            await _work(session, settings, run_ids, together=False)


async def _work(session: Any, settings: Any, run_ids: list[str], *, together: bool) -> None:
    found = await session.execute(
        select(*(_TABLE.c[name] for name in _COLUMNS))
        .where(_TABLE.c.id.in_(run_ids))
        .order_by(_TABLE.c.run_at)
    )
    runs = [_Run(**row._mapping) for row in found]
    automations = {
        a.id: a
        for a in (
            await session.scalars(
                select(Automation).where(Automation.id.in_({r.automation_id for r in runs}))
            )
        ).all()
    }
    # A run whose automation was deleted since the claim went with it.
    runs = [run for run in runs if run.automation_id in automations]
    if not runs:
        return
    # The batch's contacts in one read (a run checks its contact before it moves).
    people = {
        c.id: c
        for c in (
            await session.scalars(
                select(Contact).where(Contact.id.in_({r.contact_id for r in runs}))
            )
        ).all()
    }
    contexts = Contexts(session, settings)
    places = {a.id: shape.walk(a.steps)[1] for a in automations.values()}
    if together:
        await _move(contexts, automations, places, runs, people, alone=False)
    else:
        for index, run in enumerate(runs):
            before = run.copy()
            try:
                async with session.begin_nested():
                    await _move(contexts, automations, places, [run], people, alone=True)
            except Exception:
                log.exception("automation run %s failed on an unexpected error", run.id)
                runs[index] = before
                ctx = await contexts(before.workspace_id)
                await _fail(ctx, automations[before.automation_id], before, None, "internal error")
    await _write(session, [run for run in runs if not run.written])


async def _write(session: Any, runs: list[_Run]) -> None:
    # Core, not the ORM's bulk update: a run deleted meanwhile (its automation was) is no
    # error, it is simply not written.
    if runs:
        await session.execute(
            _WRITE, [{f"b_{name}": getattr(run, name) for name in _WRITTEN} for run in runs]
        )


async def _write_ended(session: Any, runs: list[_Run]) -> None:
    """Write the runs that have just ended, before the batch goes on: a later step of the
    batch may enrol their contact again (a tag, a list join), and enrolment reads whether
    the contact is still in the automation from the table."""
    ended = [run for run in runs if run.status == "done" and not run.written]
    await _write(session, ended)
    for run in ended:
        run.written = True


async def _move(
    contexts: Contexts,
    automations: dict[str, Automation],
    places: dict[str, dict[str, shape.Place]],
    runs: list[_Run],
    people: dict[str, Contact],
    *,
    alone: bool,
) -> None:
    """Move `runs` as far as they go now (at most STEPS_AT_ONCE steps), group by group.
    `alone`: one run, each of its steps in a savepoint (`perform.one`), as the grouped
    pass does its rarer steps, so an unexpected error leaves the same behind either way:
    the steps before it done, the run failed at that step."""
    now = utcnow()
    moving: list[_Run] = []
    for run in runs:
        found = people.get(run.contact_id)
        contact = found if found is not None and found.workspace_id == run.workspace_id else None
        if contact is None or contact.status != "subscribed":
            why = "contact deleted" if contact is None else f"contact {contact.status}"
            _end(run, "exited", run.step_id, why, now)
            continue
        run.at = run.step_id
        if run.waiting:
            place = places[run.automation_id].get(run.at or "")
            if place is None:
                _end(run, "exited", run.at, "step removed", now)
                continue
            _note(run, run.at, "waited", now)
            run.at, run.waiting = place.after, False
        moving.append(run)
    await _write_ended(contexts.session, runs)
    for _ in range(STEPS_AT_ONCE):
        groups: dict[tuple[str, str | None], list[_Run]] = {}
        for run in moving:
            groups.setdefault((run.automation_id, run.at), []).append(run)
        moving = []
        for (automation_id, at), members in groups.items():
            automation = automations[automation_id]
            place = places[automation_id].get(at or "")
            if place is None:
                for run in members:
                    if at is None:
                        _end(run, "completed", None, "completed", now)
                    else:
                        _end(run, "exited", at, "step removed", now)
                await _write_ended(contexts.session, members)
                continue
            ctx = await contexts(automation.workspace_id)
            if alone:
                [run] = members
                one = perform.one(ctx, automation, place, run.context, people[run.contact_id], now)
                outcomes = [await one]
            else:
                outcomes = await perform.group(
                    ctx,
                    automation,
                    place,
                    [run.context for run in members],
                    [people[run.contact_id] for run in members],
                    now,
                )
            for run, outcome in zip(members, outcomes, strict=True):
                if await _went_on(ctx, automation, run, place, outcome, now):
                    moving.append(run)
            await _write_ended(contexts.session, members)
        if not moving:
            return
    for run in moving:  # back in line: one long path does not hog a tick
        _later(run, run.at, now, "active", now)


async def _went_on(
    ctx: Context,
    automation: Automation,
    run: _Run,
    place: shape.Place,
    outcome: perform.Outcome,
    now: datetime,
) -> bool:
    """Apply a step's outcome to its run: whether the run goes on to another step now."""
    at = run.at
    if outcome.end == "failed":
        await _fail(ctx, automation, run, place.step, outcome.note)
        return False
    if outcome.end:
        _end(run, outcome.end, at, outcome.note, now)
        return False
    if outcome.hold:
        run.held_since = run.held_since or now
        if now - run.held_since > HOLD_LIMIT:
            await _fail(ctx, automation, run, place.step, f"{outcome.note} for over a day")
        else:
            _later(run, at, now + HOLD_RETRY, "active", now)
        return False
    run.held_since = None
    _note(run, at, outcome.note, now)
    if outcome.until is not None:
        run.waiting = True
        _later(run, at, outcome.until, "waiting", now)
        return False
    run.at = outcome.goto if outcome.jump else place.after
    return True


def _note(run: _Run, step_id: str | None, outcome: str, now: datetime) -> None:
    history = list(run.history or [])
    history.append(
        {"step_id": step_id, "at": now.isoformat().replace("+00:00", "Z"), "outcome": outcome}
    )
    run.history = history[-MAX_HISTORY:]


def _later(run: _Run, step_id: str | None, when: datetime, state: str, now: datetime) -> None:
    run.step_id, run.run_at, run.state = step_id, when, state
    run.locked_until, run.locked_by, run.updated_at = None, None, now


def _end(run: _Run, state: str, step_id: str | None, note: str, now: datetime) -> None:
    _note(run, step_id, note, now)
    run.step_id, run.state, run.status, run.ended_at = step_id, state, "done", now
    run.waiting, run.locked_until, run.locked_by, run.updated_at = False, None, None, now


async def _fail(
    ctx: Context,
    automation: Automation,
    run: _Run,
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
