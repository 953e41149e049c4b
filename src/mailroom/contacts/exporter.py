"""Contacts as CSV, streamed: GET /contacts/export and the bulk `export` action.

Rows come from a server-side cursor in chunks and leave as CSV text chunks, so memory stays
flat whatever the number of contacts. Every cell is quoted and formula-safe (core.csvsafe).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson
from sqlalchemy import ColumnElement, literal_column, select

from mailroom.contacts.query import ContactFilter, conditions
from mailroom.core.context import Context
from mailroom.core.csvsafe import stream_csv
from mailroom.custom_fields import service as custom_fields
from mailroom.models import Contact

EXPORT_COLUMNS = (
    "email",
    "first_name",
    "last_name",
    "status",
    "source",
    "language",
    "tags",
    "lists",
    "created_at",
    "subscribed_at",
    "unsubscribed_at",
)
BULK_COLUMNS = (
    "email",
    "first_name",
    "last_name",
    "status",
    "source",
    "language",
    "tags",
    "created_at",
)
CHUNK = 2000


def _names(ctx: Context, join_table: str, name_table: str, fk: str) -> str:
    """Semicolon-joined names of a contact's tags or lists, in name order."""
    if ctx.dialect == "postgresql":
        return (
            f"(SELECT string_agg(n.name, ';' ORDER BY n.name_key) FROM {join_table} j "
            f"JOIN {name_table} n ON n.id = j.{fk} WHERE j.contact_id = contacts.id)"
        )
    return (
        f"(SELECT group_concat(name, ';') FROM (SELECT n.name AS name FROM {join_table} j "
        f"JOIN {name_table} n ON n.id = j.{fk} WHERE j.contact_id = contacts.id "
        "ORDER BY n.name_key))"
    )


def _iso_sql(ctx: Context, column: str) -> str:
    """A timestamp as ISO 8601 text made by the database (no per-row datetime objects)."""
    if ctx.dialect == "postgresql":
        return f"to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
    return f"replace({column}, ' ', 'T') || 'Z'"


async def custom_keys(ctx: Context) -> list[str]:
    """Keys contacts carry: registered fields in their order, then the rest by name."""
    usage = await custom_fields.key_usage(ctx)
    fields = await custom_fields.registry(ctx)
    registered = [
        f.key for f in sorted(fields.values(), key=lambda f: (f.position, f.key)) if f.key in usage
    ]
    return registered + sorted(k for k in usage if k not in fields)


async def _rows(
    ctx: Context, where: Sequence[ColumnElement[bool]], columns: Sequence[str], keys: list[str]
) -> AsyncIterator[list[Any]]:
    """Plain tuples straight from a server-side cursor: no ORM objects, timestamps already
    text, custom fields decoded once per row."""
    custom = "custom_fields::text" if ctx.dialect == "postgresql" else "custom_fields"
    selected: dict[str, Any] = {
        "email": literal_column("email"),
        "first_name": literal_column("first_name"),
        "last_name": literal_column("last_name"),
        "status": literal_column("status"),
        "source": literal_column("source"),
        "language": literal_column("coalesce(language, '')"),
        "tags": literal_column(_names(ctx, "contact_tags", "tags", "tag_id")),
        "lists": literal_column(_names(ctx, "list_members", "lists", "list_id")),
        "created_at": literal_column(_iso_sql(ctx, "created_at")),
        "subscribed_at": literal_column(_iso_sql(ctx, "subscribed_at")),
        "unsubscribed_at": literal_column(_iso_sql(ctx, "unsubscribed_at")),
    }
    query = (
        select(*(selected[c] for c in columns), literal_column(custom))
        .select_from(Contact.__table__)
        .where(*where)
        .order_by(Contact.created_at.desc(), Contact.id.desc())
        .execution_options(yield_per=CHUNK)
    )
    result = await ctx.session.stream(query)
    async for partition in result.partitions():
        for row in partition:
            values = list(row)
            raw = values.pop()  # the custom_fields JSON, always the last column
            fields = orjson.loads(raw) if keys and raw else {}
            values.extend(_cell(fields.get(k)) for k in keys)
            yield values


def _cell(value: Any) -> str | None:
    if value is None or type(value) is str:
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


async def export_filtered(ctx: Context, f: ContactFilter) -> AsyncIterator[str]:
    """GET /contacts/export: every contact the filter matches (archived only on request)."""
    keys = await custom_keys(ctx)
    header = [*EXPORT_COLUMNS, *(f"custom.{k}" for k in keys)]
    async for chunk in stream_csv(
        header, _rows(ctx, conditions(ctx, f), EXPORT_COLUMNS, keys), text_only=True
    ):
        yield chunk


async def export_selected(
    ctx: Context, contact_ids: list[str] | None, f: ContactFilter | None, limit: int
) -> AsyncIterator[str]:
    """The bulk `export` action's CSV (its own, shorter column set)."""
    keys = await custom_keys(ctx)
    header = [*BULK_COLUMNS, *(f"custom.{k}" for k in keys)]

    async def rows() -> AsyncIterator[list[Any]]:
        if contact_ids is not None:
            for start in range(0, len(contact_ids), 1000):
                chunk = contact_ids[start : start + 1000]
                where = [Contact.workspace_id == ctx.workspace_id, Contact.id.in_(chunk)]
                async for row in _rows(ctx, where, BULK_COLUMNS, keys):
                    yield row
            return
        assert f is not None
        count = 0
        async for row in _rows(ctx, conditions(ctx, f), BULK_COLUMNS, keys):
            yield row
            count += 1
            if count >= limit:
                return

    async for chunk in stream_csv(header, rows(), text_only=True):
        yield chunk
