"""Streaming the suppression list as CSV, with flat memory however long it is.

Rows are read `BATCH` at a time, newest first, each batch in its own short read transaction
that ends before any of it is sent (see web.downloads), batches following each other by keyset
on (created_at, id). Like the contact export it is not one snapshot: a row unchanged during
the export appears exactly once, one added during it does not appear, one lifted before its
batch was read is left out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from sqlalchemy import ColumnElement, String, literal, tuple_, type_coerce

from mailroom.core.context import Context
from mailroom.core.csvsafe import stream_csv
from mailroom.core.dbtypes import UTCDateTime
from mailroom.models import Suppression
from mailroom.suppressions.service import SuppressionView, listing_query

COLUMNS = ("email", "email_masked", "domain", "reason", "source", "added_at", "contact_id")
BATCH = 1000  # rows per read transaction


def filename(reason: str | None) -> str:
    return f"suppressions-{reason}.csv" if reason else "suppressions.csv"


def _after(ctx: Context, created_at: Any, suppression_id: str) -> ColumnElement[bool]:
    """Rows after (created_at, id) in newest-first order, compared with the values the
    database handed back, unconverted (SQLite's stored text compares exactly)."""
    at_type = UTCDateTime() if ctx.dialect == "postgresql" else String()
    return tuple_(Suppression.created_at, Suppression.id) < tuple_(
        literal(created_at, at_type), literal(suppression_id, String())
    )


async def _rows(
    ctx: Context, reason: str | None, domain: str | None
) -> AsyncIterator[Sequence[Any]]:
    # The stored created_at as the driver returns it (text on SQLite), for the keyset.
    raw_created = type_coerce(Suppression.created_at, String()).label("keyset_created_at")
    query = listing_query(ctx, reason, domain).add_columns(raw_created).limit(BATCH)
    after: list[ColumnElement[bool]] = []
    while True:
        batch = (await ctx.session.execute(query.where(*after))).all()
        # Made into plain values before the transaction ends (that expires the ORM rows).
        lines = [_line(SuppressionView.from_row(row[:-1])) for row in batch]
        if batch:
            last = batch[-1]
            after = [_after(ctx, last[-1], last[0].id)]
        await ctx.session.rollback()  # the read is over: give the connection back
        for line in lines:
            yield line
        if len(batch) < BATCH:
            return


def _line(view: SuppressionView) -> list[Any]:
    shown = view.as_dict()
    return [
        view.contact_email or "",
        shown["email_masked"] or "",
        shown["email_domain"] or "",
        view.row.reason,
        view.row.source,
        view.row.created_at.isoformat().replace("+00:00", "Z"),
        view.contact_id or "",
    ]


def export_csv(ctx: Context, reason: str | None, domain: str | None) -> AsyncIterator[str]:
    """CSV text chunks, newest first. `ctx.session` is a read session whose transaction this
    ends after each batch."""
    return stream_csv(COLUMNS, _rows(ctx, reason, domain))
