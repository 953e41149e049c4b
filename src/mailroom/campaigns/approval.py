"""A workspace admin decides what an assistant asked to mail to an audience.

An assistant connected with approval required never starts or schedules a campaign: its send
or schedule is checked as the real one would be, then held (`awaiting_approval`, see
`campaigns.actions`). Only a person who is an admin of the workspace decides, in the
dashboard: approving sends or schedules it as asked (the same `start` / `schedule_at` the API
uses, so every check is made again now), rejecting returns it to draft with the reason, which
the campaign keeps for the assistant to read. Keys and assistants never decide: an agent
could otherwise approve itself, or one key approve what another asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from mailroom.campaigns import actions
from mailroom.campaigns.service import AWAITING, CAMPAIGNS
from mailroom.core.auth import Principal
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.models import ApiKey, Assistant, Campaign, Person

MAX_REASON = 1000
ONLY_PEOPLE = "Forbidden: only a workspace admin approves or rejects, in the dashboard"
PASSED = (
    "The time the assistant asked for ({when}) has passed: reject the request, then "
    "schedule the campaign again"
)


def _check_decider(principal: Principal) -> None:
    if principal.person_id is None or principal.assistant_id is not None:
        raise ApiError(403, ONLY_PEOPLE)
    principal.check_admin()


async def _awaiting(ctx: Context, campaign_id: str, what: str) -> Campaign:
    campaign = await actions.locked(ctx, campaign_id)
    if campaign.status != AWAITING:
        raise ApiError(
            409, f"Campaign is {campaign.status}: only a campaign awaiting approval can be {what}"
        )
    return campaign


async def _decider_email(ctx: Context) -> str:
    email = await ctx.session.scalar(
        select(Person.email).where(Person.id == ctx.principal.person_id)
    )
    return str(email or "")


async def approve(ctx: Context, campaign_id: str) -> Campaign:
    """Send or schedule the campaign as the assistant asked, every check made again (a
    refusal changes nothing: it stays awaiting approval)."""
    _check_decider(ctx.principal)
    campaign = await _awaiting(ctx, campaign_id, "approved")
    now = utcnow()
    if campaign.approval_action == "schedule":
        moment = campaign.approval_send_at
        if moment is None or moment <= now:
            shown = moment.strftime("%Y-%m-%d %H:%M UTC") if moment else "no time"
            raise ApiError(422, PASSED.format(when=shown))
        await actions.schedule_at(ctx, campaign, moment)
    else:
        await actions.start(ctx, campaign)
    campaign.approval_status, campaign.approval_decided_at = "approved", now
    campaign.approval_decided_by = await _decider_email(ctx)
    CAMPAIGNS.touch(campaign)
    return campaign


def clean_reason(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ApiError(400, "Give a reason: the assistant reads it to know what to change")
    reason = " ".join(value.split())
    if len(reason) > MAX_REASON:
        raise ApiError(400, f"The reason may have at most {MAX_REASON:,} characters")
    return reason


async def reject(ctx: Context, campaign_id: str, reason: Any) -> Campaign:
    """Back to draft, nothing mailed; the reason stays on the campaign for the assistant."""
    _check_decider(ctx.principal)
    cleaned = clean_reason(reason)
    campaign = await _awaiting(ctx, campaign_id, "rejected")
    campaign.status, campaign.scheduled_at = "draft", None
    campaign.approval_status, campaign.approval_decided_at = "rejected", utcnow()
    campaign.approval_decided_by = await _decider_email(ctx)
    campaign.approval_reason = cleaned
    CAMPAIGNS.touch(campaign)
    return campaign


@dataclass(frozen=True)
class Requester:
    """Who asked, as the review page names them."""

    assistant_id: str | None
    name: str
    revoked: bool
    behalf: str  # "acting for <person's address>", or how a key connected it


async def requester(ctx: Context, campaign: Campaign) -> Requester | None:
    """The assistant that asked for the campaign's pending or decided request, and whom it
    acts for (read even once revoked: its row stays)."""
    if campaign.approval_assistant_id is None:
        return None
    assistant = await ctx.session.scalar(
        select(Assistant).where(
            Assistant.id == campaign.approval_assistant_id,
            Assistant.workspace_id == ctx.workspace_id,
        )
    )
    if assistant is None:
        return Requester(campaign.approval_assistant_id, "an assistant", True, "for someone")
    # Who connected it; the link is gone (SET NULL) once that person or key is deleted.
    behalf = "connected by a person or key since removed"
    if assistant.connected_by_person_id:
        email = await ctx.session.scalar(
            select(Person.email).where(Person.id == assistant.connected_by_person_id)
        )
        behalf = f"acting for {email}" if email else behalf
    elif assistant.connected_by_key_id:
        key_name = await ctx.session.scalar(
            select(ApiKey.name).where(ApiKey.id == assistant.connected_by_key_id)
        )
        named = f" “{key_name}”" if key_name else ""
        behalf = f"connected with the API key{named}"
    return Requester(assistant.id, assistant.name, assistant.revoked_at is not None, behalf)
