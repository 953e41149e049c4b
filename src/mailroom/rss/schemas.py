from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from mailroom.automations.schemas import ZONES
from mailroom.campaigns.schemas import AUDIENCE, EMAIL, Audience
from mailroom.core.loose import Doc, body_config, choice, name_field, nullable, text
from mailroom.core.pagination import Pagination
from mailroom.models import FEED_STATUSES
from mailroom.rss import schedule as schedules

SCHEDULE = {
    "type": "object",
    "description": '`{mode: "digest", frequency: "daily"|"weekly"|"monthly", time: '
    '"HH:MM", weekday? (monday..sunday, weekly), day_of_month? (1-31, monthly; past the '
    "month's end: its last day), timezone (IANA)}` gathers the items new since the last "
    'issue; `{mode: "each_item", check_every_minutes (5-1,440)}` sends one issue per new '
    "item. Default: a daily digest at 09:00 UTC.",
    "properties": {
        "mode": choice(*schedules.MODES),
        "frequency": choice(*schedules.FREQUENCIES),
        "time": text(5, pattern=r"^([01]\d|2[0-3]):[0-5]\d$"),
        "weekday": choice(*schedules.WEEKDAYS),
        "day_of_month": {"type": "integer", "minimum": 1, "maximum": 31},
        "timezone": ZONES,
        "check_every_minutes": {
            "type": "integer",
            "minimum": schedules.MIN_CHECK,
            "maximum": schedules.MAX_CHECK,
        },
    },
}
TEMPLATE_NOTE = (
    "The template receives `feed` (`title`, `link`) and `items` (newest first; each `title`, "
    "`link`, `summary` (plain text), `content` (the item's HTML, sanitised), `published_at`, "
    "`author`, `image`) besides the usual merge tags."
)
Count = Annotated[Any, Doc(nullable({"type": "integer", "minimum": 1, "maximum": 50}))]
Address = Annotated[Any, Doc(nullable(EMAIL))]


class RssFeedCreate(BaseModel):
    model_config = body_config(
        "name",
        "url",
        "template_id",
        example={
            "name": "Blog digest",
            "url": "https://blog.example.com/feed/",
            "template_id": "0195f3b2-0000-7000-8000-000000000001",
            "subject": "New on the blog: {{ items[0].title }}",
            "audience": {"list_ids": ["0195f3b2-0000-7000-8000-000000000002"]},
            "schedule": {
                "mode": "digest",
                "frequency": "weekly",
                "weekday": "friday",
                "time": "08:00",
                "timezone": "Europe/Paris",
            },
        },
    )
    name: Annotated[Any, Doc(name_field(100))] = Field(
        None, description="Up to 100 characters, unique ignoring case."
    )
    url: Annotated[Any, Doc(text(2000, pattern=r"^[Hh][Tt][Tt][Pp][Ss]?://\S+$"))] = Field(
        None,
        description="http or https, no credentials, a public address (checked again at every "
        "fetch and redirect).",
    )
    template_id: Annotated[Any, Doc(text(min_length=1))] = Field(
        None, description=f"A template of this workspace. {TEMPLATE_NOTE}"
    )
    subject: Annotated[Any, Doc(nullable(text(200)))] = Field(
        None, description="A template string; default `{{ items[0].title }}`."
    )
    audience: Annotated[Any, Doc(nullable(AUDIENCE))] = None
    schedule: Annotated[Any, Doc(nullable(SCHEDULE))] = None
    min_items: Count = Field(None, description="Default 1: a digest waits for this many.")
    max_items: Count = Field(None, description="Default 10, at most 50; older ones are skipped.")
    from_email: Address = Field(None, description="Default: the workspace's sender.")
    from_name: Annotated[Any, Doc(nullable(text(100)))] = None
    reply_to: Address = None


class RssFeedUpdate(RssFeedCreate):
    model_config = body_config(
        example={"schedule": {"mode": "each_item", "check_every_minutes": 30}}
    )


class RssFeedOut(BaseModel):
    id: str
    name: str
    url: str
    template_id: str
    subject: str
    audience: Audience
    from_email: str | None
    from_name: str | None
    reply_to: str | None
    schedule: dict[str, Any]
    min_items: int
    max_items: int
    status: str = Field(json_schema_extra={"enum": list(FEED_STATUSES)})
    last_checked_at: datetime | None
    last_error: str | None
    last_error_at: datetime | None
    last_issue_at: datetime | None
    next_run_at: datetime | None
    created_at: datetime
    updated_at: datetime


class RssFeedEnvelope(BaseModel):
    rss_feed: RssFeedOut


class RssFeedList(BaseModel):
    rss_feeds: list[RssFeedOut]
    pagination: Pagination


class RssFeedDeleted(BaseModel):
    success: bool
    id: str


class RssCheckItem(BaseModel):
    guid: str
    title: str
    link: str | None
    published_at: datetime | None
    summary: str


class RssCheck(BaseModel):
    items: list[RssCheckItem]
    subject: str
    html: str


class RssRun(BaseModel):
    campaign_id: str | None
    campaign_ids: list[str] = Field(description="Every issue made (each_item: one per item).")
    reason: str | None = Field(None, description="`no new items` when nothing was sent.")
