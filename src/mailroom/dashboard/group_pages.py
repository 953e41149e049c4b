"""Lists and tags (`/app/lists`, `/app/tags`): the named groups of contacts, each listed with
its counts, created, changed (renamed: a clash is the API's 409 message) and deleted after a
question, on `lists.service` and `tags.service`. The two share one page shape (`Group`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, refused
from mailroom.lists import service as lists
from mailroom.people import sessions
from mailroom.tags import service as tags

router = APIRouter(include_in_schema=False)
SHOWN = 500  # groups on one page; workspaces have tens, not thousands


@dataclass(frozen=True)
class Group:
    kind: str  # list | tag
    title: str
    rows: Callable[[Context], Awaitable[list[dict[str, Any]]]]
    create: Callable[[Context, dict[str, Any]], Awaitable[Any]]
    update: Callable[[Context, str, dict[str, Any]], Awaitable[Any]]
    delete: Callable[[Context, str], Awaitable[int]]
    get: Callable[[Context, str], Awaitable[Any]]
    body: Callable[[dict[str, Any]], dict[str, Any]]  # the form as the service's body

    @property
    def path(self) -> str:
        return f"/app/{self.kind}s"


async def _list_rows(ctx: Context) -> list[dict[str, Any]]:
    rows, _ = await lists.list_lists(ctx, PageParams(1, SHOWN))
    counts = await lists.member_counts(ctx, [m.id for m in rows])
    return [lists.as_dict(ctx, m, counts[m.id]) for m in rows]


async def _tag_rows(ctx: Context) -> list[dict[str, Any]]:
    rows, _ = await tags.list_tags(ctx, PageParams(1, SHOWN), None)
    counts = await tags.contact_counts(ctx, [t.id for t in rows])
    return [tags.as_dict(t, counts.get(t.id, 0)) for t in rows]


def _list_body(form: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": str(form.get("name") or ""),
        "description": str(form.get("description") or ""),
        "double_opt_in": form.get("double_opt_in") == "on",
    }


def _tag_body(form: dict[str, Any]) -> dict[str, Any]:
    return {"name": str(form.get("name") or ""), "color": str(form.get("color") or "#6366f1")}


async def _create_tag(ctx: Context, body: dict[str, Any]) -> Any:
    return await tags.create_tag(ctx, body["name"], body["color"])


GROUPS = {
    "lists": Group(
        "list",
        "Lists",
        _list_rows,
        lists.create_list,
        lists.update_list,
        lists.delete_list,
        lists.get_list,
        _list_body,
    ),
    "tags": Group(
        "tag",
        "Tags",
        _tag_rows,
        _create_tag,
        tags.update_tag,
        tags.delete_tag,
        tags.get_tag,
        _tag_body,
    ),
}


async def _page(
    visitor: Visitor, ctx: Context, group: Group, *, status: int = 200, draft: Any = None
) -> Response:
    return render.page(
        "groups.html",
        status=status,
        title=group.title,
        section=f"{group.kind}s",
        visitor=visitor,
        group=group,
        rows=await group.rows(ctx),
        draft=draft or {},
        flashes=sessions.take_flash(visitor.row),
    )


def _add_routes(kinds: str, group: Group) -> None:
    """The five pages of one kind of group (explicit paths: `/app/{kinds}` would also
    match every other page under /app)."""

    @router.get(f"/app/{kinds}")
    async def groups_page(request: Request) -> Response:
        async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
            return await _page(visitor, ctx, group)

        return await as_visitor(request, work)

    @router.post(f"/app/{kinds}")
    async def create_group(request: Request) -> Response:
        async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
            body = group.body(form)
            try:
                made = await group.create(ctx, body)
            except ApiError as problem:
                await refused(ctx, visitor, problem)
                return await _page(visitor, ctx, group, status=problem.status, draft=body)
            audit_write(ctx, request, f"create_{group.kind}", made.id, 201)
            sessions.flash(visitor.row, "ok", f"{group.kind.capitalize()} “{made.name}” created.")
            return RedirectResponse(group.path, status_code=303)

        return await as_visitor(request, work)

    @router.get(f"/app/{kinds}/{{group_id}}")
    async def group_page(group_id: str, request: Request) -> Response:
        async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
            row = next((r for r in await group.rows(ctx) if r["id"] == group_id), None)
            if row is None:
                await group.get(ctx, group_id)  # the API's 404 message
                raise ApiError(404, "Page not found")
            return render.page(
                "group.html",
                title=row["name"],
                section=f"{group.kind}s",
                visitor=visitor,
                group=group,
                row=row,
                flashes=sessions.take_flash(visitor.row),
            )

        return await as_visitor(request, work)

    @router.post(f"/app/{kinds}/{{group_id}}")
    async def change_group(group_id: str, request: Request) -> Response:
        async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
            try:
                changed = await group.update(ctx, group_id, group.body(form))
            except ApiError as problem:
                if problem.status == 404:
                    raise
                await refused(ctx, visitor, problem)
                return RedirectResponse(f"{group.path}/{group_id}", status_code=303)
            audit_write(ctx, request, f"update_{group.kind}", group_id, 200)
            sessions.flash(visitor.row, "ok", f"{group.kind.capitalize()} “{changed.name}” saved.")
            return RedirectResponse(group.path, status_code=303)

        return await as_visitor(request, work)

    @router.post(f"/app/{kinds}/{{group_id}}/delete")
    async def delete_group(group_id: str, request: Request) -> Response:
        async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
            name = (await group.get(ctx, group_id)).name
            count = await group.delete(ctx, group_id)
            audit_write(ctx, request, f"delete_{group.kind}", group_id, 200)
            whom = f"{count:,} contact{'s' if count != 1 else ''}"
            sessions.flash(
                visitor.row, "ok", f"{group.kind.capitalize()} “{name}” deleted ({whom} left it)."
            )
            return RedirectResponse(group.path, status_code=303)

        return await as_visitor(request, work)


for _kinds, _group_kind in GROUPS.items():
    _add_routes(_kinds, _group_kind)
