"""The overview (`/app`): the next steps while a workspace is new (import contacts, verify a
sending domain, write a template, send a campaign), contacts by status, this month's emails
against the allowance, delivery health, revenue from email (when the workspace has a store),
the last campaigns with their open and click rates, and the automations running, each from the service the API uses."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from mailroom.automations import service as automations
from mailroom.campaigns import service as campaigns
from mailroom.contacts import service as contacts
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.pagination import PageParams
from mailroom.dashboard import render
from mailroom.dashboard.campaign_pages import campaign_rows, money_text
from mailroom.dashboard.frame import Visitor, as_visitor
from mailroom.domains import service as domains
from mailroom.ecommerce import attribution
from mailroom.models.contacts import CONTACT_STATUSES
from mailroom.people import sessions
from mailroom.sending import service as sending
from mailroom.templates import service as templates

router = APIRouter(include_in_schema=False)
RECENT = 5
DOMAINS_READ = 100
REVENUE_DAYS = 30


async def next_steps(
    ctx: Context, contacts_total: int, campaign_total: int
) -> list[dict[str, Any]]:
    """What a new workspace does first, each with whether it is done; [] once all are."""
    domain_rows, _ = await domains.list_domains(ctx, PageParams(1, DOMAINS_READ))
    _rows, template_total = await templates.list_templates(ctx, PageParams(1, 1), None)
    _drafts, draft_total = await campaigns.list_campaigns(ctx, PageParams(1, 1), None, "draft")
    steps = [
        {
            "text": "Import your contacts",
            "href": "/app/import",
            "hint": "a CSV file, or add them one by one on the Contacts page",
            "done": contacts_total > 0,
        },
        {
            "text": "Verify a sending domain",
            "href": "/settings/sending",
            "hint": "the domain of your from address: publish the DNS records it shows",
            "done": any(d.status == "verified" for d in domain_rows),
            "admin": True,
        },
        {
            "text": "Write a template",
            "href": "/app/templates/new",
            "hint": "the design your campaigns start from",
            "done": template_total > 0,
        },
        {
            "text": "Send your first campaign",
            "href": "/app/campaigns/new",
            "hint": "to a list or a segment, now or at a set time",
            "done": campaign_total > draft_total,
        },
    ]
    return [] if all(step["done"] for step in steps) else steps


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
        total = sum(counts.values())
        recent, campaign_total = await campaign_rows(ctx, PageParams(1, RECENT))
        earned = await attribution.since(ctx, utcnow() - timedelta(days=REVENUE_DAYS))
        return render.page(
            "overview.html",
            title="Overview",
            section="overview",
            visitor=visitor,
            workspace_name=visitor.workspace_name,
            counts=[(s, counts[s]) for s in CONTACT_STATUSES],
            total=total,
            steps=await next_steps(ctx, total, campaign_total),
            state=state,
            used_share=min(100, round(state["sent_this_month"] / allowance * 100))
            if allowance
            else 0,
            bounce_rate=f"{state['bounce_rate'] * 100:.2f} %",
            complaint_rate=f"{state['complaint_rate'] * 100:.2f} %",
            campaigns=recent,
            revenue={"text": money_text(earned), "orders": earned["orders"]}
            if earned["currency"]
            else None,
            automations=[
                {"name": a.name, "active": runs[a.id]["active"], "enrolled": runs[a.id]["enrolled"]}
                for a in running
            ],
            live=live,
            flashes=sessions.take_flash(visitor.row),
        )

    return await as_visitor(request, work)
