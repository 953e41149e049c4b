"""The second step of signing in (a code from an authenticator app, or a recovery code) and
the page where a person turns two-step sign-in on or off."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor, local_path
from mailroom.people import service as people
from mailroom.people import sessions, totp
from mailroom.ratelimits import service as ratelimits
from mailroom.web.deps import get_db, get_settings_dep

router = APIRouter(include_in_schema=False)
CODES_PER_PERSON = 10  # wrong codes per 15 minutes before the sign-in is refused


def _here(request: Request) -> str:
    """The form posts back to this address, keeping `next`."""
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")


@router.get("/app/sign-in/code")
async def sign_in_code_page(request: Request) -> Response:
    db, settings = get_db(request), get_settings_dep(request)
    idle = timedelta(minutes=max(1, settings.session_idle_minutes))
    async with db.transaction() as session:
        loaded = await sessions.load(session, request.cookies.get(sessions.COOKIE), idle)
    if loaded is None or not loaded[0].needs_second_factor:
        return RedirectResponse("/app/sign-in", status_code=303)
    return render.page(
        "code.html",
        title="Two-step sign-in",
        main_class="narrow",
        csrf=loaded[0].csrf_token,
        action=_here(request),
        error=None,
    )


@router.post("/app/sign-in/code")
async def sign_in_code(request: Request) -> Response:
    db, settings = get_db(request), get_settings_dep(request)
    idle = timedelta(minutes=max(1, settings.session_idle_minutes))
    form = await request.form()
    code = str(form.get("code") or "")
    async with db.transaction() as session:
        loaded = await sessions.load(session, request.cookies.get(sessions.COOKIE), idle)
        if loaded is None or not loaded[0].needs_second_factor:
            return RedirectResponse("/app/sign-in", status_code=303)
        row, person = loaded
        if not secrets.compare_digest(str(form.get("csrf") or ""), row.csrf_token):
            return render.message(
                "This form has expired", "Sign in again.", 403, main_class="narrow"
            )
        limit = await ratelimits.hit(
            session, f"second-factor:{person.id}", limit=CODES_PER_PERSON, window_seconds=900
        )
        if not limit.allowed:
            await sessions.end(session, request.cookies.get(sessions.COOKIE))
            return render.message(
                "Too many attempts",
                "Wait a few minutes, then sign in again.",
                429,
                main_class="narrow",
                headers={"Retry-After": str(limit.retry_after)},
            )
        if not people.second_factor_passes(settings, person, code):
            return render.page(
                "code.html",
                status=400,
                title="Two-step sign-in",
                main_class="narrow",
                csrf=row.csrf_token,
                action=_here(request),
                error=people.WRONG_CODE,
            )
        row.needs_second_factor = False
        await people.joined(session, person.id, row.workspace_id)
    return RedirectResponse(local_path(request.query_params.get("next")), status_code=303)


def _security(visitor: Visitor, status: int = 200, **values: Any) -> Response:
    return render.page(
        "security.html",
        status=status,
        title="Sign-in security",
        section="security",
        visitor=visitor,
        enabled=visitor.person.totp_sealed is not None,
        remaining=len(visitor.person.recovery_hashes or []),
        flashes=sessions.take_flash(visitor.row),
        **values,
    )


@router.get("/app/security")
async def security_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return _security(visitor)

    return await as_visitor(request, work)


@router.post("/app/security/totp")
async def start_totp(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        secret, token = people.totp_setup(ctx.settings, visitor.person)
        uri = totp.otpauth_uri(visitor.person.email, secret)
        return _security(visitor, setup={"secret": secret, "token": token, "uri": uri})

    return await as_visitor(request, work)


@router.post("/app/security/totp/confirm")
async def confirm_totp(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        token = str(form.get("setup") or "")
        try:
            codes = people.confirm_totp(
                ctx.settings, visitor.person, token, str(form.get("code") or "")
            )
        except ApiError as problem:
            secret = people.setup_secret(ctx.settings, visitor.person, token)
            if secret is None:
                return _security(visitor, status=400, error=problem.message)
            uri = totp.otpauth_uri(visitor.person.email, secret)
            setup = {"secret": secret, "token": token, "uri": uri}
            return _security(visitor, status=400, setup=setup, error=problem.message)
        return _security(visitor, codes=codes)

    return await as_visitor(request, work)


@router.post("/app/security/totp/disable")
async def disable_totp(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        try:
            people.disable_totp(ctx.settings, visitor.person, str(form.get("code") or ""))
        except ApiError as problem:
            return _security(visitor, status=400, error=problem.message)
        sessions.flash(visitor.row, "ok", "Two-step sign-in is off.")
        return RedirectResponse("/app/security", status_code=303)

    return await as_visitor(request, work)
