"""Campaigns (`/app/campaigns`): the list with status and rates; a draft's page (content from
scratch or a template, audience by lists, segments and tags with exclusions and a live
recipient count, sender, tracking), a test to yourself, send now or schedule with the month's
allowance shown; a sending or sent campaign's progress and report (totals, rates, opens and
clicks per hour as a chart, clicks per link, the recipients log); duplicate, cancel, delete;
an assistant's held send or schedule to review, which admins approve or reject.
Every action is the API's (`campaigns.service`, `.actions`, `.approval`, `.report`)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy import func, select

from mailroom.campaigns import actions, approval, report
from mailroom.campaigns import audience as audiences
from mailroom.campaigns import service as campaigns
from mailroom.campaigns.schemas import AUDIENCE_KEYS
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.dashboard import ab_test_pages, render
from mailroom.dashboard.charts import bar_chart, hourly_chart
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, refused, when
from mailroom.dashboard.template_pages import preview_document
from mailroom.ecommerce import attribution
from mailroom.ecommerce.values import money_shown
from mailroom.lists import service as lists
from mailroom.models import Campaign
from mailroom.people import sessions
from mailroom.segments import service as segments
from mailroom.sending import service as sending
from mailroom.tags import service as tags
from mailroom.templates import service as templates

router = APIRouter(include_in_schema=False)
PATH = "/app/campaigns"
SHOWN = 500
LINKS_CHARTED = 20  # the table below lists them all
LOG_PAGE = 50
LIST_PAGE = 25
TEXT_FIELDS = (
    "name",
    "subject",
    "preheader",
    "from_name",
    "from_email",
    "reply_to",
    "html_content",
    "text_content",
)


def _rate(part: int, whole: int) -> str:
    return f"{part / whole * 100:.1f} %" if whole else "—"


async def campaign_rows(ctx: Context, page: PageParams) -> tuple[list[dict[str, Any]], int]:
    """A page of campaigns, newest first, as the list and the overview show them, with rates
    (read from the send log of this page's campaigns only: paging bounds that read)."""
    rows, total = await campaigns.list_campaigns(ctx, page, None, None)
    stats = await campaigns.stats(ctx, [c.id for c in rows])
    # Revenue only where there is a store to earn it (a workspace without one sees no column).
    shop = await attribution.default_currency(ctx)
    revenue = await attribution.revenue_of(ctx, "campaign", [c.id for c in rows]) if shop else {}
    return [
        {
            "id": c.id,
            "name": c.name,
            "status": c.status,
            "when": when(c.finished_at or c.started_at or c.scheduled_at or c.created_at),
            "sent": stats[c.id]["sent"],
            "open_rate": _rate(stats[c.id]["opened"], stats[c.id]["sent"]),
            "click_rate": _rate(stats[c.id]["clicked"], stats[c.id]["sent"]),
            "revenue": money_text(revenue[c.id]) if shop else None,
        }
        for c in rows
    ], total


def money_text(figures: dict[str, Any]) -> str:
    """Revenue as people read it: `1,234.50 EUR`."""
    return money_shown(figures["total"], figures["currency"])


@router.get(PATH)
async def campaigns_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        raw = request.query_params.get("page") or "1"
        page = max(1, int(raw)) if raw.isdecimal() and len(raw) < 7 else 1
        rows, total = await campaign_rows(ctx, PageParams(page, LIST_PAGE))
        return render.page(
            "campaigns.html",
            title="Campaigns",
            section="campaigns",
            visitor=visitor,
            rows=rows,
            total=total,
            page=page,
            pages=max(1, -(-total // LIST_PAGE)),
            page_url=lambda n: f"?page={n}",
            flashes=sessions.take_flash(visitor.row),
        )

    return await as_visitor(request, work)


async def _choices(ctx: Context) -> dict[str, list[tuple[str, str]]]:
    first = PageParams(1, SHOWN)
    list_rows, _ = await lists.list_lists(ctx, first)
    segment_rows, _ = await segments.list_segments(ctx, first, None)
    tag_rows, _ = await tags.list_tags(ctx, first, None)
    template_rows, _ = await templates.list_templates(ctx, first, None)
    return {
        "list": [(m.id, m.name) for m in list_rows],
        "segment": [(s.id, s.name) for s in segment_rows],
        "tag": [(t.id, t.name) for t in tag_rows],
        "template": [(t.id, t.name) for t in template_rows],
    }


def _audience_of(form: dict[str, Any]) -> dict[str, list[str]]:
    return {key: [str(v) for v in form.get(key) or []] for key in AUDIENCE_KEYS}


async def _recipients(ctx: Context, audience: dict[str, list[str]]) -> int | None:
    """Subscribed contacts the audience takes now (None: nobody chosen yet)."""
    if audiences.is_empty(audience):
        return None
    condition = await audiences.condition(ctx, await audiences.check(ctx, audience))
    return int(await ctx.session.scalar(select(func.count()).where(condition)) or 0)


async def _editor(
    visitor: Visitor,
    ctx: Context,
    draft: dict[str, Any],
    *,
    campaign_id: str = "",
    status: int = 200,
) -> Response:
    state = await sending.describe(ctx)
    try:
        count = await _recipients(ctx, draft["audience"])
        count_problem = None
    except ApiError as problem:
        count, count_problem = None, problem.message
    return render.page(
        "campaign_edit.html",
        status=status,
        title=draft.get("name") or "New campaign",
        section="campaigns",
        visitor=visitor,
        draft=draft,
        campaign_id=campaign_id,
        choices=await _choices(ctx),
        count=count,
        count_problem=count_problem,
        left_this_month=max(0, state["monthly_allowance"] - state["sent_this_month"]),
        state=state,
        ab=ab_test_pages.editor(draft.get("ab_test")),
        flashes=sessions.take_flash(visitor.row),
    )


@router.get(f"{PATH}/new")
async def new_campaign(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        draft: dict[str, Any] = dict.fromkeys(TEXT_FIELDS, "")
        draft |= {"audience": audiences.empty(), "track_opens": True, "track_clicks": True}
        return await _editor(visitor, ctx, draft)

    return await as_visitor(request, work)


def _draft_of(form: dict[str, Any]) -> dict[str, Any]:
    """The editor's form as the editor shows it again (nothing saved)."""
    draft: dict[str, Any] = {name: str(form.get(name) or "") for name in TEXT_FIELDS}
    return draft | {
        "audience": _audience_of(form),
        "track_opens": form.get("track_opens") == "on",
        "track_clicks": form.get("track_clicks") == "on",
        "template_id": str(form.get("template_id") or ""),
        "ab_test": ab_test_pages.from_form(form),
    }


@router.post(f"{PATH}/template")
async def use_template(request: Request) -> Response:
    """The editor again with the chosen template's subject, preheader and content filled in
    (htmx posts the form when a template is picked and swaps the content card; without
    script the "Use this template" button posts it). Nothing is saved."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        draft = _draft_of(form)
        if draft["template_id"]:
            chosen = await templates.get_template(ctx, draft["template_id"])
            for name in campaigns.CONTENT:
                draft[name] = getattr(chosen, name) or ""
        if form.get("campaign_id"):
            stored = await campaigns.describe(
                ctx, await campaigns.get_campaign(ctx, str(form["campaign_id"]))
            )
            draft = {**stored, **draft}
        return await _editor(visitor, ctx, draft, campaign_id=str(form.get("campaign_id") or ""))

    return await as_visitor(request, work)


@router.get(f"{PATH}/{{campaign_id}}/preview")
async def preview_campaign(campaign_id: str, request: Request) -> Response:
    """The saved campaign rendered with sample values (the editor's frame without script;
    with it, the frame shows the draft as it is typed, through the templates' draft preview)."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        stored = await campaigns.get_campaign(ctx, campaign_id)
        parts = {name: getattr(stored, name) or "" for name in campaigns.CONTENT}
        variant = request.query_params.get("variant")  # an A/B test's variant
        if variant:
            ab_test_pages.preview_parts(stored.ab_test, variant, parts)
        return await preview_document(
            ctx, request, "", lambda contact_id: templates.preview_draft(ctx, parts, contact_id)
        )

    return await as_visitor(request, work)


@router.post(f"{PATH}/count")
async def count_recipients(request: Request) -> Response:
    """The audience fieldset posted by htmx on change: the recipient count alone."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        try:
            count, problem = await _recipients(ctx, _audience_of(form)), None
        except ApiError as refused:
            count, problem = None, refused.message
        return render.page("campaign_count.html", count=count, count_problem=problem)

    return await as_visitor(request, work)


def _body(form: dict[str, Any], *, creating: bool) -> dict[str, Any]:
    body: dict[str, Any] = {name: str(form.get(name) or "") for name in TEXT_FIELDS}
    for optional in ("from_name", "from_email", "reply_to"):
        if not body[optional]:
            body[optional] = None
    body["audience"] = _audience_of(form)
    body["track_opens"] = form.get("track_opens") == "on"
    body["track_clicks"] = form.get("track_clicks") == "on"
    body["ab_test"] = ab_test_pages.from_form(form)
    template_id = str(form.get("template_id") or "")
    if creating and template_id:
        body["template_id"] = template_id
        for name in campaigns.CONTENT:  # the template's content, unless some was typed
            if not body[name]:
                body.pop(name)
    return body


@router.post(f"{PATH}/save")
async def save_campaign(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        campaign_id = str(form.get("campaign_id") or "")
        body = _body(form, creating=not campaign_id)
        try:
            if campaign_id:
                saved = await campaigns.update_campaign(ctx, campaign_id, body)
            else:
                saved = await campaigns.create_campaign(ctx, body)
        except ApiError as problem:
            if problem.status == 404:
                raise
            await refused(ctx, visitor, problem)
            draft = {**dict.fromkeys(TEXT_FIELDS, ""), **body}
            draft = {k: ("" if v is None else v) for k, v in draft.items()}
            return await _editor(
                visitor, ctx, draft, campaign_id=campaign_id, status=problem.status
            )
        operation = "update_campaign" if campaign_id else "create_campaign"
        audit_write(ctx, request, operation, saved.id, 200 if campaign_id else 201)
        sessions.flash(visitor.row, "ok", f"Campaign “{saved.name}” saved.")
        return RedirectResponse(f"{PATH}/{saved.id}", status_code=303)

    return await as_visitor(request, work)


PROVIDER_LABELS = {
    "google": "Google (Gmail)",
    "microsoft": "Microsoft (Outlook)",
    "yahoo": "Yahoo and AOL",
    "apple": "Apple (iCloud)",
    "other": "Others (no MX known)",
}


async def _report_page(visitor: Visitor, ctx: Context, stored: Campaign, page: int) -> Response:
    counts, found = await report.report_of(ctx, stored)
    campaign = campaigns.as_dict(stored, counts)
    rows, total = await campaigns.recipients(ctx, campaign["id"], PageParams(page, LOG_PAGE))
    for row in rows:
        row["sent"] = when(row["sent_at"])
    totals = found["totals"]
    progress = round(totals["sent"] * 100 / totals["recipients"]) if totals["recipients"] else 0
    return render.page(
        "campaign_report.html",
        title=campaign["name"],
        section="campaigns",
        visitor=visitor,
        campaign=campaign,
        started=when(campaign["started_at"]),
        finished=when(campaign["finished_at"]),
        report=found,
        ab=ab_test_pages.report(campaign, found),
        provider_labels=PROVIDER_LABELS,
        revenue=money_text(found["revenue"]) if found["revenue"]["currency"] else None,
        rates={k: f"{v * 100:.1f} %" for k, v in found["rates"].items()},
        progress=progress,
        chart=hourly_chart(found["hourly"]),
        outcomes=bar_chart(
            [
                ("Delivered", totals["delivered"]),
                ("Opened", totals["opened"]),
                ("Clicked", totals["clicked"]),
                ("Bounced", totals["bounced"]),
                ("Reported as spam", totals["complained"]),
                ("Unsubscribed", totals["unsubscribed"]),
            ],
            whole=totals["sent"],
        )
        if totals["sent"]
        else None,
        link_chart=bar_chart(
            [(link["url"], link["clicks"]) for link in found["links"][:LINKS_CHARTED]],
            kind="clicks",
        ),
        recipients=rows,
        log_page=page,
        log_pages=max(1, -(-total // LOG_PAGE)),
        page_url=lambda n: "?" + urlencode({"page": n}),
        flashes=sessions.take_flash(visitor.row),
    )


@router.get(f"{PATH}/{{campaign_id}}")
async def campaign_page(campaign_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        stored = await campaigns.get_campaign(ctx, campaign_id)
        if stored.status in ("sending", "sent", "cancelled"):
            raw = request.query_params.get("page") or "1"
            page = max(1, int(raw)) if raw.isdecimal() and len(raw) < 7 else 1
            return await _report_page(visitor, ctx, stored, page)
        if stored.status == campaigns.AWAITING:
            return await _review_page(visitor, ctx, stored)
        campaign = await campaigns.describe(ctx, stored)
        draft = {**campaign, **{k: campaign[k] or "" for k in TEXT_FIELDS}}
        return await _editor(visitor, ctx, draft, campaign_id=campaign_id)

    return await as_visitor(request, work)


AUDIENCE_LABELS = (
    ("list_ids", "list", "Lists"),
    ("segment_ids", "segment", "Segments"),
    ("tag_ids", "tag", "Tags"),
    ("exclude_list_ids", "list", "Leaving out lists"),
    ("exclude_segment_ids", "segment", "Leaving out segments"),
    ("exclude_tag_ids", "tag", "Leaving out tags"),
)


async def _review_page(visitor: Visitor, ctx: Context, stored: Campaign) -> Response:
    """What an assistant asked to mail, for an admin to approve or reject (members see it)."""
    campaign = await campaigns.describe(ctx, stored)
    state = await sending.describe(ctx)
    try:
        count, count_problem = await _recipients(ctx, campaign["audience"]), None
    except ApiError as problem:
        count, count_problem = None, problem.message
    choices = await _choices(ctx)
    names = {kind: dict(pairs) for kind, pairs in choices.items()}
    audience = [
        (label, [names[kind].get(i, "(deleted)") for i in campaign["audience"][key]])
        for key, kind, label in AUDIENCE_LABELS
        if campaign["audience"][key]
    ]
    return render.page(
        "campaign_review.html",
        title=campaign["name"],
        section="campaigns",
        visitor=visitor,
        campaign=campaign,
        requester=await approval.requester(ctx, stored),
        asked_at=when(stored.approval_requested_at),
        send_at=when(stored.approval_send_at),
        count=count,
        count_problem=count_problem,
        audience=audience,
        left_this_month=max(0, state["monthly_allowance"] - state["sent_this_month"]),
        state=state,
        flashes=sessions.take_flash(visitor.row),
    )


async def _decide(request: Request, campaign_id: str, operation: str) -> Response:
    """Approve or reject (admins only): the service decides, the page says what happened."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        here = f"{PATH}/{campaign_id}"
        try:
            if operation == "approve_campaign":
                decided = await approval.approve(ctx, campaign_id)
                text = (
                    f"Approved: scheduled for {when(decided.scheduled_at)}."
                    if decided.status == "scheduled"
                    else "Approved: sending has started."
                )
            else:
                await approval.reject(ctx, campaign_id, form.get("reason"))
                text = "Rejected: the campaign is a draft again, with your reason."
        except ApiError as problem:
            if problem.status == 404:
                raise
            await refused(ctx, visitor, problem)
            return RedirectResponse(here, status_code=303)
        audit_write(ctx, request, operation, campaign_id, 200)
        sessions.flash(visitor.row, "ok", text)
        return RedirectResponse(here, status_code=303)

    return await as_visitor(request, work, admin=True)


@router.post(f"{PATH}/{{campaign_id}}/approve")
async def approve_campaign(campaign_id: str, request: Request) -> Response:
    return await _decide(request, campaign_id, "approve_campaign")


@router.post(f"{PATH}/{{campaign_id}}/reject")
async def reject_campaign(campaign_id: str, request: Request) -> Response:
    return await _decide(request, campaign_id, "reject_campaign")


@router.post(f"{PATH}/{{campaign_id}}/{{action}}")
async def campaign_action(campaign_id: str, action: str, request: Request) -> Response:
    """test, send, schedule, cancel, duplicate, delete: the API's actions by their names."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        here = f"{PATH}/{campaign_id}"
        try:
            if action == "test":
                emails = [e.strip() for e in str(form.get("emails") or "").split(",") if e.strip()]
                await ctx.session.commit()  # the test is sent with no transaction open
                sent = await actions.test(ctx, campaign_id, emails or [visitor.email])
                await ctx.session.refresh(visitor.row)
                text = f"Test sent to {sent} address{'es' if sent != 1 else ''}."
            elif action == "send":
                if form.get("sure") != "yes":
                    raise ApiError(400, "Tick “Send it now” to confirm.")
                await actions.send(ctx, campaign_id)
                text = "Sending has started."
            elif action == "schedule":
                raw = str(form.get("send_at") or "")
                moment = f"{raw}:00Z" if len(raw) == 16 else raw  # datetime-local, in UTC
                await actions.schedule(ctx, campaign_id, moment)
                text = f"Scheduled for {raw.replace('T', ' ')} UTC."
            elif action == "cancel":
                cancelled = await actions.cancel(ctx, campaign_id)
                text = (
                    "Back to draft."
                    if cancelled.status == "draft"
                    else "Cancelled: the recipients not yet sent to are never sent."
                )
            elif action == "duplicate":
                copy = await actions.duplicate(ctx, campaign_id)
                audit_write(ctx, request, "duplicate_campaign", copy.id, 201)
                sessions.flash(visitor.row, "ok", f"“{copy.name}” is a new draft.")
                return RedirectResponse(f"{PATH}/{copy.id}", status_code=303)
            elif action == "delete":
                name = (await campaigns.get_campaign(ctx, campaign_id)).name
                await campaigns.delete_campaign(ctx, campaign_id)
                audit_write(ctx, request, "delete_campaign", campaign_id, 200)
                sessions.flash(visitor.row, "ok", f"Campaign “{name}” deleted.")
                return RedirectResponse(PATH, status_code=303)
            else:
                raise ApiError(404, "Page not found")
        except ApiError as problem:
            if problem.status == 404:
                raise
            await refused(ctx, visitor, problem)
            return RedirectResponse(here, status_code=303)
        operation = {"test": "test_campaign", "send": "send_campaign"}.get(
            action, f"{action}_campaign"
        )
        audit_write(ctx, request, operation, campaign_id, 200)
        sessions.flash(visitor.row, "ok", text)
        return RedirectResponse(here, status_code=303)

    return await as_visitor(request, work)
