"""The OAuth consent page: a signed-in person sees which application asks, where it will send
them back, and what it wants; picks one of their workspaces, may untick permissions, and
approves or declines. (`assistants.consent` holds what they answer, `assistants.oauth` the
protocol side.)"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from mailroom.assistants import consent
from mailroom.assistants import service as assistants
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write
from mailroom.people import service as people

router = APIRouter(include_in_schema=False)
PATH = consent.CONSENT_PATH


def _gone(visitor: Visitor) -> Response:
    return render.message(
        "This connection request has expired",
        "Requests to connect an application last 15 minutes and work once. Start again "
        "from the application.",
        404,
        visitor=visitor,
        back="/app",
        back_label="Back to the overview",
    )


def _budget(value: Any) -> int | None:
    text = str(value or "").strip()
    if not text:
        return None
    if not text.isdecimal():
        raise ApiError(400, "The daily recipient budget must be a whole number, or empty.")
    return assistants.budget(int(text))


def _csp(redirect_uri: str) -> str:
    """The dashboard's policy, with the client's redirect allowed as the form's destination:
    browsers refuse a form whose answer redirects where `form-action` does not allow."""
    target = consent.form_target_source(redirect_uri)
    return render.CSP.replace("form-action 'self'", f"form-action 'self' {target}")


@router.get(f"{PATH}/{{request_id}}")
async def consent_page(request_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        asked = await consent.pending(ctx.session, request_id)
        if asked is None:
            return _gone(visitor)
        workspaces = []
        for membership in visitor.memberships:
            allowed = assistants.role_allows(membership.role)
            workspaces.append(
                {
                    "id": membership.workspace_id,
                    "name": membership.name or membership.workspace_id,
                    "role": membership.role,
                    "withheld": [p for p in asked.scopes if p not in allowed],
                }
            )
        if not any(membership.role == "admin" for membership in visitor.memberships):
            # A member everywhere could grant none of them: the page leaves them out.
            offered = [p for p in asked.scopes if p not in assistants.ADMIN_ONLY]
            asked = replace(asked, scopes=offered)
        return render.page(
            "consent.html",
            title=f"Connect {asked.client_name}",
            section="assistants",
            visitor=visitor,
            asked=asked,
            workspaces=workspaces,
            admin_only=sorted(assistants.ADMIN_ONLY),
            approval_default="campaigns:send" in asked.scopes,
            headers={"Content-Security-Policy": _csp(asked.redirect_uri)},
        )

    return await as_visitor(request, work)


@router.post(f"{PATH}/{{request_id}}")
async def consent_answer(request_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        asked = await consent.pending(ctx.session, request_id)
        if asked is None:
            return _gone(visitor)
        if form.get("decision") != "allow":
            target = await consent.deny(ctx.session, asked)
            return RedirectResponse(target, status_code=303)
        workspace_id = str(form.get("workspace_id") or visitor.workspace_id)
        principal = await people.principal_for(ctx.session, visitor.person, workspace_id)
        target = await consent.approve(
            ctx.session,
            asked,
            principal,
            permissions=list(form.get("permission") or []),
            requires_approval=form.get("requires_approval") == "on",
            daily_recipient_budget=_budget(form.get("daily_recipient_budget")),
            name=" ".join(str(form.get("name") or "").split()),
        )
        acting = Context(ctx.session, principal, ctx.settings)
        audit_write(acting, request, "connect_assistant", asked.client_id, 303)
        return RedirectResponse(target, status_code=303)

    return await as_visitor(request, work)
