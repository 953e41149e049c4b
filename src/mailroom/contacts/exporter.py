"""Contacts as CSV, streamed: GET /contacts/export and the bulk `export` action.

Rows are read in batches of `BATCH`, newest first, each batch in its own short read
transaction that ends before any of it is sent: a client that reads slowly (or never) holds no
database connection, only one batch of memory (see web.downloads). Batches follow each other by
keyset on (created_at, id), so memory stays flat and each batch costs the same however deep
into the export it is. Every cell is quoted and formula-safe (core.csvsafe).

Consistency: the export is not one snapshot. A contact unchanged during the export appears
exactly once; one created during it does not appear (it sorts before the first row); one
changed during it appears once, as it was when its batch was read; one deleted before its
batch was read is left out.
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson
from sqlalchemy import ColumnElement, String, literal, literal_column, select, tuple_

from mailroom.contacts.query import ContactFilter, conditions
from mailroom.core.context import Context
from mailroom.core.csvsafe import CHUNK_CHARS, FORMULA_STARTS, safe_cell
from mailroom.core.dbtypes import UTCDateTime
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
BATCH = 2000  # rows per read transaction
ID_SLICE = 1000  # explicit ids per statement (SQLite caps bound parameters)
WRITE_ROWS = 200  # rows per writerows call: ~40 KB, well under a chunk
_FORMULA = frozenset(FORMULA_STARTS)


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


def _after(ctx: Context, created_at: Any, contact_id: str) -> ColumnElement[bool]:
    """Rows after (created_at, id) in the export's newest-first order. The bound values are
    the ones the database handed back, unconverted: SQLite's stored text compares exactly."""
    table = Contact.__table__.c
    at_type = UTCDateTime() if ctx.dialect == "postgresql" else String()
    return tuple_(table.created_at, table.id) < tuple_(
        literal(created_at, at_type), literal(contact_id, String())
    )


async def _rows(
    ctx: Context,
    where: Sequence[ColumnElement[bool]],
    columns: Sequence[str],
    keys: list[str],
    limit: int | None = None,
) -> AsyncIterator[list[list[str]]]:
    """Batches of CSV-ready rows, newest first, read `BATCH` at a time: no ORM objects,
    timestamps already text, custom fields decoded once per row, and every cell made
    formula-safe (core.csvsafe's rule) in the same pass. `ctx.session`'s transaction is ended
    after each batch, before any of its rows is yielded."""
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
        select(
            *(selected[c] for c in columns),
            literal_column(custom),
            # The keyset: the raw stored values, never shown.
            literal_column("contacts.created_at"),
            literal_column("contacts.id"),
        )
        .select_from(Contact.__table__)
        .order_by(Contact.created_at.desc(), Contact.id.desc())
    )
    after: list[ColumnElement[bool]] = []
    remaining = limit
    width, formula, other = len(columns), _FORMULA, _other_cell
    while remaining is None or remaining > 0:
        size = BATCH if remaining is None else min(BATCH, remaining)
        # Core execution on the session's connection: plain rows, without the ORM's result
        # processing per row (a third of the export's Python time).
        connection = await ctx.session.connection()
        batch = (await connection.execute(query.where(*where, *after).limit(size))).all()
        await ctx.session.rollback()  # the read is over: give the connection back
        if not batch:
            return
        out: list[list[str]] = []
        for row in batch:
            # Database values are str or None; a leading formula character gets a quote.
            cells = [("'" + v if v[0] in formula else v) if v else "" for v in row[:width]]
            if keys:
                raw = row[width]  # the custom_fields JSON
                get = orjson.loads(raw).get if raw else {}.get
                cells += [
                    ("'" + v if v[0] in formula else v) if type(v) is str and v else other(v)
                    for v in map(get, keys)
                ]
            out.append(cells)
        yield out
        if len(batch) < size:
            return
        if remaining is not None:
            remaining -= len(batch)
        after = [_after(ctx, batch[-1][-2], batch[-1][-1])]


def _other_cell(value: Any) -> str:
    """A custom value that is not a non-empty string: None and "" are empty cells, booleans
    are true/false, numbers their text (formula-safe: -5 is '-5)."""
    if value is None or value == "":
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return safe_cell(str(value))


async def _csv(
    header: Sequence[str], batches: AsyncIterator[list[list[str]]]
) -> AsyncIterator[str]:
    """core.csvsafe.stream_csv's output (every cell quoted, CRLF, chunks of about CHUNK_CHARS)
    for rows made safe already: a few hundred rows per writerows call, no per-row step."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writerow([safe_cell(c) for c in header])

    def take() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    async for batch in batches:
        for start in range(0, len(batch), WRITE_ROWS):
            writer.writerows(batch[start : start + WRITE_ROWS])
            if buffer.tell() >= CHUNK_CHARS:
                yield take()
    yield take()


async def export_filtered(ctx: Context, f: ContactFilter) -> AsyncIterator[str]:
    """GET /contacts/export: every contact the filter matches (archived only on request)."""
    keys = await custom_keys(ctx)
    header = [*EXPORT_COLUMNS, *(f"custom.{k}" for k in keys)]
    async for chunk in _csv(header, _rows(ctx, conditions(ctx, f), EXPORT_COLUMNS, keys)):
        yield chunk


async def export_selected(
    ctx: Context, contact_ids: list[str] | None, f: ContactFilter | None, limit: int
) -> AsyncIterator[str]:
    """The bulk `export` action's CSV (its own, shorter column set)."""
    keys = await custom_keys(ctx)
    header = [*BULK_COLUMNS, *(f"custom.{k}" for k in keys)]

    async def batches() -> AsyncIterator[list[list[str]]]:
        if contact_ids is not None:
            # Each slice of ids is one batch (sorted within itself).
            for start in range(0, len(contact_ids), ID_SLICE):
                chunk = contact_ids[start : start + ID_SLICE]
                where = [Contact.workspace_id == ctx.workspace_id, Contact.id.in_(chunk)]
                async for batch in _rows(ctx, where, BULK_COLUMNS, keys):
                    yield batch
            return
        assert f is not None
        async for batch in _rows(ctx, conditions(ctx, f), BULK_COLUMNS, keys, limit):
            yield batch

    async for chunk in _csv(header, batches()):
        yield chunk
