"""Set-based changes to contacts and their tag and list memberships, each writing the catalog's
event for what it changed in the same statement sequence (so a path cannot change contacts and
forget to tell the endpoints).

The contacts a statement changed are listed (for their events) only when an enabled endpoint
takes the event (`events.bulk.wanted`); otherwise each change is one plain statement.
"""

from __future__ import annotations

from typing import Any

from mailroom.automations import enrol as automations
from mailroom.contacts.selection import (
    Selection,
    change_selected,
    execute,
    refresh_statistics,
    release,
)
from mailroom.core.context import Context
from mailroom.core.ids import new_id
from mailroom.events import bulk as bulk_events
from mailroom.events import service as events
from mailroom.webhooks import fanout

# kind -> (membership table, its group column, the event a removal writes)
KINDS = {
    "list": ("list_members", "list_id", "contact.list_left"),
    "tag": ("contact_tags", "tag_id", "contact.tag_removed"),
}


async def change_and_emit(
    ctx: Context,
    selection: Selection,
    extra: list[Selection],
    statement: str,
    *,
    event: str,
    returning: str,
    predicate: str,
    payload: dict[str, Any] | None = None,
    list_id: str | None = None,
    tag_id: str | None = None,
    emit: bool = True,
    enrols: str | None = None,
    **params: Any,
) -> int:
    """Run one statement over the selection (see `change_selected`) and write `event` for
    each contact it changed, listing them only when an endpoint takes the event or an active
    automation with the trigger `enrols` (same tag or list) takes the contacts it changed.
    Selections made here are appended to `extra` for the caller to release. Returns rows
    changed."""
    wanted = emit and await bulk_events.wanted(ctx, event, list_id=list_id, tag_id=tag_id)
    match = {k: v for k, v in (("list_id", list_id), ("tag_id", tag_id)) if v}
    enrolling = await automations.active(ctx, enrols, **match) if emit and enrols else []
    changed = await change_selected(
        ctx,
        selection,
        statement,
        returning=returning,
        predicate=predicate,
        track=wanted or bool(enrolling),
        **params,
    )
    if not isinstance(changed, Selection):
        return changed
    extra.append(changed)
    if wanted:
        await bulk_events.emit_for_selection(
            ctx, event, changed.run_id, extra=payload, list_id=list_id, tag_id=tag_id
        )
    if enrolling:
        await automations.start(ctx, enrolling, changed.subquery())
    return changed.size


def group_payload(kind: str, group: Any) -> dict[str, Any]:
    """What a membership event carries beside the contact: `{"list": {id, name}}`."""
    return {kind: {"id": group.id, "name": group.name}}


async def list_event(
    ctx: Context,
    event: str,
    contact: Any,
    list_id: str,
    list_name: str,
    *,
    form_id: str | None = None,
) -> None:
    """`contact.list_joined` / `contact.list_left` for one contact, with the list dimension
    (and the form's, for a join through a signup form); a confirmed join also enrols the
    contact in the list's `list_joined` automations."""
    await events.emit_contact_event(
        ctx,
        event,
        contact,
        extra={"list": {"id": list_id, "name": list_name}},
        list_id=list_id,
        form_id=form_id,
    )
    if event == "contact.list_joined":
        await automations.enrol(ctx, "list_joined", [contact.id], list_id=list_id)


async def drop_group(ctx: Context, kind: str, group: Any) -> int:
    """A list or tag is being deleted: every membership in it goes, each with its
    `contact.list_left` / `contact.tag_removed` (the group's dimension, so a scoped endpoint
    learns its members left). Returns how many contacts were members."""
    table, column, event = KINDS[kind]
    dims = {column: group.id}
    remove = f"DELETE FROM {table} WHERE {column} = :group AND workspace_id = :ws"
    if not await bulk_events.wanted(ctx, event, **dims):
        return await execute(ctx, remove, group=group.id)
    run_id = new_id()
    size = await execute(
        ctx,
        f"INSERT INTO bulk_selection (run_id, contact_id) SELECT :run, contact_id FROM {table} "
        f"WHERE {column} = :group AND workspace_id = :ws",
        run=run_id,
        group=group.id,
    )
    await refresh_statistics(ctx, size)
    members = Selection(run_id, size, size)
    await execute(ctx, remove, group=group.id)
    # After the removal: the snapshot's tags no longer name a deleted tag (as for one detach).
    await bulk_events.emit_for_selection(
        ctx, event, run_id, extra=group_payload(kind, group), **dims
    )
    await release(ctx, members)
    return size


async def drop_all_memberships(ctx: Context, selection: Selection, *, erased: bool) -> None:
    """The selected contacts are being deleted: their memberships go with them, each with its
    removal event (list- and tag-scoped endpoints never receive `contact.deleted`, which
    carries no dimension). Erased contacts are described by id only."""
    for kind, (table, _column, event) in KINDS.items():
        await bulk_events.emit_for_memberships(ctx, event, kind, selection.run_id, erased=erased)
        await execute(
            ctx,
            f"DELETE FROM {table} WHERE workspace_id = :ws AND contact_id IN "
            "(SELECT contact_id FROM bulk_selection WHERE run_id = :run)",
            run=selection.run_id,
        )


async def removal_wanted(ctx: Context) -> bool:
    """Whether deleting contacts has membership events to write (any endpoint taking
    `contact.list_left` or `contact.tag_removed`, whatever its scope)."""
    rules = await fanout.rules(ctx)
    return any(event in rule.event_types for rule in rules for *_, event in KINDS.values())
