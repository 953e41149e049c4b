"""The overview (`/app`): contacts by status, this month's emails against the allowance,
delivery health, the last campaigns with their open and click rates, and the automations
running, each from the service the API uses."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from mailroom.automations import service as automations
from mailroom.contacts import service as contacts
from mailroom.core.context import Context
from mailroom.core.pagination import PageParams
from mailroom.dashboard import render
from mailroom.dashboard.campaign_pages import campaign_rows
from mailroom.dashboard.frame import Visitor, as_visitor
from mailroom.models.contacts import CONTACT_STATUSES
from mailroom.people import sessions
from mailroom.sending import service as sending

router = APIRouter(include_in_schema=False)
RECENT = 5


@router.get("/app")
async def overview(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        counts = await contacts.status_counts(ctx)
        state = await sending.describe(ctx)
        running, live = await automations.list_automations(
            ctx, PageParams(1, RECENT), None, "active"
        )
        runs = await automations.stats_of(ctx, [a.id for a in running])
        allowance = state["monthly_allowance"] or 0
        return render.page(
            "overview.html",
            title="Overview",
            section="overview",
            visitor=visitor,
            workspace_name=visitor.workspace_name,
            counts=[(s, counts[s]) for s in CONTACT_STATUSES],
            total=sum(counts.values()),
            state=state,
            used_share=min(100, round(state["sent_this_month"] / allowance * 100))
            if allowance
            else 0,
            bounce_rate=f"{state['bounce_rate'] * 100:.2f} %",
            complaint_rate=f"{state['complaint_rate'] * 100:.2f} %",
            campaigns=(await campaign_rows(ctx, PageParams(1, RECENT)))[0],
            automations=[
                {"name": a.name, "active": runs[a.id]["active"], "enrolled": runs[a.id]["enrolled"]}
                for a in running
            ],
            live=live,
            flashes=sessions.take_flash(visitor.row),
        )

    return await as_visitor(request, work)
