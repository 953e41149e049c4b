"""Read-only settings pages: the account (plan, limits and this month's usage, sending
health) and the audit log (filter by who, operation and dates; cursor paging)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy import func, select

from mailroom.audit import service as audit
from mailroom.contacts import service as contacts
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor
from mailroom.media import service as media
from mailroom.models import ApiKey, Assistant, AuditEntry, Automation, Person, WorkspaceMember
from mailroom.people import sessions
from mailroom.sending import limits
from mailroom.sending import service as sending

router = APIRouter(include_in_schema=False)
PAGE_SIZE = 50


def _number(value: int | None) -> str:
    return "unlimited" if value is None else f"{value:,}"


@router.get("/settings/account")
async def account_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        plan = ctx.principal.plan
        live = await ctx.session.scalar(
            select(func.count()).where(
                Automation.workspace_id == ctx.workspace_id, Automation.status == "active"
            )
        )
        used_mail = await limits.used_this_month(ctx.session, ctx.principal.account_id, utcnow())
        usage = [
            {
                "name": "Subscribed contacts (all workspaces)",
                "used": f"{await contacts.subscribed_count(ctx):,}",
                "allowed": _number(plan.contacts),
            },
            {
                "name": "Emails this month",
                "used": f"{used_mail:,}",
                "allowed": _number(plan.emails_per_month),
            },
            {
                "name": "Live automations (this workspace)",
                "used": f"{int(live or 0):,}",
                "allowed": _number(plan.live_automations),
            },
            {
                "name": "Image storage",
                "used": f"{await media.used_bytes(ctx) / 1048576:,.1f} MB",
                "allowed": f"{plan.media_quota_bytes / 1048576:,.0f} MB",
            },
            {
                "name": "API writes an hour",
                "used": "",
                "allowed": _number(plan.writes_per_hour),
            },
        ]
        state = await sending.state(ctx)
        return render.page(
            "account.html",
            title="Account",
            section="account",
            visitor=visitor,
            plan_label=plan.label,
            usage=usage,
            sending=state,
            bounce_rate=f"{state['bounce_rate'] * 100:.2f} %",
            complaint_rate=f"{state['complaint_rate'] * 100:.2f} %",
            flashes=sessions.take_flash(visitor.row),
        )

    return await as_visitor(request, work)


def _day(value: str | None) -> date | None:
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None


def _who(entry: AuditEntry, names: dict[str, str]) -> str:
    """An assistant's entry names it and the person it acted for (none: an admin key
    connected it)."""
    if entry.assistant_id:
        assistant = names.get(f"assistant:{entry.assistant_id}", "an assistant")
        person = names.get(f"person:{entry.person_id}") if entry.person_id else "an API key"
        return f"{assistant} for {person or 'someone removed since'}"
    return (
        names.get(f"person:{entry.person_id}")
        or names.get(f"key:{entry.key_id}")
        or "someone removed since"
    )


@router.get("/settings/audit-log")
async def audit_log_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        q = request.query_params
        who = q.get("who") or ""
        since, until = _day(q.get("since")), _day(q.get("until"))
        only = audit.AuditFilter(
            person_id=who.removeprefix("person:") if who.startswith("person:") else None,
            key_id=who.removeprefix("key:") if who.startswith("key:") else None,
            assistant_id=who.removeprefix("assistant:") if who.startswith("assistant:") else None,
            operation=(q.get("operation") or "").strip() or None,
            since=datetime.combine(since, datetime.min.time(), UTC) if since else None,
            before=(
                datetime.combine(until, datetime.min.time(), UTC) + timedelta(days=1)
                if until
                else None
            ),
        )
        cursor = q.get("cursor")
        page = await audit.list_entries(
            ctx.session, ctx.principal, cursor=cursor, limit=PAGE_SIZE, only=only
        )
        people_rows = (
            await ctx.session.execute(
                select(Person.id, Person.email)
                .join(WorkspaceMember, WorkspaceMember.person_id == Person.id)
                .where(WorkspaceMember.workspace_id == ctx.workspace_id)
            )
        ).all()
        key_rows = (
            await ctx.session.execute(
                select(ApiKey.id, ApiKey.name, ApiKey.lookup).where(
                    ApiKey.workspace_id == ctx.workspace_id
                )
            )
        ).all()
        # Revoked assistants too: the log still names them.
        assistant_rows = (
            await ctx.session.execute(
                select(Assistant.id, Assistant.name).where(
                    Assistant.workspace_id == ctx.workspace_id
                )
            )
        ).all()
        names = {f"person:{i}": e for i, e in people_rows}
        names.update(
            {f"key:{i}": f"key {n or 'Unnamed'} (mr_live_{lk}_…)" for i, n, lk in key_rows}
        )
        names.update({f"assistant:{i}": f"{n} (assistant)" for i, n in assistant_rows})
        entries = [
            {
                "when": e.created_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
                "who": _who(e, names),
                "operation": e.operation,
                "method": e.method,
                "path": e.path,
                "target": e.target_id or "",
                "status": e.status,
            }
            for e in page.entries
        ]
        kept = {k: v for k, v in q.items() if k != "cursor" and v}
        next_url = (
            f"/settings/audit-log?{urlencode({**kept, 'cursor': page.next_cursor})}"
            if page.next_cursor
            else None
        )
        return render.page(
            "audit.html",
            title="Audit log",
            section="audit",
            visitor=visitor,
            entries=entries,
            next_url=next_url,
            who=who,
            who_options=sorted(names.items(), key=lambda item: item[1]),
            operation=q.get("operation") or "",
            since=q.get("since") or "",
            until=q.get("until") or "",
        )

    return await as_visitor(request, work, admin=True)
