"""A new workspace (`/app/workspaces/new`): an admin of the current workspace opens another in
the same account (same plan, contacts pooled), becomes its admin and is moved into it. It may
start from a blueprint of the account (the starters among them): the blueprint is applied for
real with `on_conflict` skip in the same transaction that makes the workspace, so a blueprint
that cannot be applied (a plan cap, a webhook URL the guard refuses) leaves no workspace
behind, and the answer shows what was made and each new webhook endpoint's secret this once.

As the blueprint pages do, the page's transaction is ended before the webhook URLs are checked
(DNS), so no connection is held while names resolve.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from mailroom.blueprints import service as blueprints
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.dashboard import render
from mailroom.dashboard.blueprint_pages import plan_view
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, undo
from mailroom.people import service as people
from mailroom.people import sessions

router = APIRouter(include_in_schema=False)
PATH = "/app/workspaces"
# The select offers the account's first 100 blueprints (starters first, then newest).
OFFERED = 100
NOT_APPLIED = "No workspace was made: the blueprint could not be applied. {reason}"


async def _form_page(
    visitor: Visitor,
    ctx: Context,
    *,
    name: str = "",
    chosen: str = "",
    problem: str = "",
    status: int = 200,
) -> Response:
    found, _total = await blueprints.list_blueprints(ctx, PageParams(1, OFFERED))
    if chosen and chosen not in {b.id for b in found}:
        # Linked from an older blueprint's page: offered too, so the link means what it says.
        try:
            found.append(await blueprints.get_blueprint(ctx, _blueprint_id(chosen)))
        except ApiError:
            chosen = ""
    return render.page(
        "workspace_new.html",
        status=status,
        title="New workspace",
        section="workspace-new",
        visitor=visitor,
        name=name,
        chosen=chosen,
        offered=[blueprints.as_dict(b) for b in found],
        problem=problem,
        plan_label=ctx.principal.plan.label,
        flashes=sessions.take_flash(visitor.row),
    )


def _blueprint_id(value: str) -> str:
    """What was posted, if it can name a blueprint at all (no NUL for the database to refuse)."""
    if not value.isprintable() or len(value) > 64:
        raise ApiError(404, "Blueprint not found")
    return value


@router.get(PATH + "/new")
async def new_workspace_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return await _form_page(visitor, ctx, chosen=request.query_params.get("blueprint") or "")

    return await as_visitor(request, work, admin=True)


@router.post(PATH)
async def create_workspace(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        name = str(form.get("name") or "")
        chosen = str(form.get("blueprint") or "")
        try:
            document = None
            blueprint_name = ""
            if chosen:
                blueprint = await blueprints.get_blueprint(ctx, _blueprint_id(chosen))
                document, blueprint_name = blueprint.document, blueprint.name
            await ctx.session.commit()  # the URLs' names are resolved next: hold no connection
            verdicts = await blueprints.url_verdicts(ctx, document) if document else {}
            workspace = await people.open_workspace(
                ctx.session, visitor.person, ctx.principal.account_id, name
            )
            inside = Context(
                ctx.session,
                await people.principal_for(ctx.session, visitor.person, workspace.id),
                ctx.settings,
            )
            answer = None
            if document is not None:
                try:
                    answer = await blueprints.set_up_new_workspace(inside, document, verdicts)
                except ApiError as exc:
                    raise ApiError(exc.status, NOT_APPLIED.format(reason=exc.message)) from None
        except ApiError as problem:
            await undo(ctx.session, visitor)
            return await _form_page(
                visitor,
                ctx,
                name=name,
                chosen=chosen,
                problem=problem.message,
                status=problem.status,
            )
        audit_write(inside, request, "create_workspace", workspace.id, 201)
        if answer is not None:
            audit_write(inside, request, "apply_blueprint", chosen, 200)
        visitor.row.workspace_id = workspace.id
        await people.joined(ctx.session, visitor.person.id, workspace.id)
        if answer is None:
            sessions.flash(
                visitor.row, "ok", f"Workspace “{workspace.name}” created: you are its admin."
            )
            return RedirectResponse("/app", status_code=303)
        # The answer is drawn in the new workspace's frame (its secrets are shown only here).
        visitor.memberships = await people.workspaces_of(ctx.session, visitor.person)
        visitor.principal = inside.principal
        return render.page(
            "workspace_new.html",
            title=f"Workspace “{workspace.name}” created",
            section="workspace-new",
            visitor=visitor,
            made={
                "name": workspace.name,
                "blueprint": blueprint_name,
                "automations": any(r["part"] == "automations" for r in answer["plan"]),
            },
            plan=plan_view(answer, "skip"),
        )

    return await as_visitor(request, work, admin=True)
