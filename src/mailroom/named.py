"""The shape tags, lists, templates, segments, campaigns, automations and forms share: a named
row of one workspace, its name unique ignoring case, created, renamed (409 on a clash), paged
and deleted, with the same messages everywhere.

A model takes part by having `id`, `workspace_id`, `name`, `name_key` (the casefolded name,
with a unique constraint on `(workspace_id, name_key)`), `created_at` and `updated_at`; its
service holds one `Named(...)` and keeps only what is its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import ColumnElement, delete, func, select
from sqlalchemy.exc import IntegrityError

from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.core.text import contains_pattern, fold

Row = TypeVar("Row")


def clean_name(value: Any, max_length: int, field: str = "name") -> str:
    """Required text, trimmed, inner whitespace folded to one space, at most `max_length`."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ApiError(400, f"{field} is required")
    if not isinstance(value, str):
        raise ApiError(400, f"{field} must be a string")
    name = " ".join(value.split())
    if len(name) > max_length:
        raise ApiError(400, f"{field} must be {max_length} characters or fewer")
    return name


@dataclass(frozen=True)
class Named(Generic[Row]):
    model: type[Row]
    noun: str  # "tag", "list", "template": used in messages
    max_name: int
    newest_first: bool = False  # listing order; else by name

    @property
    def _table(self) -> Any:
        return self.model

    @property
    def not_found(self) -> str:
        return f"{self.noun.capitalize()} not found"

    @property
    def taken(self) -> str:
        article = "An" if self.noun[0] in "aeiou" else "A"
        return f"{article} {self.noun} with this name already exists"

    def clean_name(self, value: Any) -> str:
        return clean_name(value, self.max_name)

    async def get(self, ctx: Context, row_id: Any) -> Row:
        """The workspace's row, or 404 (another workspace's id is unknown here)."""
        table = self._table
        found: Row | None = None
        if isinstance(row_id, str) and row_id:
            found = await ctx.session.scalar(
                select(table).where(table.id == row_id, table.workspace_id == ctx.workspace_id)
            )
        if found is None:
            raise ApiError(404, self.not_found)
        return found

    async def find_by_name(self, ctx: Context, name: str) -> Row | None:
        table = self._table
        found: Row | None = await ctx.session.scalar(
            select(table).where(
                table.workspace_id == ctx.workspace_id, table.name_key == fold(name)
            )
        )
        return found

    async def claim_name(self, ctx: Context, value: Any, *, except_id: str | None = None) -> str:
        """`value` as a name for a new (or the `except_id`) row: cleaned, and free (409
        naming the row that holds it)."""
        name = self.clean_name(value)
        existing: Any = await self.find_by_name(ctx, name)
        if existing is not None and existing.id != except_id:
            raise ApiError(409, self.taken, id=existing.id)
        return name

    async def create(self, ctx: Context, name: str, **fields: Any) -> Row:
        """A new row with a name `claim_name` gave, and `fields`; flushed."""
        now = utcnow()
        make: Any = self.model
        row: Row = make(
            workspace_id=ctx.workspace_id,
            name=name,
            name_key=fold(name),
            created_at=now,
            updated_at=now,
            **fields,
        )
        ctx.session.add(row)
        await self.flush(ctx)
        return row

    async def rename(self, ctx: Context, row: Any, value: Any) -> None:
        name = await self.claim_name(ctx, value, except_id=row.id)
        row.name, row.name_key = name, fold(name)

    def touch(self, row: Any) -> None:
        row.updated_at = utcnow()

    async def flush(self, ctx: Context) -> None:
        """Flush, answering a concurrent request that took the name meanwhile with 409."""
        try:
            await ctx.session.flush()
        except IntegrityError:
            raise ApiError(409, self.taken) from None

    async def page(
        self,
        ctx: Context,
        page: PageParams,
        *,
        q: str | None = None,
        where: Sequence[ColumnElement[bool]] = (),
    ) -> tuple[list[Row], int]:
        """One page (newest first or by name; `q`: substring of the name) and the total."""
        table = self._table
        conditions = [table.workspace_id == ctx.workspace_id, *where]
        if q and q.strip():
            conditions.append(table.name_key.like(contains_pattern(q.strip()), escape="\\"))
        total = int(await ctx.session.scalar(select(func.count()).where(*conditions)) or 0)
        order = (
            (table.created_at.desc(), table.id.desc())
            if self.newest_first
            else (table.name_key, table.id)
        )
        rows = await ctx.session.scalars(
            select(table).where(*conditions).order_by(*order).offset(page.offset).limit(page.limit)
        )
        return list(rows.all()), total

    async def delete(self, ctx: Context, row: Any) -> None:
        table = self._table
        await ctx.session.execute(
            delete(table).where(table.id == row.id, table.workspace_id == ctx.workspace_id)
        )


async def known_ids(ctx: Context, model: Any, refs: list[tuple[str, str]], message: str) -> None:
    """Ids a request names (`(place, id)`) must be rows of `model` in this workspace: else 400
    `<place>: <message>` for the first that is not (another workspace's id included)."""
    if not refs:
        return
    found = set(
        (
            await ctx.session.scalars(
                select(model.id).where(
                    model.workspace_id == ctx.workspace_id, model.id.in_({i for _, i in refs})
                )
            )
        ).all()
    )
    for place, given in refs:
        if given not in found:
            raise ApiError(400, f"{place}: {message}")
