"""Events for many contacts in one statement: INSERT ... SELECT with the contact snapshot built
by the database (json_object on SQLite, jsonb_build_object on PostgreSQL), so a bulk action
over 50,000 contacts writes its 50,000 events without a Python loop.

The snapshot has the same fields as `events.service.contact_snapshot`.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import bindparam, text

from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.dbtypes import UTCDateTime
from mailroom.core.ids import new_id
from mailroom.core.logs import current_request_id
from mailroom.db import bulk_insert, sql_uuid
from mailroom.events.catalog import CATALOG, CHAT_EVENTS
from mailroom.models import WebhookDelivery
from mailroom.webhooks import fanout

# SQLite keeps UTC timestamps as "YYYY-MM-DD HH:MM:SS.ffffff".
_SQLITE_TIME = "CASE WHEN {col} IS NULL THEN NULL ELSE replace({col}, ' ', 'T') || 'Z' END"
# json() restores the JSON subtype a scalar subquery drops (else tags embed as a string).
_SQLITE_TAGS = "coalesce(json(tg.names), json('[]'))"
# SQLite: tag names of every selected contact aggregated once, then joined.
_PG_TIME = "to_char({col} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
# PostgreSQL: a subquery per contact (index lookups). A join with a pre-aggregated set is
# faster when the planner knows the sizes, but right after a bulk write its statistics are
# stale and it can pick a nested loop over the whole set: this form cannot go quadratic.
_PG_TAGS = (
    "coalesce((SELECT jsonb_agg(t.name ORDER BY t.name_key) FROM contact_tags ct "
    "JOIN tags t ON t.id = ct.tag_id WHERE ct.contact_id = c.id), '[]'::jsonb)"
)
_SQLITE_TAG_NAMES = (
    "SELECT contact_id, json_group_array(name) AS names FROM ("
    "SELECT ct.contact_id AS contact_id, t.name AS name FROM contact_tags ct "
    "JOIN tags t ON t.id = ct.tag_id "
    "JOIN bulk_selection s ON s.contact_id = ct.contact_id AND s.run_id = :run "
    "ORDER BY ct.contact_id, t.name_key) GROUP BY contact_id"
)


def _snapshot(dialect: str, erased: bool) -> str:
    if dialect == "postgresql":
        build, time, tags = "jsonb_build_object", _PG_TIME, _PG_TAGS
        custom = "c.custom_fields"
    else:
        build, time, tags = "json_object", _SQLITE_TIME, _SQLITE_TAGS
        custom = "json(c.custom_fields)"
    if erased:
        nothing = "NULL"
        fields = {
            "id": "c.id",
            "email": nothing,
            "status": "'erased'",
            "first_name": nothing,
            "last_name": nothing,
            "source": nothing,
            "custom_fields": nothing,
            "created_at": nothing,
            "subscribed_at": nothing,
            "unsubscribed_at": nothing,
            "tags": "'[]'::jsonb" if dialect == "postgresql" else "json('[]')",
        }
    else:
        fields = {
            "id": "c.id",
            "email": "c.email",
            "status": "c.status",
            "first_name": "c.first_name",
            "last_name": "c.last_name",
            "source": "c.source",
            "custom_fields": custom,
            "created_at": time.format(col="c.created_at"),
            "subscribed_at": time.format(col="c.subscribed_at"),
            "unsubscribed_at": time.format(col="c.unsubscribed_at"),
            "tags": tags,
        }
    pairs = ", ".join(f"'{name}', {expr}" for name, expr in fields.items())
    return f"{build}({pairs})"


async def wanted(
    ctx: Context, event_type: str, *, list_id: str | None = None, tag_id: str | None = None
) -> bool:
    """Whether an enabled endpoint takes `event_type` (with these dimensions): a bulk action
    lists the contacts it changed only when their events will be written."""
    return bool(await fanout.subscribers(ctx, event_type, {"list_id": list_id, "tag_id": tag_id}))


async def emit_for_selection(
    ctx: Context,
    event_type: str,
    run_id: str,
    *,
    only: str = "",
    extra: dict[str, Any] | None = None,
    list_id: str | None = None,
    tag_id: str | None = None,
    erased: bool = False,
) -> int:
    """One `event_type` event per selected contact (optionally narrowed by `only`, a fixed SQL
    predicate on `c`); returns how many were written."""
    if event_type not in CATALOG:
        raise ValueError(f"unknown event {event_type}")
    endpoints = await fanout.subscribers(ctx, event_type, {"list_id": list_id, "tag_id": tag_id})
    if not endpoints:
        return 0  # nobody listens: nothing to write
    dialect = ctx.dialect
    snapshot = _snapshot(dialect, erased)
    if dialect == "postgresql":
        data = f"jsonb_build_object('contact', {snapshot}) || CAST(:extra AS jsonb)"
    else:
        data = f"json_patch(json_object('contact', {snapshot}), :extra)"
    event_id = sql_uuid(dialect)
    condition = f"AND ({only})" if only else ""
    if dialect == "postgresql":
        sql = f"""
            INSERT INTO events (
                id, workspace_id, type, data, list_id, tag_id, request_id, created_at
            )
            SELECT {event_id}, c.workspace_id, :type, {data}, :list_id, :tag_id, :request_id, :now
            FROM contacts c JOIN bulk_selection s ON s.contact_id = c.id AND s.run_id = :run
            WHERE c.workspace_id = :ws {condition}
            RETURNING id
        """
    else:
        sql = f"""
            WITH tg AS ({_SQLITE_TAG_NAMES})
            INSERT INTO events (
                id, workspace_id, type, data, list_id, tag_id, request_id, created_at
            )
            SELECT {event_id}, c.workspace_id, :type, {data}, :list_id, :tag_id, :request_id, :now
            FROM contacts c JOIN bulk_selection s ON s.contact_id = c.id AND s.run_id = :run
            LEFT JOIN tg ON tg.contact_id = c.id
            WHERE c.workspace_id = :ws {condition}
            RETURNING id
        """
    statement = text(sql).bindparams(bindparam("now", type_=UTCDateTime()))
    result = await ctx.session.execute(
        statement,
        {
            "type": event_type,
            "extra": json.dumps(extra or {}),
            "list_id": list_id,
            "tag_id": tag_id,
            "request_id": current_request_id(),
            "now": utcnow(),
            "run": run_id,
            "ws": ctx.workspace_id,
        },
    )
    event_ids = list(result.scalars().all())
    await _deliveries(ctx, event_type, [(event_id, endpoints) for event_id in event_ids])
    return len(event_ids)


async def _deliveries(ctx: Context, event_type: str, targets: list[tuple[str, list[str]]]) -> None:
    """One pending delivery per (event, endpoint)."""
    now = utcnow()
    await bulk_insert(
        ctx.session,
        WebhookDelivery,
        (
            {
                "id": new_id(),
                "workspace_id": ctx.workspace_id,
                "endpoint_id": endpoint_id,
                "event_id": event_id,
                "event_type": event_type,
                "status": "pending",
                "run_at": now,
                "locked_until": None,
                "locked_by": None,
                "attempts": 0,
                "last_status_code": None,
                "last_error": None,
                "delivered_at": None,
                "created_at": now,
                "updated_at": now,
            }
            for event_id, endpoints in targets
            for endpoint_id in endpoints
        ),
    )


# What each membership kind joins: its table, the table naming the group, the dimension.
_MEMBERSHIPS = {
    "list": ("list_members", "list_id", "lists", "list_ids"),
    "tag": ("contact_tags", "tag_id", "tags", "tag_ids"),
}


async def emit_for_memberships(
    ctx: Context, event_type: str, kind: str, run_id: str, *, erased: bool = False
) -> int:
    """One `event_type` event per (selected contact, list or tag it belongs to), each with
    that list or tag as its dimension and `{"list"|"tag": {id, name}}` beside the contact
    (e.g. `contact.list_left` for every membership of contacts about to be deleted). Only
    memberships some endpoint takes are written; returns how many events were."""
    if event_type not in CATALOG:
        raise ValueError(f"unknown event {event_type}")
    table, column, groups, filter_key = _MEMBERSHIPS[kind]
    takers = [
        rule
        for rule in await fanout.rules(ctx)
        if event_type in rule.event_types
        and (rule.channel == "server" or event_type in CHAT_EVENTS)
        and set(rule.filters) <= {filter_key}  # any other scope needs a dimension we lack
    ]
    if not takers:
        return 0
    # Unscoped endpoints take every membership; scoped ones only their lists or tags.
    scopes = [rule.filters.get(filter_key) for rule in takers]
    allowed = None if None in scopes else set().union(*(s for s in scopes if s))
    dialect = ctx.dialect
    snapshot = _snapshot(dialect, erased)
    build = "jsonb_build_object" if dialect == "postgresql" else "json_object"
    data = f"{build}('contact', {snapshot}, '{kind}', {build}('id', g.id, 'name', g.name))"
    scope = "" if allowed is None else f"AND m.{column} IN :allowed"
    tags_cte = "" if dialect == "postgresql" else f"WITH tg AS ({_SQLITE_TAG_NAMES})"
    tags_join = "" if dialect == "postgresql" else "LEFT JOIN tg ON tg.contact_id = c.id"
    statement = text(
        f"""
        {tags_cte}
        INSERT INTO events (id, workspace_id, type, data, {column}, request_id, created_at)
        SELECT {sql_uuid(dialect)}, c.workspace_id, :type, {data}, m.{column}, :request_id, :now
        FROM contacts c JOIN bulk_selection s ON s.contact_id = c.id AND s.run_id = :run
        JOIN {table} m ON m.contact_id = c.id
        JOIN {groups} g ON g.id = m.{column} AND g.workspace_id = c.workspace_id
        {tags_join}
        WHERE c.workspace_id = :ws {scope}
        RETURNING id, {column}
        """
    ).bindparams(bindparam("now", type_=UTCDateTime()))
    params: dict[str, Any] = {
        "type": event_type,
        "request_id": current_request_id(),
        "now": utcnow(),
        "run": run_id,
        "ws": ctx.workspace_id,
    }
    if allowed is not None:
        statement = statement.bindparams(bindparam("allowed", expanding=True))
        params["allowed"] = sorted(allowed)
    rows = (await ctx.session.execute(statement, params)).all()
    endpoints_of: dict[str, list[str]] = {}
    targets: list[tuple[str, list[str]]] = []
    for event_id, group_id in rows:
        if group_id not in endpoints_of:
            endpoints_of[group_id] = await fanout.subscribers(ctx, event_type, {column: group_id})
        targets.append((event_id, endpoints_of[group_id]))
    await _deliveries(ctx, event_type, targets)
    return len(rows)
