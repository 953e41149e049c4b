"""People of a workspace (admins invite, change roles, remove) and resetting a forgotten
password. Invitations, access notices and resets are emailed from the installation's own
sender (`MAILROOM_SYSTEM_FROM`) through the sending engine, counted against the inviting
account's monthly allowance like other system mail. A sign-in link only ever goes to the
person's mailbox: without such a sender nothing is emailed, and the operator can print a link
(`mailroom admin sign-in-link`)."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from mailroom.accounts import service as accounts
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
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
# Reset requests an hour: per address from one client, and per client. A stranger's client
# running out never stops the owner's; the daily cap per address only bounds the mail.
RESETS_PER_ADDRESS_AND_CLIENT = 3
RESETS_PER_CLIENT = 20
RESET_MAILS_PER_ADDRESS = 10  # a day
# Invitations: per inviting person an hour, per workspace a day.
INVITES_PER_PERSON = 20
INVITES_PER_WORKSPACE = 100


async def _people_page(visitor: Visitor, ctx: Context, *, status: int = 200) -> Response:
    listed = await people.people_of(ctx.session, ctx.workspace_id)
    rows = [
        {
            "person_id": p.person_id,
            "email": p.email,
            "role": p.role,
            "since": p.since.strftime("%Y-%m-%d") if p.since else "",
            "joined": p.joined,
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
        flashes=sessions.take_flash(visitor.row),
    )


@router.get("/settings/people")
async def people_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return await _people_page(visitor, ctx)

    return await as_visitor(request, work, admin=True)


async def _invitations_left(visitor: Visitor, ctx: Context) -> Response | None:
    """Count this invitation; the refusal page when the person or the workspace has sent
    too many."""
    for key, limit, window in (
        (f"invite:person:{visitor.person.id}", INVITES_PER_PERSON, 3600),
        (f"invite:workspace:{ctx.workspace_id}", INVITES_PER_WORKSPACE, 86400),
    ):
        refused = await over_limit(ctx.session, window, (key, limit))
        if refused is not None:
            minutes = max(1, round(refused.retry_after / 60))
            return render.message(
                "Too many invitations",
                f"Wait {minutes} minute{'s' if minutes != 1 else ''} and try again.",
                429,
                visitor=visitor,
                headers={"Retry-After": str(refused.retry_after)},
                back="/settings/people",
            )
    return None


@router.post("/settings/people")
async def invite_person(request: Request) -> Response:
    """The admin's answer is the same whether the address is new, a person of this account
    or of another one; only a new person is sent a sign-in link, to their own mailbox."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        email = people.clean_email(str(form.get("email") or ""))
        role = people.clean_role(str(form.get("role") or "member"))
        refused = await _invitations_left(visitor, ctx)
        if refused is not None:
            return refused
        invited = await people.invite(ctx.session, ctx.workspace_id, email, role)
        person = invited.person
        audit_write(ctx, request, "invite_person", person.id, 201)
        if invited.was_member:  # listed on this page already: nothing to send
            shown = "an admin" if role == "admin" else "a member"
            sessions.flash(visitor.row, "ok", f"{person.email} is now {shown} here.")
            return RedirectResponse("/settings/people", status_code=303)
        if not ctx.settings.system_from:
            sessions.flash(
                visitor.row,
                "ok",
                f"{person.email} is invited to {visitor.workspace_name}, but nothing was "
                "emailed: this installation has no sender for its own mail "
                "(MAILROOM_SYSTEM_FROM). Tell them to sign in; someone without a password yet "
                "gets a link from the operator (mailroom admin sign-in-link --email "
                f"{person.email}).",
            )
            return RedirectResponse("/settings/people", status_code=303)
        base = ctx.settings.public_url.rstrip("/")
        if invited.new_person:
            link = people.sign_in_link(ctx.settings, person)
            message = emails.invitation(visitor.email, visitor.workspace_name, role, link)
        else:
            message = emails.access_granted(
                visitor.email,
                visitor.workspace_name,
                role,
                f"{base}/app/sign-in",
                f"{base}/app/forgot",
            )
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
    """The same answer whether or not the address has an account, and whether or not a
    limit held the email back."""
    db, settings = get_db(request), get_settings_dep(request)
    raw = await request.form()
    if not pre_session_ok(request, raw.get("csrf")):
        return render.message(
            "This form has expired", "Reload the page and try again.", 403, main_class="narrow"
        )
    email = str(raw.get("email") or "").strip()
    address = email.casefold()
    client = request.client.host if request.client else "unknown"
    answer = render.page(
        "forgot.html", title="Reset your password", main_class="narrow", csrf="", sent=True
    )
    async with db.transaction() as session:
        if await over_limit(
            session,
            3600,
            (
                people.limit_key("reset:address+client", address, client),
                RESETS_PER_ADDRESS_AND_CLIENT,
            ),
            (people.limit_key("reset:client", client), RESETS_PER_CLIENT),
        ):
            return answer  # quietly: no more emails for this client this hour
        person = await people.by_email(session, email)
        memberships = await people.workspaces_of(session, person) if person else []
        if person is None or not memberships:
            return answer
        if not settings.system_from:
            log.warning("password reset for %s not sent: MAILROOM_SYSTEM_FROM is not set", email)
            return answer
        if await over_limit(
            session, 86400, (people.limit_key("reset:mail", person.email), RESET_MAILS_PER_ADDRESS)
        ):
            return answer
        principal = await accounts.principal_for_workspace(session, memberships[0].workspace_id)
        ctx = Context(session, principal, settings)
        message = emails.password_reset(people.sign_in_link(settings, person))
        try:  # the allowance refuses before anything is written
            await transactional.queue_system(
                ctx, email=person.email, contact_id=None, message=message, operator=True
            )
        except ApiError as problem:  # the account's monthly allowance is used up
            log.warning("password reset for %s not sent: %s", email, problem.message)
    return answer
