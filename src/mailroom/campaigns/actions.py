"""What is done with a campaign: send now, schedule, cancel, duplicate, send a test.

Starting a campaign (now, or when its schedule comes due) freezes its audience into the send
log with one INSERT ... SELECT and reserves that many messages of the month's allowance, in
one transaction: all of it, or (a refusal) none. Workers send from the log (sending.engine).

An assistant whose audience sends need approval does not start or schedule anything: its
request is checked as the real one would be, then held (`awaiting_approval`) until a
workspace admin decides in the dashboard (`campaigns.approval`).
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import String, func, insert, literal, literal_column, select, update

from mailroom.campaigns import ab_test as ab_tests
from mailroom.campaigns import audience as audiences
from mailroom.campaigns.service import (
    AWAITING,
    CAMPAIGNS,
    EDITABLE,
    clear_approval,
    get_campaign,
    held,
    hold,
)
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.dbtypes import UTCDateTime
from mailroom.core.errors import ApiError
from mailroom.db import sql_uuid
from mailroom.models import PRIORITY_CAMPAIGN, Campaign, Contact, SendLog
from mailroom.named import clean_name
from mailroom.sending import limits
from mailroom.sending import service as sending
from mailroom.sending.messages import TestMessage, send_now
from mailroom.sending.service import clean_address
from mailroom.templates.render import issue_variables

log = logging.getLogger("mailroom.campaigns")

MAX_SCHEDULE = timedelta(days=365)
MAX_TEST_EMAILS = 5
NO_AUDIENCE = "The audience has no subscribed contact: nothing would be sent"


def _not_now(campaign: Campaign, what: str) -> ApiError:
    return ApiError(
        409, f"Campaign is {campaign.status}: only a draft or scheduled campaign can be {what}"
    )


async def locked(ctx: Context, campaign_id: Any) -> Campaign:
    """The workspace's campaign, its row locked until the transaction ends (PostgreSQL; a
    SQLite write transaction is exclusive already) and read afresh: of two requests that
    change its state at once, the second sees what the first did."""
    found: Campaign | None = None
    if isinstance(campaign_id, str) and campaign_id:
        found = await ctx.session.scalar(
            select(Campaign)
            .where(Campaign.id == campaign_id, Campaign.workspace_id == ctx.workspace_id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
    if found is None:
        raise ApiError(404, CAMPAIGNS.not_found)
    return found


async def _sender_of(ctx: Context, campaign: Campaign) -> tuple[str, str, str]:
    """The campaign's sender, or the workspace's identity where the campaign names none."""
    identity = await sending.settings_of(ctx)
    return (
        campaign.from_email or identity.from_email or "",
        campaign.from_name or identity.from_name or "",
        campaign.reply_to or identity.reply_to or "",
    )


async def _ready(ctx: Context, campaign: Campaign) -> tuple[str, str, str]:
    """Refusals that need the campaign or the workspace to change first (422, 403)."""
    await sending.ensure_not_paused(ctx)
    if not campaign.subject.strip():
        raise ApiError(422, "Campaign is not ready to send: subject is empty")
    if not (campaign.html_content.strip() or campaign.text_content.strip()):
        raise ApiError(422, "Campaign is not ready to send: it has no HTML or text content")
    sender = await _sender_of(ctx, campaign)
    await sending.check_sender(ctx, sender[0])
    if audiences.is_empty(campaign.audience or {}):
        raise ApiError(422, f"{NO_AUDIENCE} (the campaign names no list, segment or tag)")
    return sender


async def _condition(ctx: Context, campaign: Campaign) -> Any:
    try:
        return await audiences.condition(ctx, campaign.audience or {})
    except ApiError as problem:
        if problem.status == 404:  # a segment deleted since the audience was saved
            raise ApiError(422, "The audience names a segment that no longer exists") from None
        raise


async def audience_size(ctx: Context, campaign: Campaign) -> int:
    condition = await _condition(ctx, campaign)
    return int(await ctx.session.scalar(select(func.count()).where(condition)) or 0)


async def start(ctx: Context, campaign: Campaign) -> int:
    """Freeze the audience into the send log and reserve it; the campaign is `sending`.
    Returns the recipients queued. Raises (nothing queued) when it cannot start."""
    from_email, from_name, reply_to = await _ready(ctx, campaign)
    condition = await _condition(ctx, campaign)
    now = utcnow()
    at = literal(now, UTCDateTime())
    test = campaign.ab_test
    # An A/B test's split is made as the audience is frozen: each row gets its variant, or
    # waits for the winner (one statement, no second pass over the rows).
    source: Any = ab_tests.split_source(condition, test) if test else None
    rows: Any = select(
        literal_column(sql_uuid(ctx.dialect)),
        literal(ctx.workspace_id, String(36)),
        literal("campaign", String(16)),
        literal(campaign.id, String(36)),
        source.c.contact_id if test else Contact.id,
        source.c.email if test else Contact.email,
        literal(PRIORITY_CAMPAIGN),
        literal(0),
        literal(0),
        literal(0),
        source.c.status if test else literal("pending", String(20)),
        source.c.variant_id if test else literal(None, String(16)),
        at,
        at,
        at,
    )
    if not test:
        rows = rows.where(condition)
    result = await ctx.session.execute(
        insert(SendLog).from_select(
            [
                "id",
                "workspace_id",
                "kind",
                "campaign_id",
                "contact_id",
                "email",
                "priority",
                "attempts",
                "open_count",
                "click_count",
                "status",
                "variant_id",
                "run_at",
                "created_at",
                "updated_at",
            ],
            rows,
        )
    )
    queued = int(getattr(result, "rowcount", 0) or 0)
    if queued == 0:
        raise ApiError(422, NO_AUDIENCE)
    if test:  # 422 (the caller's transaction then changes nothing) when too few were tested
        campaign.ab_test = ab_tests.started(test, queued, now)
    await limits.reserve(ctx.session, ctx.principal.account_id, ctx.principal.plan, queued, now)
    campaign.from_email, campaign.from_name, campaign.reply_to = from_email, from_name, reply_to
    campaign.status, campaign.started_at, campaign.recipients = "sending", now, queued
    campaign.scheduled_at = campaign.scheduled_at or now
    campaign.error = None
    CAMPAIGNS.touch(campaign)
    return queued


async def send(ctx: Context, campaign_id: str) -> Campaign:
    """Start it now; or, for an assistant that needs approval, check it could start (the
    same refusals) and hold the request."""
    campaign = await locked(ctx, campaign_id)
    if campaign.status not in EDITABLE:
        raise _not_now(campaign, "sent")
    if held(ctx.principal):
        await _check_startable(ctx, campaign, utcnow())
        hold(ctx, campaign, "send", None)
        return campaign
    await start(ctx, campaign)
    clear_approval(campaign)
    return campaign


def parse_send_at(value: Any, now: datetime) -> datetime:
    if value is None or value == "":
        raise ApiError(400, "send_at is required")
    if not isinstance(value, str):
        raise ApiError(400, "send_at must be an ISO 8601 timestamp")
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ApiError(400, "send_at must be an ISO 8601 timestamp") from None
    if moment.tzinfo is None:
        raise ApiError(400, "send_at must include a time zone (e.g. 2026-12-01T09:00:00Z)")
    if moment <= now:
        raise ApiError(400, "send_at must be in the future")
    if moment > now + MAX_SCHEDULE:
        raise ApiError(400, "send_at must be within a year")
    return moment


async def _check_startable(ctx: Context, campaign: Campaign, now: datetime) -> None:
    """What `start` would refuse, checked without starting: ready, an audience, and room in
    the month's allowance for all of it."""
    await _ready(ctx, campaign)
    size = await audience_size(ctx, campaign)
    if size == 0:
        raise ApiError(422, NO_AUDIENCE)
    if campaign.ab_test:  # the test's share must hold a recipient per variant, as at start
        ab_tests.started(campaign.ab_test, size, now)
    plan = ctx.principal.plan
    used = await limits.used_this_month(ctx.session, ctx.principal.account_id, now)
    if used + size > plan.emails_per_month:
        raise limits.monthly_limit_reached(plan)


async def schedule_at(ctx: Context, campaign: Campaign, moment: datetime) -> None:
    """Schedule a campaign whose state allows it for `moment` (checked by the caller)."""
    await _check_startable(ctx, campaign, utcnow())
    campaign.status, campaign.scheduled_at, campaign.error = "scheduled", moment, None
    CAMPAIGNS.touch(campaign)


async def schedule(ctx: Context, campaign_id: str, send_at: Any) -> Campaign:
    """Schedule it; or, for an assistant that needs approval, check it could be scheduled
    (the same refusals) and hold the request with its time."""
    now = utcnow()
    campaign = await locked(ctx, campaign_id)  # an unknown id is 404 whatever the body
    moment = parse_send_at(send_at, now)
    if campaign.status not in EDITABLE:
        raise _not_now(campaign, "scheduled")
    if held(ctx.principal):
        await _check_startable(ctx, campaign, now)
        hold(ctx, campaign, "schedule", moment)
        return campaign
    await schedule_at(ctx, campaign, moment)
    clear_approval(campaign)
    return campaign


async def cancel(ctx: Context, campaign_id: str) -> Campaign:
    """A scheduled campaign returns to draft, as does one awaiting approval (the request is
    withdrawn: nothing was mailed); a sending one is cancelled and its unsent recipients are
    skipped (their reserved allowance given back)."""
    campaign = await locked(ctx, campaign_id)
    now = utcnow()
    if campaign.status in ("scheduled", AWAITING):
        campaign.status, campaign.scheduled_at = "draft", None
        clear_approval(campaign)
    elif campaign.status == "sending":
        skipped = await ctx.session.execute(
            update(SendLog)
            .where(
                SendLog.campaign_id == campaign.id,
                SendLog.status.in_(("pending", ab_tests.WAITING)),
            )
            .values(status="skipped", error="campaign cancelled", updated_at=now)
            .returning(SendLog.created_at)
        )
        returned: Counter[tuple[str, str]] = Counter(
            (ctx.principal.account_id, limits.month_period(created))
            for created in skipped.scalars().all()
        )
        await limits.give_back(ctx.session, returned)
        campaign.status, campaign.finished_at = "cancelled", now
    else:
        raise ApiError(
            409,
            f"Campaign is {campaign.status}: only a scheduled or sending campaign can be cancelled",
        )
    CAMPAIGNS.touch(campaign)
    return campaign


async def pick_winner(ctx: Context, campaign_id: str, variant_id: Any) -> Campaign:
    """A person's (or a key's) pick of an A/B test's winner, early or for a manual test."""
    campaign = await locked(ctx, campaign_id)
    await ab_tests.pick_winner(ctx, campaign, variant_id, "manual", utcnow(), "picked by hand")
    return campaign


async def duplicate(ctx: Context, campaign_id: str) -> Campaign:
    """A new draft with the same content, sender, audience and tracking: `Copy of <name>`
    (numbered when that name is taken)."""
    original = await get_campaign(ctx, campaign_id)
    base = f"Copy of {original.name}"
    name = clean_name(base[: CAMPAIGNS.max_name], CAMPAIGNS.max_name)
    number = 2
    while await CAMPAIGNS.find_by_name(ctx, name) is not None:
        suffix = f" ({number})"
        name = clean_name(base[: CAMPAIGNS.max_name - len(suffix)] + suffix, CAMPAIGNS.max_name)
        number += 1
    fields = {
        field: getattr(original, field)
        for field in (
            "subject",
            "preheader",
            "from_name",
            "from_email",
            "reply_to",
            "html_content",
            "text_content",
            "template_id",
            "audience",
            "track_opens",
            "track_clicks",
        )
    }
    # The test's variants and rules, not how the original's went.
    fields["ab_test"] = ab_tests.rules_of(original.ab_test)
    return await CAMPAIGNS.create(ctx, name, status="draft", **fields)


async def test(ctx: Context, campaign_id: str, emails: Any) -> int:
    """Send the campaign now to 1-5 addresses, subject prefixed `[Test]`. Counted against the
    month's allowance, not the hourly ceiling. No transaction is open while it sends."""
    campaign = await get_campaign(ctx, campaign_id)
    if emails is None:
        raise ApiError(400, "emails is required")
    if not isinstance(emails, list) or not emails:
        raise ApiError(400, f"emails must be an array of 1-{MAX_TEST_EMAILS} addresses")
    if len(emails) > MAX_TEST_EMAILS:
        raise ApiError(400, f"emails may have at most {MAX_TEST_EMAILS} addresses")
    addresses = list(
        dict.fromkeys(clean_address(f"emails[{i}]", e, required=True) for i, e in enumerate(emails))
    )
    await sending.ensure_not_paused(ctx)
    if not (campaign.html_content.strip() or campaign.text_content.strip()):
        raise ApiError(422, "Campaign is not ready to send: it has no HTML or text content")
    from_email, from_name, reply_to = await _sender_of(ctx, campaign)
    await sending.check_sender(ctx, from_email)
    now = utcnow()
    plan = ctx.principal.plan
    used = await limits.used_this_month(ctx.session, ctx.principal.account_id, now)
    if used + len(addresses) > plan.emails_per_month:
        raise limits.monthly_limit_reached(plan)
    message = TestMessage(
        campaign_key=(campaign.id, campaign.updated_at.isoformat()),
        subject=campaign.subject,
        preheader=campaign.preheader,
        html=campaign.html_content,
        text=campaign.text_content,
        from_email=from_email,
        from_name=from_name,
        reply_to=reply_to,
        variables=issue_variables(campaign.variables),
    )
    return await send_now(ctx, message, addresses, campaign_id=campaign.id)


async def start_due(ctx_for: Any, db: Any, settings: Any, limit: int = 20) -> int:
    """The worker's part: start scheduled campaigns whose time has come. Each starts in a
    transaction of its own; one that cannot start goes back to draft with the reason (a
    paused workspace's campaigns wait, still scheduled, until it resumes)."""
    now = utcnow()
    async with db.session(write=False) as session:
        due = list(
            (
                await session.execute(
                    select(Campaign.id, Campaign.workspace_id)
                    .where(Campaign.status == "scheduled", Campaign.scheduled_at <= now)
                    .order_by(Campaign.scheduled_at)
                    .limit(limit)
                )
            ).all()
        )
    started = 0
    for campaign_id, workspace_id in due:
        try:
            async with db.transaction() as session:
                ctx = await ctx_for(session, workspace_id)
                campaign = await session.scalar(
                    select(Campaign).where(
                        Campaign.id == campaign_id, Campaign.status == "scheduled"
                    )
                )
                if campaign is None:
                    continue
                if (await sending.settings_of(ctx)).paused:
                    continue
                await start(ctx, campaign)
                started += 1
        except ApiError as refused:
            async with db.transaction() as session:
                await session.execute(
                    update(Campaign)
                    .where(Campaign.id == campaign_id, Campaign.status == "scheduled")
                    .values(status="draft", error=refused.message, updated_at=utcnow())
                )
            log.warning("scheduled campaign %s could not start: %s", campaign_id, refused.message)
    return started
