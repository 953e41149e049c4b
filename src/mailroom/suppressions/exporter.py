"""Streaming the suppression list as CSV, with flat memory however long it is."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from mailroom.core.context import Context
from mailroom.core.csvsafe import stream_csv
from mailroom.suppressions.service import SuppressionView, listing_query

COLUMNS = ("email", "email_masked", "domain", "reason", "source", "added_at", "contact_id")


def filename(reason: str | None) -> str:
    return f"suppressions-{reason}.csv" if reason else "suppressions.csv"


async def _rows(
    ctx: Context, reason: str | None, domain: str | None
) -> AsyncIterator[Sequence[Any]]:
    query = listing_query(ctx, reason, domain).execution_options(yield_per=1000)
    async for row in await ctx.session.stream(query):
        view = SuppressionView.from_row(row)
        shown = view.as_dict()
        yield [
            view.contact_email or "",
            shown["email_masked"] or "",
            shown["email_domain"] or "",
            view.row.reason,
            view.row.source,
            view.row.created_at.isoformat().replace("+00:00", "Z"),
            view.contact_id or "",
        ]


def export_csv(ctx: Context, reason: str | None, domain: str | None) -> AsyncIterator[str]:
    """CSV text chunks, newest first. `ctx.session` must stay open while this is consumed."""
    return stream_csv(COLUMNS, _rows(ctx, reason, domain))
