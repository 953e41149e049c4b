from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from mailroom.campaigns import actions, report, service
from mailroom.campaigns.schemas import (
    CONTENT,
    AbWinnerBody,
    CampaignCreate,
    CampaignEnvelope,
    CampaignList,
    CampaignReportEnvelope,
    CampaignUpdate,
    Deleted,
    RecipientPage,
    ScheduleBody,
    TestBody,
    TestSent,
)
from mailroom.core.context import Context
from mailroom.core.loose import Doc, choice
from mailroom.core.pagination import Pagination
from mailroom.models import CAMPAIGN_STATUSES
from mailroom.web.deps import Paging, set_audit_target, set_status, use
from mailroom.web.openapi import errors

router = APIRouter(prefix="/api/v1/campaigns", tags=["Campaigns"])

REFUSALS = (
    "Refused with nothing queued: 403 `Monthly email limit reached (<n> on the <plan> plan).` "
    "when the audience is larger than what is left of the month's allowance (pooled per "
    "account); 403 `Sending is paused for this account...`; 422 `Sending is not configured: "
    "...` when real SMTP is configured and the sender's domain is not a verified sending "
    "domain; 422 when the campaign lacks a subject or content, or the audience has no "
    "subscribed contact; 409 when the campaign is not a draft or scheduled."
)
HELD = (
    "Called by an assistant whose audience sends need approval, nothing is sent or scheduled: "
    "the same checks are made (and refuse as above), then the answer is 202 with the campaign "
    "`awaiting_approval` and `approval` saying what was asked, until a workspace admin "
    "approves (it is sent or scheduled as asked, every check made again) or rejects it (a "
    "draft again, with the reason) in the dashboard. Keys and assistants cannot approve."
)


async def _one(ctx: Context, campaign: Any) -> dict[str, Any]:
    return {"campaign": await service.describe(ctx, campaign)}


@router.get(
    "",
    response_model=CampaignList,
    summary="List campaigns",
    description="Campaigns of the workspace, newest first, each with its stats.",
    responses=errors(400),
)
async def list_campaigns(
    ctx: Annotated[Context, use("campaigns:read")],
    paging: Paging,
    q: Annotated[str | None, Query(description="Case-insensitive substring of the name.")] = None,
    status: Annotated[
        str | None,
        Query(description="Only campaigns in this state."),
        Doc(choice(*CAMPAIGN_STATUSES)),
    ] = None,
) -> dict[str, Any]:
    campaigns, total = await service.list_campaigns(ctx, paging, q, status)
    counts = await service.stats(ctx, [c.id for c in campaigns])
    return {
        "campaigns": [service.as_dict(c, counts[c.id]) for c in campaigns],
        "pagination": Pagination.of(paging, total),
    }


@router.post(
    "",
    status_code=201,
    response_model=CampaignEnvelope,
    summary="Create a campaign",
    description=f"A draft. {CONTENT}",
    responses=errors(400, 404, 409, 413, e404="Template not found"),
)
async def create_campaign(
    body: CampaignCreate, request: Request, ctx: Annotated[Context, use("campaigns:write")]
) -> dict[str, Any]:
    campaign = await service.create_campaign(ctx, body.model_dump(exclude_unset=True))
    set_audit_target(request, campaign.id)
    return await _one(ctx, campaign)


@router.get(
    "/{id}", response_model=CampaignEnvelope, summary="Get a campaign", responses=errors(404)
)
async def get_campaign(id: str, ctx: Annotated[Context, use("campaigns:read")]) -> dict[str, Any]:
    return await _one(ctx, await service.get_campaign(ctx, id))


@router.patch(
    "/{id}",
    response_model=CampaignEnvelope,
    summary="Update a campaign",
    description="Only while it is a draft or scheduled (409 otherwise, also while it awaits "
    "approval). Unknown fields are 400. A scheduled campaign changed by an assistant whose "
    "sends need approval awaits approval again, for the same time.",
    responses=errors(400, 404, 409, 413),
)
async def update_campaign(
    id: str, body: CampaignUpdate, ctx: Annotated[Context, use("campaigns:write")]
) -> dict[str, Any]:
    changes = body.model_dump(exclude_unset=True)
    return await _one(ctx, await service.update_campaign(ctx, id, changes))


@router.delete(
    "/{id}",
    response_model=Deleted,
    summary="Delete a campaign",
    description="Refused (409) while it is scheduled, sending or awaiting approval: cancel it "
    "first.",
    responses=errors(404, 409),
)
async def delete_campaign(
    id: str, ctx: Annotated[Context, use("campaigns:write")]
) -> dict[str, Any]:
    await service.delete_campaign(ctx, id)
    return {"success": True, "id": id}


@router.post(
    "/{id}/send",
    status_code=202,
    response_model=CampaignEnvelope,
    summary="Send a campaign now",
    description="Freezes the audience (each subscribed contact once) and starts sending; "
    f"the campaign is `sending`, then `sent` once every recipient is done. {REFUSALS} {HELD}",
    responses=errors(404, 409, 422),
)
async def send_campaign(id: str, ctx: Annotated[Context, use("campaigns:send")]) -> dict[str, Any]:
    return await _one(ctx, await actions.send(ctx, id))


@router.post(
    "/{id}/schedule",
    response_model=CampaignEnvelope,
    summary="Schedule a campaign",
    description="Starts at `send_at` (in the future, within a year). The audience is frozen "
    "then; the checks are made now and again then (a campaign that cannot start then goes "
    f"back to draft with `error` saying why). {REFUSALS} {HELD}",
    responses={
        202: {"model": CampaignEnvelope, "description": "Held for a workspace admin's approval"},
        **errors(400, 404, 409, 422),
    },
)
async def schedule_campaign(
    id: str,
    body: ScheduleBody,
    request: Request,
    response: Response,
    ctx: Annotated[Context, use("campaigns:send")],
) -> dict[str, Any]:
    campaign = await actions.schedule(ctx, id, body.send_at)
    if campaign.status == "awaiting_approval":
        set_status(request, response, 202)
    return await _one(ctx, campaign)


@router.post(
    "/{id}/cancel",
    response_model=CampaignEnvelope,
    summary="Cancel a campaign",
    description="A scheduled campaign returns to draft, as does one awaiting approval (the "
    "assistant's request is withdrawn); a sending one becomes `cancelled` and its unsent "
    "recipients are never sent (their allowance is given back).",
    responses=errors(404, 409),
)
async def cancel_campaign(
    id: str, ctx: Annotated[Context, use("campaigns:write")]
) -> dict[str, Any]:
    return await _one(ctx, await actions.cancel(ctx, id))


@router.post(
    "/{id}/ab-test/winner",
    response_model=CampaignEnvelope,
    summary="Pick an A/B test's winner",
    description="While the campaign's A/B test runs (`ab_test.status` testing), sends "
    "`variant_id` to the rest of the audience now, whatever the test's rule (`decided_by` "
    "manual). 409 when the campaign is not testing.",
    responses=errors(400, 404, 409),
)
async def pick_ab_winner(
    id: str, body: AbWinnerBody, ctx: Annotated[Context, use("campaigns:send")]
) -> dict[str, Any]:
    return await _one(ctx, await actions.pick_winner(ctx, id, body.variant_id))


@router.post(
    "/{id}/duplicate",
    status_code=201,
    response_model=CampaignEnvelope,
    summary="Duplicate a campaign",
    description="A new draft named `Copy of <name>` with the same content, sender, audience "
    "and tracking.",
    responses=errors(404),
)
async def duplicate_campaign(
    id: str, request: Request, ctx: Annotated[Context, use("campaigns:write")]
) -> dict[str, Any]:
    copy = await actions.duplicate(ctx, id)
    set_audit_target(request, copy.id)
    return await _one(ctx, copy)


@router.post(
    "/{id}/test",
    response_model=TestSent,
    summary="Send a test of a campaign",
    description="Sends now to 1-5 addresses, the subject prefixed `[Test]` (merge tags filled "
    "from the contact with that address, if any). Counts against the month's allowance, not "
    "the hourly ceiling.",
    responses=errors(400, 404, 422),
)
async def test_campaign(
    id: str, body: TestBody, ctx: Annotated[Context, use("campaigns:send")]
) -> dict[str, Any]:
    return {"sent": await actions.test(ctx, id, body.emails)}


@router.get(
    "/{id}/recipients",
    response_model=RecipientPage,
    summary="List a campaign's recipients",
    description="Its send log: each recipient's address, status (queued, sent, failed, "
    "skipped, bounced, complained), when it was sent, its Message-ID and the last error.",
    responses=errors(400, 404),
)
async def list_campaign_recipients(
    id: str, ctx: Annotated[Context, use("campaigns:read")], paging: Paging
) -> dict[str, Any]:
    rows, total = await service.recipients(ctx, id, paging)
    return {"recipients": rows, "pagination": Pagination.of(paging, total)}


@router.get(
    "/{id}/report",
    response_model=CampaignReportEnvelope,
    summary="Get a campaign's report",
    description="Totals, unique and total opens and clicks, rates (fractions of `sent`), clicks "
    "per link and opens/clicks per hour over the first 48 hours. Opens and clicks count people "
    "only: requests from link scanners and prefetchers are recorded but not counted.",
    responses=errors(404),
)
async def get_campaign_report(
    id: str, ctx: Annotated[Context, use("campaigns:read")]
) -> dict[str, Any]:
    return {"report": await report.report(ctx, id)}
