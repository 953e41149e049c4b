"""People of a workspace (admins invite, change roles, remove) and resetting a forgotten
password. Invitations and resets are emailed from the installation's own sender
(`MAILROOM_SYSTEM_FROM`) through the sending engine; without one, an invitation's link is
shown to the admin to pass on, and a reset can be made by the operator
(`mailroom admin sign-in-link`)."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from mailroom.accounts import service as accounts
from mailroom.core.context import Context
from mailroom.dashboard import render
from mailroom.dashboard.frame import (
    Visitor,
    as_visitor,
    audit_write,
    over_limit,
    pre_session_ok,
    pre_session_token,
    with_pre_session_cookie,
)
from mailroom.people import emails, sessions
from mailroom.people import service as people
from mailroom.sending import transactional
from mailroom.web.deps import get_db, get_settings_dep

router = APIRouter(include_in_schema=False)
log = logging.getLogger("mailroom.dashboard")
RESETS_PER_ADDRESS = 3  # an hour
RESETS_PER_IP = 20


async def _people_page(
    visitor: Visitor, ctx: Context, *, link: dict[str, str] | None = None, status: int = 200
) -> Response:
    listed = await people.people_of(ctx.session, ctx.workspace_id)
    rows = [
        {
            "person_id": p.person_id,
            "email": p.email,
            "role": p.role,
            "since": p.joined.strftime("%Y-%m-%d") if p.joined else "",
            "has_password": p.has_password,
        }
        for p in listed
    ]
    return render.page(
        "people.html",
        status=status,
        title="People",
        section="people",
        visitor=visitor,
        people=rows,
        link=link,
        flashes=sessions.take_flash(visitor.row),
    )


@router.get("/settings/people")
async def people_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return await _people_page(visitor, ctx)

    return await as_visitor(request, work, admin=True)


@router.post("/settings/people")
async def invite_person(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        role = str(form.get("role") or "member")
        person = await people.invite(
            ctx.session,
            ctx.principal.account_id,
            ctx.workspace_id,
            str(form.get("email") or ""),
            role,
        )
        audit_write(ctx, request, "invite_person", person.id, 201)
        link = people.sign_in_link(ctx.settings, person)
        if not ctx.settings.system_from:
            sessions.flash(visitor.row, "ok", f"{person.email} is in {visitor.workspace_name}.")
            return await _people_page(
                visitor, ctx, link={"email": person.email, "url": link}, status=201
            )
        message = emails.invitation(visitor.email, visitor.workspace_name, role, link)
        await transactional.queue_system(
            ctx, email=person.email, contact_id=None, message=message, operator=True
        )
        sessions.flash(visitor.row, "ok", f"Invitation sent to {person.email}.")
        return RedirectResponse("/settings/people", status_code=303)

    return await as_visitor(request, work, admin=True)


@router.post("/settings/people/{person_id}/role")
async def change_person_role(person_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        role = str(form.get("role") or "")
        await people.change_role(ctx.session, ctx.workspace_id, person_id, role)
        audit_write(ctx, request, "change_person_role", person_id, 200)
        sessions.flash(visitor.row, "ok", f"Role changed to {role}.")
        return RedirectResponse("/settings/people", status_code=303)

    return await as_visitor(request, work, admin=True)


@router.get("/settings/people/{person_id}/remove")
async def remove_person_page(person_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        found = [
            p
            for p in await people.people_of(ctx.session, ctx.workspace_id)
            if p.person_id == person_id
        ]
        if not found:
            return render.message(
                "Person not found", "Nobody here has that id.", 404, visitor=visitor
            )
        return render.page(
            "remove_person.html",
            title="Remove a person",
            section="people",
            visitor=visitor,
            person_id=person_id,
            email=found[0].email,
        )

    return await as_visitor(request, work, admin=True)


@router.post("/settings/people/{person_id}/remove")
async def remove_person(person_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        await people.remove(ctx.session, ctx.workspace_id, person_id)
        audit_write(ctx, request, "remove_person", person_id, 200)
        sessions.flash(visitor.row, "ok", "They are removed from this workspace.")
        target = "/app" if person_id == visitor.person.id else "/settings/people"
        return RedirectResponse(target, status_code=303)

    return await as_visitor(request, work, admin=True)


# ---------------------------------------------------------------- a forgotten password


@router.get("/app/forgot")
async def forgot_page(request: Request) -> Response:
    token = pre_session_token(request)
    response = render.page(
        "forgot.html", title="Reset your password", main_class="narrow", csrf=token, sent=False
    )
    return with_pre_session_cookie(response, get_settings_dep(request), token)


@router.post("/app/forgot")
async def send_reset(request: Request) -> Response:
    """The same answer whether or not the address has an account."""
    db, settings = get_db(request), get_settings_dep(request)
    raw = await request.form()
    if not pre_session_ok(request, raw.get("csrf")):
        return render.message(
            "This form has expired", "Reload the page and try again.", 403, main_class="narrow"
        )
    email = str(raw.get("email") or "").strip()
    ip = request.client.host if request.client else "unknown"
    answer = render.page(
        "forgot.html", title="Reset your password", main_class="narrow", csrf="", sent=True
    )
    async with db.transaction() as session:
        if await over_limit(
            session,
            3600,
            (f"reset:address:{email.casefold()}", RESETS_PER_ADDRESS),
            (f"reset:ip:{ip}", RESETS_PER_IP),
        ):
            return answer  # quietly: no more emails to that address this hour
        person = await people.by_email(session, email)
        memberships = await people.workspaces_of(session, person) if person else []
        if person is None or not memberships:
            return answer
        if not settings.system_from:
            log.warning("password reset for %s not sent: MAILROOM_SYSTEM_FROM is not set", email)
            return answer
        principal = await accounts.principal_for_workspace(session, memberships[0].workspace_id)
        ctx = Context(session, principal, settings)
        message = emails.password_reset(people.sign_in_link(settings, person))
        await transactional.queue_system(
            ctx, email=person.email, contact_id=None, message=message, operator=True
        )
    return answer
