"""Campaigns: the named message to an audience (CRUD, stats, recipients). Starting, scheduling,
cancelling and test sends are in `campaigns.actions`; the sending itself in `sending`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import case, func, select

from mailroom.campaigns import ab_test as ab_tests
from mailroom.campaigns import audience as audiences
from mailroom.core.auth import Principal
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.models import CAMPAIGN_STATUSES, Campaign, SendLog
from mailroom.named import Named
from mailroom.sending.service import clean_address, clean_from_name
from mailroom.templates import service as templates

MAX_NAME = 100
CONTENT = ("subject", "preheader", "html_content", "text_content")
CAMPAIGNS = Named(Campaign, "campaign", MAX_NAME, newest_first=True)
EDITABLE = ("draft", "scheduled")
AWAITING = "awaiting_approval"


def _flag(name: str, value: Any, default: bool = True) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ApiError(400, f"{name} must be true or false")
    return value


async def _content(ctx: Context, body: dict[str, Any]) -> dict[str, str]:
    """The content fields sent: sizes (400, or 413 for the HTML and text), then syntax."""
    parts = {name: templates.check_part(name, body[name]) for name in CONTENT if name in body}
    await templates.check_syntax(parts)
    return parts


def clean_sender(body: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    if "from_name" in body:
        found["from_name"] = clean_from_name(body["from_name"])
    for name in ("from_email", "reply_to"):
        if name in body:
            found[name] = clean_address(name, body[name])
    return found


async def get_campaign(ctx: Context, campaign_id: Any) -> Campaign:
    return await CAMPAIGNS.get(ctx, campaign_id)


async def create_campaign(ctx: Context, body: dict[str, Any]) -> Campaign:
    CAMPAIGNS.clean_name(body.get("name"))  # the name's 400 first
    fields: dict[str, Any] = {**await _content(ctx, body), **clean_sender(body)}
    fields["track_opens"] = _flag("track_opens", body.get("track_opens"))
    fields["track_clicks"] = _flag("track_clicks", body.get("track_clicks"))
    template_id = body.get("template_id")
    if template_id is not None:
        if not isinstance(template_id, str) or not template_id:
            raise ApiError(400, "template_id must be a string")
        template = await templates.get_template(ctx, template_id)
        for name in CONTENT:
            fields.setdefault(name, getattr(template, name))
        fields["template_id"] = template.id
    fields["audience"] = await audiences.check(ctx, body.get("audience"))
    fields["ab_test"] = await ab_tests.clean(ctx, body.get("ab_test"))
    name = await CAMPAIGNS.claim_name(ctx, body.get("name"))
    return await CAMPAIGNS.create(ctx, name, status="draft", **fields)


def held(principal: Principal) -> bool:
    """Whether this caller's audience sends wait for an admin: an assistant connected with
    approval required (people and keys never wait)."""
    return principal.assistant_id is not None and principal.approval_required


def hold(ctx: Context, campaign: Campaign, action: str, send_at: datetime | None) -> None:
    """Nothing is started or scheduled: the request waits for a workspace admin."""
    campaign.status, campaign.scheduled_at, campaign.error = AWAITING, None, None
    campaign.approval_status, campaign.approval_action = "pending", action
    campaign.approval_send_at = send_at
    campaign.approval_assistant_id = ctx.principal.assistant_id
    campaign.approval_requested_at = utcnow()
    campaign.approval_decided_at = campaign.approval_decided_by = None
    campaign.approval_reason = None
    CAMPAIGNS.touch(campaign)


def clear_approval(campaign: Campaign) -> None:
    """The campaign's state no longer comes from an assistant's request."""
    campaign.approval_status = campaign.approval_action = None
    campaign.approval_send_at = campaign.approval_requested_at = None
    campaign.approval_assistant_id = campaign.approval_decided_at = None
    campaign.approval_decided_by = campaign.approval_reason = None


def ensure_editable(campaign: Campaign) -> None:
    if campaign.status not in EDITABLE:
        raise ApiError(
            409,
            f"Campaign is {campaign.status}: it can only be changed while it is a draft or "
            "scheduled",
        )


async def update_campaign(ctx: Context, campaign_id: str, changes: dict[str, Any]) -> Campaign:
    campaign = await get_campaign(ctx, campaign_id)
    if not changes:
        raise ApiError(400, "No updatable fields provided")
    if "name" in changes:
        CAMPAIGNS.clean_name(changes["name"])
    fields: dict[str, Any] = {**await _content(ctx, changes), **clean_sender(changes)}
    for flag in ("track_opens", "track_clicks"):
        if flag in changes:
            if not isinstance(changes[flag], bool):
                raise ApiError(400, f"{flag} must be true or false")
            fields[flag] = changes[flag]
    if "audience" in changes:
        fields["audience"] = await audiences.check(ctx, changes["audience"])
    if "ab_test" in changes:
        fields["ab_test"] = await ab_tests.clean(ctx, changes["ab_test"])
    ensure_editable(campaign)
    if "name" in changes:
        await CAMPAIGNS.rename(ctx, campaign, changes["name"])
    for name, value in fields.items():
        setattr(campaign, name, value)
    CAMPAIGNS.touch(campaign)
    if campaign.status == "scheduled" and held(ctx.principal):
        # What was scheduled (by a person, or with an admin's approval) is not what will go:
        # the changed campaign waits for an admin again, at the same time.
        hold(ctx, campaign, "schedule", campaign.scheduled_at)
    await CAMPAIGNS.flush(ctx)
    return campaign


async def delete_campaign(ctx: Context, campaign_id: str) -> None:
    campaign = await get_campaign(ctx, campaign_id)
    if campaign.status in ("scheduled", "sending", AWAITING):
        raise ApiError(
            409,
            f"Campaign is {campaign.status}: cancel it before deleting it",
        )
    # Its send log stays: contacts' activity (segments) and the account's history keep it.
    await CAMPAIGNS.delete(ctx, campaign)


async def list_campaigns(
    ctx: Context, page: PageParams, q: str | None, status: str | None
) -> tuple[list[Campaign], int]:
    if status is not None and status not in CAMPAIGN_STATUSES:
        # As the published enum: an unknown (or empty) state is refused, never read as "all".
        raise ApiError(400, f"status must be one of {', '.join(CAMPAIGN_STATUSES)}")
    where = [Campaign.status == status] if status else []
    return await CAMPAIGNS.page(ctx, page, q=q, where=where)


# ---------------------------------------------------------------- stats and recipients

_COUNTED = {
    "sent": SendLog.sent_at.is_not(None),
    "failed": SendLog.status == "failed",
    "skipped": SendLog.status == "skipped",
    "delivered": SendLog.delivered_at.is_not(None),
    "opened": SendLog.first_opened_at.is_not(None),
    "clicked": SendLog.first_clicked_at.is_not(None),
    "bounced": SendLog.bounced_at.is_not(None),
    "complained": SendLog.complained_at.is_not(None),
    "unsubscribed": SendLog.unsubscribed_at.is_not(None),
}


async def stats(
    ctx: Context, campaign_ids: list[str], *, with_sums: bool = False
) -> dict[str, dict[str, int]]:
    """Counts per campaign from its send log, in one statement for a page of campaigns;
    `with_sums` adds every open and click (`opens`, `clicks`, repeats included) to the same
    pass, for the report."""
    sums = {"opens": SendLog.open_count, "clicks": SendLog.click_count} if with_sums else {}
    found: dict[str, dict[str, int]] = {
        cid: {"recipients": 0, **dict.fromkeys(_COUNTED, 0), **dict.fromkeys(sums, 0)}
        for cid in campaign_ids
    }
    if not campaign_ids:
        return found
    columns = [func.count().label("recipients")]
    columns += [
        func.sum(case((condition, 1), else_=0)).label(name) for name, condition in _COUNTED.items()
    ]
    columns += [func.sum(column).label(name) for name, column in sums.items()]
    rows = await ctx.session.execute(
        select(SendLog.campaign_id, *columns)
        .where(SendLog.workspace_id == ctx.workspace_id, SendLog.campaign_id.in_(campaign_ids))
        .group_by(SendLog.campaign_id)
    )
    for row in rows.all():
        values = row._mapping
        campaign_id = str(row[0])
        found[campaign_id] = {name: int(values[name] or 0) for name in found[campaign_id]}
    return found


def as_dict(campaign: Campaign, counts: dict[str, int]) -> dict[str, Any]:
    stored = campaign.audience or {}
    return {
        "id": campaign.id,
        "name": campaign.name,
        "subject": campaign.subject,
        "preheader": campaign.preheader,
        "from_name": campaign.from_name,
        "from_email": campaign.from_email,
        "reply_to": campaign.reply_to,
        "html_content": campaign.html_content,
        "text_content": campaign.text_content,
        "template_id": campaign.template_id,
        "audience": {**audiences.empty(), **stored},
        "track_opens": campaign.track_opens,
        "track_clicks": campaign.track_clicks,
        "status": campaign.status,
        "scheduled_at": campaign.scheduled_at,
        "started_at": campaign.started_at,
        "finished_at": campaign.finished_at,
        "stats": counts,
        "error": campaign.error,
        "approval": approval_of(campaign),
        "ab_test": ab_tests.shown(campaign.ab_test),
        "created_at": campaign.created_at,
        "updated_at": campaign.updated_at,
    }


def approval_of(campaign: Campaign) -> dict[str, Any] | None:
    """The assistant's request the campaign's state comes from (see `Campaign`), or None."""
    if campaign.approval_status is None:
        return None
    return {
        "status": campaign.approval_status,
        "requested_action": campaign.approval_action,
        "send_at": campaign.approval_send_at,
        "requested_by_assistant_id": campaign.approval_assistant_id,
        "requested_at": campaign.approval_requested_at,
        "decided_at": campaign.approval_decided_at,
        "decided_by": campaign.approval_decided_by,
        "rejected_reason": campaign.approval_reason,
    }


async def describe(ctx: Context, campaign: Campaign) -> dict[str, Any]:
    counts = await stats(ctx, [campaign.id])
    return as_dict(campaign, counts[campaign.id])


def shown_status(status: str) -> str:
    """A due row is `queued` to the client (`pending` is the engine's word)."""
    return "queued" if status == "pending" else status


async def recipients(
    ctx: Context, campaign_id: str, page: PageParams
) -> tuple[list[dict[str, Any]], int]:
    campaign = await get_campaign(ctx, campaign_id)
    where = (SendLog.workspace_id == ctx.workspace_id, SendLog.campaign_id == campaign.id)
    total = int(await ctx.session.scalar(select(func.count()).where(*where)) or 0)
    rows = await ctx.session.scalars(
        select(SendLog).where(*where).order_by(SendLog.id).offset(page.offset).limit(page.limit)
    )
    return [
        {
            "contact_id": row.contact_id,
            "email": row.email,
            "status": shown_status(row.status),
            "sent_at": row.sent_at,
            "message_id": f"<{row.message_id}>" if row.message_id else None,
            "error": row.error,
        }
        for row in rows.all()
    ], total
