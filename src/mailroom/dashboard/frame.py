"""The frame every dashboard page runs in: the signed-in person (`Visitor`) in their current
workspace, one transaction per page with the person as the principal, the CSRF check on
forms, the admin check, and the audit entry of a write. Pages call `as_visitor(request, work)`.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy import inspect, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.audit import service as audit
from mailroom.core.auth import Principal
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.dashboard import render
from mailroom.models import DashboardSession, Person
from mailroom.people import service as people
from mailroom.people import sessions
from mailroom.people.service import Membership
from mailroom.ratelimits import service as ratelimits
from mailroom.settings import Settings
from mailroom.web.deps import get_db, get_settings_dep

log = logging.getLogger("mailroom.dashboard")


@dataclass
class Visitor:
    person: Person
    row: DashboardSession
    memberships: list[Membership]
    principal: Principal

    @property
    def csrf(self) -> str:
        return self.row.csrf_token

    @property
    def email(self) -> str:
        return self.person.email

    @property
    def workspace_id(self) -> str:
        return self.principal.workspace_id

    @property
    def role(self) -> str:
        return self.principal.role or "member"

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    @property
    def workspace_name(self) -> str:
        return next(m.name for m in self.memberships if m.workspace_id == self.workspace_id)


def secure_cookies(settings: Settings) -> bool:
    return settings.public_url.startswith("https://")


def set_session_cookie(response: Response, settings: Settings, token: str) -> None:
    response.set_cookie(
        sessions.COOKIE,
        token,
        httponly=True,
        samesite="lax",
        secure=secure_cookies(settings),
        path="/",
    )


# Forms shown before there is a session (sign in, forgotten password) carry a token that must
# match this cookie's (double submit), so another site cannot post them for a visitor.
PRE_CSRF = "mailroom_csrf"


def pre_session_token(request: Request) -> str:
    return request.cookies.get(PRE_CSRF) or secrets.token_urlsafe(24)


def with_pre_session_cookie(response: Response, settings: Settings, token: str) -> Response:
    response.set_cookie(
        PRE_CSRF, token, httponly=True, samesite="lax", secure=secure_cookies(settings), path="/app"
    )
    return response


def pre_session_ok(request: Request, sent: Any) -> bool:
    expected = request.cookies.get(PRE_CSRF) or ""
    return bool(expected) and secrets.compare_digest(str(sent or ""), expected)


async def over_limit(
    session: AsyncSession, window_seconds: int, *checks: tuple[str, int]
) -> ratelimits.RateDecision | None:
    """Count one attempt under each `(key, limit)` (per address, per IP); the first refusal,
    or None when all have room."""
    for key, limit in checks:
        decision = await ratelimits.hit(session, key, limit=limit, window_seconds=window_seconds)
        if not decision.allowed:
            return decision
    return None


async def refused(ctx: Context, visitor: Visitor, problem: ApiError) -> None:
    """A form the services refused: nothing it wrote stays, and the next page says why."""
    await undo(ctx.session, visitor)
    sessions.flash(visitor.row, "error", problem.message)


def when(value: Any) -> str:
    """A time as every page shows it."""
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else ""


def local_path(target: str | None) -> str:
    """Only paths of this site are followed after signing in (no open redirect)."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/app"


async def _visitor(session: AsyncSession, request: Request, settings: Settings) -> Visitor | None:
    idle = timedelta(minutes=max(1, settings.session_idle_minutes))
    loaded = await sessions.load(session, request.cookies.get(sessions.COOKIE), idle)
    if loaded is None:
        return None
    row, person = loaded
    if request.method != "POST":
        # A read session never writes: the row leaves it, so what the visit changes on it
        # (last seen, flashes shown, the workspace) is neither flushed nor committed here
        # (a preview commits its read transaction) nor undone by a rollback; `as_visitor`
        # writes it afterwards.
        session.expunge(row)
    if row.needs_second_factor:
        return None  # only the code's form (pages.sign_in_code) serves this session
    memberships = await people.workspaces_of(session, person)
    if not memberships:
        return None
    current = row.workspace_id
    if current not in {m.workspace_id for m in memberships}:
        current = row.workspace_id = memberships[0].workspace_id
    principal = await people.principal_for(session, person, current)
    return Visitor(person, row, memberships, principal)


# Form fields that are checkbox groups: read as lists.
MULTI_VALUED = frozenset(
    {
        "permission",
        "event",
        "list_ids",
        "tag_ids",
        "form_ids",
        "campaign_ids",
        "domain_ids",
        "contact_ids",
        "segment_ids",
        "exclude_list_ids",
        "exclude_segment_ids",
        "exclude_tag_ids",
        "languages",
    }
)

Work = Callable[[Visitor, Context, dict[str, Any]], Awaitable[Response]]


async def as_visitor(request: Request, work: Work, *, admin: bool = False) -> Response:
    """Run a page for the signed-in person: sign-in first when there is no session, 403 for a
    form without the session's CSRF token or a member on an admin's page.

    A form (POST) runs in one write transaction. A page that only reads (GET) runs in a read
    session, so on SQLite the one write connection is not held while it is built; what the
    visit changed on the session row (last seen, flashes shown) is written after it, in a
    short write transaction of its own that waits its turn (never from the read transaction:
    on SQLite that fails at once whenever the worker has just committed)."""
    db, settings = get_db(request), get_settings_dep(request)
    if request.method == "POST":
        raw = await request.form()
        form = {key: raw.getlist(key) if key in MULTI_VALUED else raw.get(key) for key in raw}
        async with db.transaction() as session:
            response, _row = await _serve(session, request, work, form, admin, settings)
            return response
    async with db.session(write=False) as session:
        response, row = await _serve(session, request, work, {}, admin, settings)
        await session.rollback()
    if row is not None:
        await _record_visit(db, row)
    return response


async def _record_visit(db: Any, row: DashboardSession) -> None:
    """Write what a read-only visit changed on its (detached) session row. Bookkeeping: a
    failure is logged, the page is still answered (a later visit records it)."""
    changes = _changes(row)
    if not changes:
        return
    try:
        async with db.transaction() as writing:
            await writing.execute(
                update(DashboardSession).where(DashboardSession.id == row.id).values(**changes)
            )
    except Exception:
        log.warning("could not record a dashboard visit", exc_info=True)


def _changes(row: DashboardSession) -> dict[str, Any]:
    """The session row's columns this visit changed and not yet written."""
    state = inspect(row)
    return {
        attr.key: attr.value
        for attr in state.attrs
        if attr.key not in state.expired_attributes and attr.history.has_changes()
    }


async def _serve(
    session: AsyncSession,
    request: Request,
    work: Work,
    form: dict[str, Any],
    admin: bool,
    settings: Settings,
) -> tuple[Response, DashboardSession | None]:
    visitor = await _visitor(session, request, settings)
    if visitor is None:
        target = quote(request.url.path) if request.method == "GET" else "/app"
        return RedirectResponse(f"/app/sign-in?next={target}", status_code=303), None
    if request.method == "POST" and not secrets.compare_digest(
        str(form.get("csrf") or ""), visitor.csrf
    ):
        page = render.message(
            "This form has expired",
            "Reload the page and try again.",
            403,
            visitor=visitor,
            back=request.url.path,
        )
        return page, visitor.row
    if admin and not visitor.is_admin:
        page = render.message(
            "Admins only",
            "Only workspace admins can open this page. Ask one of them if you need it.",
            403,
            visitor=visitor,
            back="/app",
            back_label="Back to the overview",
        )
        return page, visitor.row
    try:
        answer = await work(visitor, Context(session, visitor.principal, settings), form)
    except ApiError as problem:
        await undo(session, visitor)
        answer = render.message(
            "That did not work", problem.message, problem.status, visitor=visitor, back="/app"
        )
    return answer, visitor.row


async def undo(session: AsyncSession, visitor: Visitor) -> None:
    """Roll back what the page wrote before a refusal (bad input changes nothing), then read
    the visitor's rows again for the answer (a rollback expires them)."""
    await session.rollback()
    await reread(session, visitor)


async def reread(session: AsyncSession, visitor: Visitor) -> None:
    """The visitor's rows read again after a service ended the transaction itself (one that
    releases its connection before network I/O, like an image upload). A read-only visit's
    session row is not in the session (see `_visitor`): nothing undid its changes."""
    await session.refresh(visitor.person)
    if visitor.row in session:
        await session.refresh(visitor.row)


def audit_write(
    ctx: Context, request: Request, operation: str, target: str | None, status: int
) -> None:
    ctx.session.add(
        audit.new_entry(
            ctx.principal,
            operation=operation,
            method=request.method,
            path=request.url.path,
            target_id=target,
            status=status,
        )
    )
