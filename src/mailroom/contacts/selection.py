"""The contacts a bulk operation acts on, listed once in `bulk_selection` so that every
statement of the operation sees the same set (a filter re-run after an UPDATE would not)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import String, bindparam, delete, insert, literal, select, text

from mailroom.contacts.query import ContactFilter, conditions
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.dbtypes import UTCDateTime
from mailroom.core.errors import ApiError
from mailroom.core.ids import new_id
from mailroom.db import ANALYZE_AFTER, bulk_insert
from mailroom.models import BulkSelection, Contact

MAX_CONTACTS = 50_000
ID_CHUNK = 1000
IN_SELECTION = "id IN (SELECT contact_id FROM bulk_selection WHERE run_id = :run)"


@dataclass
class Selection:
    run_id: str
    size: int  # contacts of this workspace selected
    submitted: int  # ids sent (after dropping non-strings), or `size` for a filter

    def subquery(self) -> Any:
        return select(BulkSelection.contact_id).where(BulkSelection.run_id == self.run_id)


async def select_contacts(
    ctx: Context, contact_ids: list[str] | None, contact_filter: ContactFilter | None
) -> Selection:
    run_id = new_id()
    if contact_ids is not None:
        found: list[str] = []
        for start in range(0, len(contact_ids), ID_CHUNK):
            chunk = contact_ids[start : start + ID_CHUNK]
            rows = await ctx.session.scalars(
                select(Contact.id).where(
                    Contact.workspace_id == ctx.workspace_id, Contact.id.in_(chunk)
                )
            )
            found.extend(rows.all())
        await bulk_insert(
            ctx.session, BulkSelection, [{"run_id": run_id, "contact_id": cid} for cid in found]
        )
        return Selection(run_id, len(found), len(contact_ids))
    assert contact_filter is not None
    chosen = (
        select(literal(run_id, String(36)), Contact.id)
        .where(*conditions(ctx, contact_filter))
        .order_by(Contact.created_at.desc(), Contact.id.desc())
        .limit(MAX_CONTACTS)
    )
    result = await ctx.session.execute(
        insert(BulkSelection).from_select(["run_id", "contact_id"], chosen)
    )
    size = int(getattr(result, "rowcount", 0) or 0)
    if size == 0:
        raise ApiError(404, "No contacts match that filter")
    await refresh_statistics(ctx, size)
    return Selection(run_id, size, size)


async def select_where(ctx: Context, predicate: str, **params: Any) -> Selection:
    """The workspace's contacts for which `predicate` (fixed SQL on `contacts`) holds."""
    run_id = new_id()
    size = await execute(
        ctx,
        "INSERT INTO bulk_selection (run_id, contact_id) SELECT :run, id FROM contacts "
        f"WHERE workspace_id = :ws AND ({predicate})",
        run=run_id,
        **params,
    )
    await refresh_statistics(ctx, size)
    return Selection(run_id, size, size)


async def narrow(ctx: Context, selection: Selection, predicate: str, **params: Any) -> Selection:
    """A sub-selection: the selected contacts for which `predicate` (fixed SQL on `c`) holds."""
    run_id = new_id()
    result = await ctx.session.execute(
        text(
            "INSERT INTO bulk_selection (run_id, contact_id) SELECT :new_run, c.id FROM contacts c "
            "JOIN bulk_selection s ON s.contact_id = c.id AND s.run_id = :run "
            f"WHERE c.workspace_id = :ws AND ({predicate})"
        ),
        {"new_run": run_id, "run": selection.run_id, "ws": ctx.workspace_id, **params},
    )
    size = int(getattr(result, "rowcount", 0) or 0)
    await refresh_statistics(ctx, size)
    return Selection(run_id, size, size)


async def change_selected(
    ctx: Context,
    selection: Selection,
    statement: str,
    *,
    returning: str,
    predicate: str,
    track: bool,
    **params: Any,
) -> Selection | int:
    """Run `statement`: one fixed INSERT ... SELECT / UPDATE / DELETE over the selection
    (`:run`). Without `track`, returns how many rows it changed. With `track`, the contacts it
    changed become a new selection, for their events: PostgreSQL feeds the statement's
    `RETURNING <returning>` (a contact id) straight into it; SQLite, which has no DML in a
    CTE, first narrows the selection by `predicate` (fixed SQL on `c`: the contacts the
    statement will change) and runs the statement over that."""
    if not track:
        return await execute(ctx, statement, run=selection.run_id, **params)
    if ctx.dialect == "postgresql":
        run_id = new_id()
        size = await execute(
            ctx,
            f"WITH changed AS ({statement} RETURNING {returning}) "
            "INSERT INTO bulk_selection (run_id, contact_id) SELECT :new_run, * FROM changed",
            run=selection.run_id,
            new_run=run_id,
            **params,
        )
        await refresh_statistics(ctx, size)
        return Selection(run_id, size, size)
    changing = await narrow(ctx, selection, predicate, **params)
    await execute(ctx, statement, run=changing.run_id, **params)
    return changing


def update_sql(assignments: str, predicate: str) -> str:
    """UPDATE the selected contacts for which `predicate` (fixed SQL on `c`) holds."""
    return (
        f"UPDATE contacts AS c SET {assignments} "
        f"WHERE c.workspace_id = :ws AND c.{IN_SELECTION} AND ({predicate})"
    )


async def refresh_statistics(ctx: Context, added: int) -> None:
    """PostgreSQL plans the next statements from statistics that still think the scratch table
    is empty; after a large fill, refresh them (milliseconds) rather than risk a nested loop."""
    if ctx.dialect == "postgresql" and added >= ANALYZE_AFTER:
        await ctx.session.execute(text("ANALYZE bulk_selection"))


async def release(ctx: Context, *selections: Selection) -> None:
    await ctx.session.execute(
        delete(BulkSelection).where(BulkSelection.run_id.in_([s.run_id for s in selections]))
    )


async def execute(ctx: Context, sql: str, **params: Any) -> int:
    """Run one fixed statement; `:ws` and `:now` are supplied. Returns rows affected."""
    statement = text(sql)
    values = {"ws": ctx.workspace_id, **params}
    if ":now" in sql:
        statement = statement.bindparams(bindparam("now", type_=UTCDateTime()))
        values["now"] = utcnow()
    result = await ctx.session.execute(statement, values)
    return int(getattr(result, "rowcount", 0) or 0)
