"""The dashboard's frame, sign-in and the API keys page.

Every page runs in one transaction with the signed-in person as the principal (a role per
workspace: admins hold every permission, members all but the admin's), so the services, their
rules and the audit log are the API's. Forms post back with the session's CSRF token (403
without it); pages work without JavaScript.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, RedirectResponse, Response
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.accounts import service as accounts
from mailroom.core.auth import PERMISSIONS
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.dashboard import render
from mailroom.dashboard.frame import (
    PRE_CSRF,
    Visitor,
    as_visitor,
    audit_write,
    local_path,
    over_limit,
    pre_session_ok,
    pre_session_token,
    set_session_cookie,
    when,
    with_pre_session_cookie,
)
from mailroom.models import ApiKey, DashboardSession, Person
from mailroom.people import service as people
from mailroom.people import sessions
from mailroom.settings import Settings
from mailroom.web.deps import get_db, get_settings_dep

router = APIRouter(include_in_schema=False)

SIGN_IN_WINDOW = 900
# Attempts per window for one address from one client, and for one client in all. Keyed by
# address *and* client, a stranger's client that runs out never shuts the owner's out.
SIGN_IN_PER_ADDRESS_AND_CLIENT = 10
SIGN_IN_PER_CLIENT = 50
PRESETS = (
    ("full", "Full access"),
    ("read", "Read-only"),
    ("sending", "Sending only"),
    ("chosen", "Chosen below"),
)
SENDING = ("transactional:send", "campaigns:send", "campaigns:read", "templates:read")


# ---------------------------------------------------------------- static files


@router.get("/static/{name}")
async def static_file(name: str) -> Response:
    path = render.static_file(name)
    if path is None:
        return Response(status_code=404)
    kind = {".css": "text/css", ".js": "text/javascript"}.get(path.suffix, "text/plain")
    return FileResponse(
        path,
        media_type=kind,
        headers={"Cache-Control": "public, max-age=31536000, immutable"},
    )


# ---------------------------------------------------------------- signing in and out


def _sign_in_action(request: Request) -> str:
    """The form posts back with the page asked for, so signing in leads there."""
    wanted = request.query_params.get("next")
    return f"/app/sign-in?next={quote(local_path(wanted))}" if wanted else "/app/sign-in"


@router.get("/app/sign-in")
async def sign_in_page(request: Request) -> Response:
    token = pre_session_token(request)
    notice = "You are signed out." if request.query_params.get("signed_out") else None
    response = render.page(
        "sign_in.html",
        title="Sign in",
        main_class="narrow",
        csrf=token,
        email="",
        error=None,
        action=_sign_in_action(request),
        flashes=[{"kind": "ok", "text": notice}] if notice else [],
    )
    return with_pre_session_cookie(response, get_settings_dep(request), token)


@router.post("/app/sign-in")
async def sign_in(request: Request) -> Response:
    db, settings = get_db(request), get_settings_dep(request)
    raw = await request.form()
    email = str(raw.get("email") or "").strip()
    password = str(raw.get("password") or "")
    if not pre_session_ok(request, raw.get("csrf")):
        return render.message(
            "This form has expired",
            "Reload the sign-in page and try again.",
            403,
            main_class="narrow",
            back="/app/sign-in",
        )
    client = request.client.host if request.client else "unknown"
    async with db.transaction() as session:
        refused = await over_limit(
            session,
            SIGN_IN_WINDOW,
            (
                people.limit_key("sign-in:address+client", email.casefold(), client),
                SIGN_IN_PER_ADDRESS_AND_CLIENT,
            ),
            (people.limit_key("sign-in:client", client), SIGN_IN_PER_CLIENT),
        )
        if refused is not None:
            minutes = max(1, round(refused.retry_after / 60))
            return render.message(
                "Too many attempts",
                f"Wait {minutes} minute{'s' if minutes != 1 else ''} and try again.",
                429,
                main_class="narrow",
                headers={"Retry-After": str(refused.retry_after)},
                back="/app/sign-in",
            )
        person = await people.authenticate(session, email, password)
        memberships = await people.workspaces_of(session, person) if person else []
        if person is None or not memberships:
            return render.page(
                "sign_in.html",
                status=400,
                title="Sign in",
                main_class="narrow",
                csrf=str(raw.get("csrf")),
                email=email,
                error="That email and password do not match an account.",
                action=_sign_in_action(request),
            )
        token, _row, target = await _start_session(
            session, person, memberships[0].workspace_id, request.query_params.get("next")
        )
    return _signed_in(settings, token, target)


async def _start_session(
    session: AsyncSession, person: Person, workspace_id: str, wanted: str | None
) -> tuple[str, DashboardSession, str]:
    """(the cookie's token, the session, where to go): a person with two-step sign-in gets a
    session that still needs the code, whichever first factor they gave (password or link)."""
    pending = person.totp_sealed is not None
    token, row = await sessions.start(session, person, workspace_id, pending=pending)
    target = local_path(wanted)
    if pending:
        return token, row, f"/app/sign-in/code?next={quote(target)}"
    await people.joined(session, person.id, workspace_id)
    return token, row, target


def _signed_in(settings: Settings, token: str, target: str) -> Response:
    response = RedirectResponse(target, status_code=303)
    set_session_cookie(response, settings, token)
    response.delete_cookie(PRE_CSRF, path="/app")  # the form's token has served
    return response


_LINK_GONE = (
    "This link is not valid or no longer works",
    "Sign-in links work once, for 3 days. Ask a workspace admin for a new one.",
)


@router.get("/app/link/{token}")
async def sign_in_link_page(token: str, request: Request) -> Response:
    db, settings = get_db(request), get_settings_dep(request)
    async with db.session(write=False) as session:
        person = await people.read_link(session, settings, token)
    if person is None:
        return render.message(*_LINK_GONE, 404, main_class="narrow", back="/app/sign-in")
    csrf = pre_session_token(request)
    response = render.page(
        "set_password.html",
        title="Choose your password",
        main_class="narrow",
        email=person.email,
        action=f"/app/link/{token}",
        csrf=csrf,
        error=None,
    )
    return with_pre_session_cookie(response, settings, csrf)


@router.post("/app/link/{token}")
async def use_sign_in_link(token: str, request: Request) -> Response:
    """Set the password and sign in: the form carries the pre-session CSRF token like the
    sign-in form (another site cannot sign a visitor in as someone else). The link is one
    factor: a person with two-step sign-in still gives the code. Every other session of the
    person ends (whoever held the old password is out)."""
    db, settings = get_db(request), get_settings_dep(request)
    raw = await request.form()
    if not pre_session_ok(request, raw.get("csrf")):
        return render.message(
            "This form has expired",
            "Open the link again and choose your password.",
            403,
            main_class="narrow",
            back=f"/app/link/{token}",
        )
    password = str(raw.get("password") or "")
    async with db.transaction() as session:
        person = await people.read_link(session, settings, token)
        if person is None:
            return render.message(*_LINK_GONE, 404, main_class="narrow", back="/app/sign-in")
        try:
            people.set_password(person, password)
        except ApiError as problem:
            return render.page(
                "set_password.html",
                status=400,
                title="Choose your password",
                main_class="narrow",
                email=person.email,
                action=f"/app/link/{token}",
                csrf=str(raw.get("csrf")),
                error=problem.message,
            )
        await sessions.end_everywhere(session, person.id)
        memberships = await people.workspaces_of(session, person)
        if not memberships:
            return render.message(
                "No workspace yet",
                "Your password is saved, but you are not in any workspace yet. Ask an admin.",
                200,
                main_class="narrow",
            )
        cookie, row, target = await _start_session(
            session, person, memberships[0].workspace_id, "/app"
        )
        sessions.flash(row, "ok", "Your password is saved. Welcome to Mailroom.")
    return _signed_in(settings, cookie, target)


def _signed_out(request: Request) -> Response:
    response = RedirectResponse("/app/sign-in?signed_out=1", status_code=303)
    response.delete_cookie(sessions.COOKIE, path="/")
    return response


@router.post("/app/sign-out")
async def sign_out(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        await sessions.end(ctx.session, request.cookies.get(sessions.COOKIE))
        return _signed_out(request)

    return await as_visitor(request, work)


@router.post("/app/sign-out-everywhere")
async def sign_out_everywhere(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        await sessions.end_everywhere(ctx.session, visitor.person.id)
        return _signed_out(request)

    return await as_visitor(request, work)


# ---------------------------------------------------------------- the frame


@router.post("/app/workspace")
async def switch_workspace(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        wanted = str(form.get("workspace_id") or "")
        chosen = next((m for m in visitor.memberships if m.workspace_id == wanted), None)
        if chosen is None:  # not one of theirs: nothing to say about it
            return render.message(
                "Workspace not found", "You have no workspace with that id.", 404, visitor=visitor
            )
        visitor.row.workspace_id = chosen.workspace_id
        await people.joined(ctx.session, visitor.person.id, chosen.workspace_id)
        sessions.flash(visitor.row, "ok", f"You are now in {chosen.name}.")
        return RedirectResponse("/app", status_code=303)

    return await as_visitor(request, work)


# ---------------------------------------------------------------- API keys


async def _keys_page(
    visitor: Visitor, ctx: Context, *, created: dict[str, str] | None = None, status: int = 200
) -> Response:
    rows = await ctx.session.scalars(
        select(ApiKey)
        .where(ApiKey.workspace_id == ctx.workspace_id)
        .order_by(ApiKey.revoked_at.is_not(None), ApiKey.created_at.desc())
    )
    keys = [
        {
            "id": k.id,
            "name": k.name,
            "lookup": k.lookup,
            "permissions": list(k.permissions or []),
            "all": set(k.permissions or []) >= set(PERMISSIONS),
            "created": when(k.created_at),
            "last_used": when(k.last_used_at),
            "revoked": when(k.revoked_at),
        }
        for k in rows.all()
    ]
    return render.page(
        "api_keys.html",
        status=status,
        title="API keys",
        section="api-keys",
        visitor=visitor,
        keys=keys,
        created=created,
        presets=PRESETS,
        permissions=PERMISSIONS,
        flashes=sessions.take_flash(visitor.row),
    )


def _chosen_permissions(form: dict[str, Any]) -> list[str]:
    """Ticked permissions are exactly what the key gets (the narrowest choice wins, so a
    preset left on "Full access" never widens them); otherwise the preset."""
    ticked = [p for p in form.get("permission") or [] if p in PERMISSIONS]
    if ticked:
        return ticked
    preset = form.get("preset") or "full"
    if preset == "full":
        return list(PERMISSIONS)
    if preset == "read":
        return [p for p in PERMISSIONS if p.endswith(":read")]
    if preset == "sending":
        return list(SENDING)
    chosen = [p for p in form.get("permission") or [] if p in PERMISSIONS]
    if not chosen:
        raise ApiError(400, "Choose at least one permission, or one of the presets.")
    return chosen


@router.get("/settings/api-keys")
async def api_keys_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return await _keys_page(visitor, ctx)

    return await as_visitor(request, work, admin=True)


@router.post("/settings/api-keys")
async def create_api_key_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        try:
            permissions = _chosen_permissions(form)
        except ApiError as problem:
            sessions.flash(visitor.row, "error", problem.message)
            return await _keys_page(visitor, ctx, status=400)
        name = " ".join(str(form.get("name") or "").split())[:100]
        created = await accounts.create_key(
            ctx.session,
            ctx.workspace_id,
            permissions=permissions,
            name=name,
            person_id=visitor.person.id,
        )
        audit_write(ctx, request, "create_api_key", created.key.id, 201)
        shown = {"name": name, "secret": created.secret}
        return await _keys_page(visitor, ctx, created=shown, status=201)

    return await as_visitor(request, work, admin=True)


async def _workspace_key(ctx: Context, key_id: str) -> ApiKey:
    key = await ctx.session.scalar(
        select(ApiKey).where(ApiKey.id == key_id, ApiKey.workspace_id == ctx.workspace_id)
    )
    if key is None:
        raise ApiError(404, "API key not found")
    return key


@router.get("/settings/api-keys/{key_id}/revoke")
async def revoke_api_key_page(key_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        key = await _workspace_key(ctx, key_id)
        return render.page(
            "revoke_key.html", title="Revoke a key", section="api-keys", visitor=visitor, key=key
        )

    return await as_visitor(request, work, admin=True)


@router.post("/settings/api-keys/{key_id}/revoke")
async def revoke_api_key(key_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        key = await _workspace_key(ctx, key_id)
        await accounts.revoke_key(ctx.session, key.id)
        audit_write(ctx, request, "revoke_api_key", key.id, 200)
        sessions.flash(visitor.row, "ok", f"Key “{key.name or 'Unnamed'}” is revoked.")
        return RedirectResponse("/settings/api-keys", status_code=303)

    return await as_visitor(request, work, admin=True)
