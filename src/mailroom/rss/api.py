from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from mailroom.campaigns import service as campaigns
from mailroom.campaigns.schemas import CampaignList
from mailroom.core.context import Context
from mailroom.core.pagination import Pagination
from mailroom.rss import issues, service
from mailroom.rss.schemas import (
    TEMPLATE_NOTE,
    RssCheck,
    RssFeedCreate,
    RssFeedDeleted,
    RssFeedEnvelope,
    RssFeedList,
    RssFeedUpdate,
    RssRun,
)
from mailroom.web.deps import Paging, set_audit_target, set_status, use
from mailroom.web.openapi import errors

router = APIRouter(prefix="/api/v1/rss-feeds", tags=["RSS feeds"])

Read = Annotated[Context, use("campaigns:read")]
Write = Annotated[Context, use("campaigns:write")]
Send = Annotated[Context, use("campaigns:send")]
UNREADABLE = "Feed could not be read: <reason>"


@router.get(
    "",
    response_model=RssFeedList,
    summary="List RSS feeds",
    description="The workspace's feeds, newest first.",
    responses=errors(400),
)
async def list_rss_feeds(
    ctx: Read,
    paging: Paging,
    q: Annotated[str | None, Query(description="Case-insensitive substring of the name.")] = None,
) -> dict[str, Any]:
    feeds, total = await service.list_feeds(ctx, paging, q)
    return {
        "rss_feeds": [service.as_dict(f) for f in feeds],
        "pagination": Pagination.of(paging, total),
    }


@router.post(
    "",
    status_code=201,
    response_model=RssFeedEnvelope,
    summary="Create an RSS feed",
    description="A `draft` feed: nothing is fetched on schedule until it is activated. "
    + TEMPLATE_NOTE,
    responses=errors(400, 409, e409="A feed with this name already exists"),
)
async def create_rss_feed(body: RssFeedCreate, request: Request, ctx: Write) -> dict[str, Any]:
    feed = await service.create_feed(ctx, body.model_dump(exclude_unset=True))
    set_audit_target(request, feed.id)
    return {"rss_feed": service.as_dict(feed)}


@router.get(
    "/{id}", response_model=RssFeedEnvelope, summary="Get an RSS feed", responses=errors(404)
)
async def get_rss_feed(id: str, ctx: Read) -> dict[str, Any]:
    return {"rss_feed": service.as_dict(await service.get_feed(ctx, id))}


@router.patch(
    "/{id}",
    response_model=RssFeedEnvelope,
    summary="Change an RSS feed",
    description="Any field of the create body; a new `url` forgets the feed's cached "
    "ETag/Last-Modified. Items already seen stay seen.",
    responses=errors(400, 404, 409),
)
async def update_rss_feed(id: str, body: RssFeedUpdate, ctx: Write) -> dict[str, Any]:
    feed = await service.update_feed(ctx, id, body.model_dump(exclude_unset=True))
    return {"rss_feed": service.as_dict(feed)}


@router.delete(
    "/{id}",
    response_model=RssFeedDeleted,
    summary="Delete an RSS feed",
    description="The feed goes; the campaigns it made stay.",
    responses=errors(404),
)
async def delete_rss_feed(id: str, ctx: Write) -> dict[str, Any]:
    await service.delete_feed(ctx, id)
    return {"success": True, "id": id}


@router.post(
    "/{id}/check",
    response_model=RssCheck,
    summary="Check an RSS feed",
    description="Fetches the feed now and answers what its next issue would hold: the "
    "items, the rendered subject and HTML. Nothing is sent, marked or changed. A feed never "
    "activated treats its current items (newest first, up to `max_items`) as new.",
    responses=errors(404, 422, e422=UNREADABLE),
)
async def check_rss_feed(id: str, ctx: Write) -> dict[str, Any]:
    return await issues.check(ctx, id)


@router.post(
    "/{id}/activate",
    response_model=RssFeedEnvelope,
    summary="Activate or resume an RSS feed",
    description="Fetches the feed and marks every item it holds now as seen (activating "
    "never mails the archive), then runs it on its schedule. A paused feed resumes the same "
    "way. Needs `campaigns:send`.",
    responses=errors(403, 404, 422, e422=UNREADABLE),
)
async def activate_rss_feed(id: str, ctx: Send) -> dict[str, Any]:
    return {"rss_feed": service.as_dict(await issues.activate(ctx, id))}


@router.post(
    "/{id}/pause",
    response_model=RssFeedEnvelope,
    summary="Pause an RSS feed",
    description="No fetch and no issue until it is activated again.",
    responses=errors(404),
)
async def pause_rss_feed(id: str, ctx: Write) -> dict[str, Any]:
    return {"rss_feed": service.as_dict(await issues.pause(ctx, id))}


@router.post(
    "/{id}/run",
    status_code=202,
    response_model=RssRun,
    summary="Run an RSS feed now",
    description="Fetches the feed and sends an issue now if it has new items (any number): "
    "202 with the campaign made (each_item mode: one per item, oldest first, all in "
    '`campaign_ids`), or 200 `{campaign_id: null, reason: "no new items"}`. 409 `Feed is '
    "not active` unless it is active. Needs `campaigns:send`.",
    responses=errors(403, 404, 409, 422, e409="Feed is not active", e422=UNREADABLE),
)
async def run_rss_feed(id: str, request: Request, response: Response, ctx: Send) -> dict[str, Any]:
    made = await issues.run(ctx, id)
    if not made:
        set_status(request, response, 200)
        return {"campaign_id": None, "campaign_ids": [], "reason": issues.NO_NEW_ITEMS}
    return {"campaign_id": made[0], "campaign_ids": made, "reason": None}


@router.get(
    "/{id}/issues",
    response_model=CampaignList,
    summary="List an RSS feed's issues",
    description="The campaigns the feed made, newest first.",
    responses=errors(400, 404),
)
async def list_rss_feed_issues(id: str, ctx: Read, paging: Paging) -> dict[str, Any]:
    found, total = await service.issues(ctx, id, paging)
    counts = await campaigns.stats(ctx, [c.id for c in found])
    return {
        "campaigns": [campaigns.as_dict(c, counts[c.id]) for c in found],
        "pagination": Pagination.of(paging, total),
    }
