"""POST /contacts/bulk: one action over chosen contacts (ids) or a filter (up to 50,000).

Every action is a handful of set-based statements in the request's one transaction: the
selection is listed once in `bulk_selection`, then UPDATE / INSERT ... SELECT / DELETE act on it
and events are written by the database (events.bulk). All of it happens, or none.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import select, text

from mailroom.contacts import send_history, submissions
from mailroom.contacts import service as contacts
from mailroom.contacts.memberships import change_and_emit, drop_all_memberships, group_payload
from mailroom.contacts.query import FILTER_KEYS, ContactFilter, conditions, parse_filter
from mailroom.contacts.selection import (
    IN_SELECTION,
    MAX_CONTACTS,
    Selection,
    execute,
    narrow,
    release,
    select_contacts,
    update_sql,
)
from mailroom.core.auth import Principal
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.ecommerce import customers
from mailroom.events import bulk as bulk_events
from mailroom.lists import service as lists
from mailroom.models import Contact
from mailroom.segments import service as segments
from mailroom.suppressions.bulk import blocked_count, suppress_selection
from mailroom.tags import service as tags

log = logging.getLogger("mailroom.bulk")

ACTIONS = (
    "unsubscribe",
    "archive",
    "restore",
    "delete",
    "erase",
    "add_tag",
    "remove_tag",
    "add_to_list",
    "remove_from_list",
    "export",
)


@dataclass(frozen=True)
class BulkRequest:
    action: str
    contact_ids: list[str] | None
    filter: ContactFilter | None
    tag_id: str | None
    list_id: str | None
    suppress: bool


def parse_request(body: Any, principal: Principal) -> BulkRequest:
    """The spec's 400s, in its order, before anything is read; `export` without
    `contacts:export` is refused as soon as the action is known."""
    if not isinstance(body, dict):
        raise ApiError(400, "Request body must be a JSON object")
    action = body.get("action")
    if action is None or action == "":
        raise ApiError(400, "action is required")
    if not isinstance(action, str) or action not in ACTIONS:
        raise ApiError(400, f"Unknown action: {action}")
    if action == "export":
        principal.check("contacts:export")
    raw_ids, raw_filter = body.get("contact_ids"), body.get("filter")
    if not isinstance(raw_ids, list) and raw_filter is None:
        raise ApiError(400, "contact_ids array or filter is required")
    suppress = body.get("suppress", False)
    if not isinstance(suppress, bool):
        raise ApiError(400, "suppress must be true or false")
    tag_id, list_id = body.get("tag_id"), body.get("list_id")
    if action in ("add_tag", "remove_tag") and not (isinstance(tag_id, str) and tag_id):
        raise ApiError(400, "tag_id is required")
    if action in ("add_to_list", "remove_from_list") and not (isinstance(list_id, str) and list_id):
        raise ApiError(400, "list_id is required")
    for name, given in (("tag_id", tag_id), ("list_id", list_id)):
        # Given where the action needs none, still an id or nothing (as the schema says).
        if given is not None and not (isinstance(given, str) and given):
            raise ApiError(400, f"{name} must be a non-empty string")
    ids: list[str] | None = None
    parsed_filter: ContactFilter | None = None
    if isinstance(raw_ids, list):
        ids = list(dict.fromkeys(i for i in raw_ids if isinstance(i, str) and i))
        if not ids:
            raise ApiError(400, "No valid contact IDs provided")
        if len(ids) > MAX_CONTACTS:
            raise ApiError(400, f"contact_ids may have at most {MAX_CONTACTS} ids")
    else:
        if not isinstance(raw_filter, dict):
            raise ApiError(400, "filter must be an object")
        unknown = sorted(k for k in raw_filter if k not in FILTER_KEYS)
        if unknown:
            raise ApiError(400, f"Unknown filter key(s): {', '.join(unknown)}")
        parsed_filter = parse_filter(raw_filter)
    return BulkRequest(action, ids, parsed_filter, tag_id, list_id, suppress)


async def resolve_segment(ctx: Context, request: BulkRequest) -> BulkRequest:
    """The filter's `segment` resolved to its rule (404 `Segment not found`), once, before
    any action or export reads contacts."""
    if request.filter is None or request.filter.segment is None:
        return request
    return replace(request, filter=await segments.narrow(ctx, request.filter))


# ---------------------------------------------------------------- the actions


async def check_export(ctx: Context, request: BulkRequest) -> None:
    """Before any read: the export permission, then a filter that matches somebody."""
    ctx.principal.check("contacts:export")
    if request.filter is not None:
        found = await ctx.session.scalar(
            select(Contact.id).where(*conditions(ctx, request.filter)).limit(1)
        )
        if found is None:
            raise ApiError(404, "No contacts match that filter")


async def run(ctx: Context, request: BulkRequest) -> dict[str, Any]:
    """Every action but export, in the caller's transaction; an unexpected failure is the
    spec's 500 `Bulk action failed` (and the transaction rolls back whole)."""
    try:
        return await _run(ctx, request)
    except ApiError:
        raise
    except Exception as exc:
        log.exception("bulk %s failed", request.action)
        raise ApiError(500, "Bulk action failed") from exc


async def _run(ctx: Context, request: BulkRequest) -> dict[str, Any]:
    """Counts follow the spec: tag counts and deletions equal the ids submitted; list counts
    equal rows affected."""
    tag = (
        await tags.get_tag(ctx, request.tag_id)
        if request.tag_id and "tag" in request.action
        else None
    )
    mailing_list = (
        await lists.get_list(ctx, request.list_id)
        if request.list_id and "list" in request.action
        else None
    )
    selection = await select_contacts(ctx, request.contact_ids, request.filter)
    extra: list[Selection] = []
    try:
        async with contacts.counting_once(ctx):
            return await _act(ctx, request, selection, tag, mailing_list, extra)
    finally:
        await release(ctx, selection, *extra)


async def _act(
    ctx: Context,
    request: BulkRequest,
    selection: Selection,
    tag: Any,
    mailing_list: Any,
    extra: list[Selection],
) -> dict[str, Any]:
    action = request.action
    if action == "unsubscribe":
        return await _unsubscribe(ctx, selection, request.suppress, extra)
    if action == "archive":
        # As PATCH `status: archived`: a field change, so `contact.updated`.
        not_archived = "c.status <> 'archived'"
        archived = await change_and_emit(
            ctx,
            selection,
            extra,
            update_sql(
                "previous_status = status, status = 'archived', updated_at = :now", not_archived
            ),
            event="contact.updated",
            returning="c.id",
            predicate=not_archived,
        )
        return {
            "success": True,
            "archived": archived,
            "already_archived": selection.size - archived,
        }
    if action == "restore":
        return await _restore(ctx, selection, extra)
    if action in ("delete", "erase"):
        await _delete(ctx, selection, erase=action == "erase")
        key = "erased" if action == "erase" else "deleted"
        return {"success": True, key: selection.submitted}
    if action == "add_tag":
        assert tag is not None
        return await _add_tag(ctx, selection, tag, extra)
    if action == "remove_tag":
        assert tag is not None
        return await _remove_tag(ctx, selection, tag, extra)
    if action == "add_to_list":
        assert mailing_list is not None
        return await _add_to_list(ctx, selection, mailing_list, extra)
    assert mailing_list is not None
    return await _remove_from_list(ctx, selection, mailing_list, extra)


async def _unsubscribe(
    ctx: Context, selection: Selection, suppress: bool, extra: list[Selection]
) -> dict[str, Any]:
    subscribed = "c.status = 'subscribed'"
    unsubscribed = await change_and_emit(
        ctx,
        selection,
        extra,
        update_sql(
            "status = 'unsubscribed', unsubscribed_at = :now, updated_at = :now", subscribed
        ),
        event="contact.unsubscribed",
        returning="c.id",
        predicate=subscribed,
    )
    suppressed = 0
    if suppress:
        suppressed = await suppress_selection(ctx, selection, reason="unsubscribed", source="bulk")
    return {
        "success": True,
        "unsubscribed": unsubscribed,
        "already_unsubscribed": selection.size - unsubscribed,
        "suppressed": suppressed,
        "blocked": await blocked_count(ctx, selection),
    }


async def _restore(ctx: Context, selection: Selection, extra: list[Selection]) -> dict[str, Any]:
    blocked = (
        "EXISTS (SELECT 1 FROM suppressions su WHERE su.workspace_id = contacts.workspace_id "
        "AND su.email_hash = contacts.email_hash)"
    )
    returning = (
        "coalesce(c.previous_status, 'subscribed') = 'subscribed' AND NOT EXISTS "
        "(SELECT 1 FROM suppressions su WHERE su.workspace_id = c.workspace_id "
        "AND su.email_hash = c.email_hash)"
    )
    archived = await narrow(ctx, selection, "c.status = 'archived'")
    extra.append(archived)
    back_to_subscribed = await narrow(ctx, archived, returning)
    extra.append(back_to_subscribed)
    await contacts.ensure_capacity(ctx, back_to_subscribed.size)
    # Events, as PATCH would write them: a formerly subscribed contact whose address was
    # blocked meanwhile comes back `unsubscribed` (`contact.unsubscribed`); every other
    # restored contact changed status only (`contact.updated`). Told apart before the UPDATE.
    demoted = (
        "coalesce(c.previous_status, 'subscribed') = 'subscribed' AND EXISTS "
        "(SELECT 1 FROM suppressions su WHERE su.workspace_id = c.workspace_id "
        "AND su.email_hash = c.email_hash)"
    )
    told: list[tuple[str, Selection]] = []
    for event, predicate in (
        ("contact.unsubscribed", demoted),
        ("contact.updated", f"NOT ({demoted})"),
    ):
        if await bulk_events.wanted(ctx, event):
            told.append((event, await narrow(ctx, archived, predicate)))
            extra.append(told[-1][1])
    restored = await execute(
        ctx,
        f"""
        UPDATE contacts SET
          status = CASE WHEN coalesce(previous_status, 'subscribed') = 'subscribed' AND {blocked}
                        THEN 'unsubscribed' ELSE coalesce(previous_status, 'subscribed') END,
          unsubscribed_at = CASE WHEN coalesce(previous_status, 'subscribed') = 'subscribed'
                                  AND {blocked} THEN :now ELSE unsubscribed_at END,
          previous_status = NULL, updated_at = :now
        WHERE workspace_id = :ws AND {IN_SELECTION}
        """,
        run=archived.run_id,
    )
    for event, changed in told:
        await bulk_events.emit_for_selection(ctx, event, changed.run_id)
    return {"success": True, "restored": restored, "not_archived": selection.size - restored}


async def _delete(ctx: Context, selection: Selection, *, erase: bool) -> None:
    mode = "erase" if erase else "delete"
    await bulk_events.emit_for_selection(
        ctx, "contact.deleted", selection.run_id, extra={"mode": mode}, erased=erase
    )
    await suppress_selection(
        ctx,
        selection,
        reason="deleted",
        source="contact_erase" if erase else "contact_delete",
        erase=erase,
    )
    await drop_all_memberships(ctx, selection, erased=erase)
    await send_history.anonymise(ctx, selection, erase=erase)
    await customers.forget(ctx, selection, erase=erase)
    if erase:
        await submissions.erase(ctx, selection)
    await execute(
        ctx,
        f"DELETE FROM contacts WHERE workspace_id = :ws AND {IN_SELECTION}",
        run=selection.run_id,
    )


async def _add_tag(
    ctx: Context, selection: Selection, tag: Any, extra: list[Selection]
) -> dict[str, Any]:
    await change_and_emit(
        ctx,
        selection,
        extra,
        "INSERT INTO contact_tags (contact_id, tag_id, workspace_id, created_at) "
        "SELECT contact_id, :tag, :ws, :now FROM bulk_selection WHERE run_id = :run "
        "ON CONFLICT DO NOTHING",
        event="contact.tag_added",
        enrols="tag_added",
        returning="contact_id",
        predicate="NOT EXISTS (SELECT 1 FROM contact_tags ct "
        "WHERE ct.contact_id = c.id AND ct.tag_id = :tag)",
        payload=group_payload("tag", tag),
        tag_id=tag.id,
        tag=tag.id,
    )
    return {"success": True, "tagged": selection.submitted}


async def _remove_tag(
    ctx: Context, selection: Selection, tag: Any, extra: list[Selection]
) -> dict[str, Any]:
    await change_and_emit(
        ctx,
        selection,
        extra,
        "DELETE FROM contact_tags WHERE tag_id = :tag AND contact_id IN "
        "(SELECT contact_id FROM bulk_selection WHERE run_id = :run)",
        event="contact.tag_removed",
        returning="contact_id",
        predicate="EXISTS (SELECT 1 FROM contact_tags ct "
        "WHERE ct.contact_id = c.id AND ct.tag_id = :tag)",
        payload=group_payload("tag", tag),
        tag_id=tag.id,
        tag=tag.id,
    )
    return {"success": True, "untagged": selection.submitted}


async def _add_to_list(
    ctx: Context, selection: Selection, mailing_list: Any, extra: list[Selection]
) -> dict[str, Any]:
    """Only subscribed contacts join; one INSERT ... ON CONFLICT DO NOTHING adds those not
    yet members, so `already_member` is the subscribed ones it did not add. Only a confirmed
    join is a `contact.list_joined`."""
    confirmed = not lists.effective_double_opt_in(ctx, mailing_list)
    state = "confirmed" if confirmed else "unconfirmed"
    subscribed = int(
        await ctx.session.scalar(
            text(
                "SELECT count(*) FROM contacts c JOIN bulk_selection s "
                "ON s.contact_id = c.id AND s.run_id = :run "
                "WHERE c.workspace_id = :ws AND c.status = 'subscribed'"
            ),
            {"run": selection.run_id, "ws": ctx.workspace_id},
        )
        or 0
    )
    added = await change_and_emit(
        ctx,
        selection,
        extra,
        "INSERT INTO list_members (list_id, contact_id, workspace_id, status, created_at, "
        "confirmed_at) SELECT :list, c.id, c.workspace_id, :state, :now, "
        f"{':now' if confirmed else 'NULL'} FROM contacts c JOIN bulk_selection s "
        "ON s.contact_id = c.id AND s.run_id = :run "
        "WHERE c.workspace_id = :ws AND c.status = 'subscribed' ON CONFLICT DO NOTHING",
        event="contact.list_joined",
        enrols="list_joined",
        returning="contact_id",
        predicate="c.status = 'subscribed' AND NOT EXISTS (SELECT 1 FROM list_members m "
        "WHERE m.contact_id = c.id AND m.list_id = :list)",
        payload=group_payload("list", mailing_list),
        list_id=mailing_list.id,
        emit=confirmed,
        list=mailing_list.id,
        state=state,
    )
    return {
        "success": True,
        "added": added,
        "already_member": subscribed - added,
        "skipped_not_subscribed": selection.size - subscribed,
        "membership": state,
    }


async def _remove_from_list(
    ctx: Context, selection: Selection, mailing_list: Any, extra: list[Selection]
) -> dict[str, Any]:
    removed = await change_and_emit(
        ctx,
        selection,
        extra,
        "DELETE FROM list_members WHERE list_id = :list AND contact_id IN "
        "(SELECT contact_id FROM bulk_selection WHERE run_id = :run)",
        event="contact.list_left",
        returning="contact_id",
        predicate="EXISTS (SELECT 1 FROM list_members m "
        "WHERE m.contact_id = c.id AND m.list_id = :list)",
        payload=group_payload("list", mailing_list),
        list_id=mailing_list.id,
        list=mailing_list.id,
    )
    return {"success": True, "removed": removed}
