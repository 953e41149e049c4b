"""Settings → Assistants: the workspace's connected assistants (admins: listed, revoked after a
confirmation) and "Connect an assistant", where any person makes a one-use grant for an agent
without a browser, shown once with the instruction to paste to it.

Members may connect assistants too (the issue: members connect with narrower scopes): the
form offers only what the person's role holds, and anything else posted by hand is dropped, so
a member's grant never carries an admin-only permission. The rules are the service's
(`assistants.service`), run with the visitor as the principal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from mailroom.assistants import listing
from mailroom.assistants import service as assistants
from mailroom.core.auth import PERMISSIONS
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, undo, when
from mailroom.people import sessions

router = APIRouter(include_in_schema=False)

PATH = "/settings/assistants"
CONNECT = f"{PATH}/connect"
PAGE_SIZE = 50
# At most this many missing permissions are shown as "all except …".
FEW_LACKING = 5
SENDS = "campaigns:send"
# The grant's lifetime in minutes, as the service bounds it in seconds.
MINUTES_DEFAULT = assistants.GRANT_TTL_DEFAULT // 60
MINUTES_MIN = assistants.GRANT_TTL_MIN // 60
MINUTES_MAX = assistants.GRANT_TTL_MAX // 60


# ---------------------------------------------------------------- the list


def _page_number(request: Request) -> int:
    raw = request.query_params.get("page") or "1"
    return max(1, int(raw)) if raw.isdecimal() and len(raw) < 7 else 1


def _connected_by(described: dict[str, Any]) -> str:
    who = described["connected_by"]
    if who["type"] == "person":
        return str(who["email"] or "someone removed since")
    # A person who connected it and was deleted since leaves neither id (SET NULL).
    return "an API key" if who["id"] else "someone removed since"


def _how(described: dict[str, Any]) -> str:
    if described["kind"] == "oauth":
        return f"OAuth: {described['client_name'] or 'an application removed since'}"
    return "One-use grant"


def _shown(described: dict[str, Any]) -> dict[str, Any]:
    permissions = list(described["permissions"])
    budget = described["daily_recipient_budget"]
    if SENDS not in permissions:
        approval = "cannot send campaigns"
    else:
        approval = "need approval" if described["requires_approval"] else "go out at once"
    return {
        "id": described["id"],
        "name": described["name"],
        "how": _how(described),
        "permissions": permissions,
        # Most OAuth clients ask for everything: what they lack says more than a long list.
        "lacks": [p for p in PERMISSIONS if p not in permissions],
        "connected_by": _connected_by(described),
        "connected": when(described["created_at"]),
        "last_used": when(described["last_used_at"]) or "never",
        "approval": approval,
        "budget": "none" if budget is None else f"{budget:,} recipients a day",
    }


@router.get(PATH)
async def assistants_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        assistants.check_can_manage(ctx.principal)
        number = _page_number(request)
        rows, total = await listing.page(
            ctx.session, ctx.principal, PageParams(page=number, limit=PAGE_SIZE)
        )
        listed = [_shown(item) for item in await listing.describe(ctx.session, rows)]
        return render.page(
            "assistants.html",
            title="Assistants",
            section="assistants",
            visitor=visitor,
            assistants=listed,
            few_lacking=FEW_LACKING,
            total=total,
            page=number,
            pages=max(1, -(-total // PAGE_SIZE)),
            page_url=lambda n: "?" + urlencode({"page": n}),
            mcp_url=ctx.settings.public_url.rstrip("/") + "/mcp",
            flashes=sessions.take_flash(visitor.row),
        )

    return await as_visitor(request, work, admin=True)


@router.get(f"{PATH}/{{assistant_id}}/revoke")
async def revoke_assistant_page(assistant_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        assistants.check_can_manage(ctx.principal)
        found = await listing.get(ctx.session, ctx.principal, assistant_id)
        return render.page(
            "revoke_assistant.html",
            title="Revoke an assistant",
            section="assistants",
            visitor=visitor,
            assistant=found,
        )

    return await as_visitor(request, work, admin=True)


@router.post(f"{PATH}/{{assistant_id}}/revoke")
async def revoke_assistant(assistant_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        assistants.check_can_manage(ctx.principal)
        found = await listing.get(ctx.session, ctx.principal, assistant_id)
        await assistants.revoke(ctx.session, found)
        audit_write(ctx, request, "revoke_assistant", found.id, 200)
        sessions.flash(
            visitor.row, "ok", f"Assistant “{found.name}” is revoked: its tokens no longer work."
        )
        return RedirectResponse(PATH, status_code=303)

    return await as_visitor(request, work, admin=True)


# ---------------------------------------------------------------- connecting one


@dataclass
class Draft:
    """The connect form as the person filled it in (kept when it is refused)."""

    name: str = ""
    permissions: list[str] = field(default_factory=list)
    minutes: str = str(MINUTES_DEFAULT)
    # Ticked until the person unticks it: it only matters with campaigns:send, and then the
    # service's default (approval needed) holds for whoever leaves it alone.
    approval: bool = True
    budget: str = ""


def _offered(visitor: Visitor) -> list[str]:
    """What the person's role holds, so may grant (a member: all but the admin-only)."""
    return [p for p in PERMISSIONS if p in visitor.principal.permissions]


def _draft(form: dict[str, Any], offered: list[str]) -> Draft:
    ticked = set(form.get("permission") or [])
    return Draft(
        name=" ".join(str(form.get("name") or "").split()),
        # Only what the form offered: a hand-posted admin-only permission is dropped.
        permissions=[p for p in offered if p in ticked],
        minutes=str(form.get("minutes") or "").strip(),
        approval=form.get("requires_approval") == "on",
        budget=str(form.get("daily_recipient_budget") or "").strip(),
    )


def _minutes(text: str) -> int:
    if not text:
        return MINUTES_DEFAULT
    if not text.isdecimal() or not MINUTES_MIN <= int(text) <= MINUTES_MAX:
        raise ApiError(400, f"The code lasts {MINUTES_MIN} to {MINUTES_MAX} minutes.")
    return int(text)


def _budget(text: str) -> int | None:
    if not text:
        return None
    if not text.isdecimal() or int(text) > assistants.MAX_BUDGET:
        raise ApiError(
            400,
            f"The daily recipient budget is a whole number from 0 to "
            f"{assistants.MAX_BUDGET:,}, or empty for none.",
        )
    return int(text)


def _approval(form: dict[str, Any], draft: Draft) -> bool | None:
    """The box's answer when the form showed it and the assistant may send campaigns; else
    None, the service's default (approval needed exactly when it may send campaigns). A
    form posted without the box (`approval_asked` missing) thus keeps the default."""
    if not form.get("approval_asked") or SENDS not in draft.permissions:
        return None
    return draft.approval


def _connect_page(
    visitor: Visitor,
    draft: Draft,
    *,
    status: int = 200,
    error: str | None = None,
    created: dict[str, Any] | None = None,
) -> Response:
    return render.page(
        "assistant_connect.html",
        status=status,
        title="Connect an assistant",
        section="assistants",
        visitor=visitor,
        draft=draft,
        offered=_offered(visitor),
        admin_only=sorted(assistants.ADMIN_ONLY),
        minutes_min=MINUTES_MIN,
        minutes_max=MINUTES_MAX,
        max_budget=assistants.MAX_BUDGET,
        created=created,
        flashes=[{"kind": "error", "text": error}] if error else [],
    )


@router.get(CONNECT)
async def connect_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return _connect_page(visitor, Draft())

    return await as_visitor(request, work)


@router.post(CONNECT)
async def connect_assistant(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        draft = _draft(form, _offered(visitor))
        try:
            if not draft.name:
                raise ApiError(400, "Name the assistant: the list and the audit log show it.")
            if not draft.permissions:
                raise ApiError(400, "Choose at least one permission.")
            created = await assistants.create_grant(
                ctx.session,
                ctx.principal,
                name=draft.name,
                permissions=draft.permissions,
                expires_in=_minutes(draft.minutes) * 60,
                requires_approval=_approval(form, draft),
                daily_recipient_budget=_budget(draft.budget),
            )
        except ApiError as problem:
            await undo(ctx.session, visitor)
            return _connect_page(visitor, draft, status=problem.status, error=problem.message)
        audit_write(ctx, request, "create_assistant_grant", created.grant.id, 201)
        grant = created.grant
        shown = {
            "name": grant.name,
            "code": created.code,
            "expires": when(grant.expires_at),
            "minutes": _minutes(draft.minutes),
            "permissions": list(grant.permissions),
            "requires_approval": grant.requires_approval,
            "instructions": assistants.instructions(
                ctx.settings.public_url, created.code, grant.expires_at
            ),
        }
        return _connect_page(visitor, Draft(), status=201, created=shown)

    return await as_visitor(request, work)
