from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from mailroom.core.loose import Doc, body_config, choice, name_field, nullable, text
from mailroom.core.pagination import Pagination
from mailroom.templates.schemas import MERGE_TAGS

AUDIENCE_KEYS = (
    "list_ids",
    "segment_ids",
    "tag_ids",
    "exclude_list_ids",
    "exclude_segment_ids",
    "exclude_tag_ids",
)
MAX_AUDIENCE_IDS = 100
EMAIL = text(254, min_length=3, format="email")
AUDIENCE = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        key: {
            "type": "array",
            "maxItems": MAX_AUDIENCE_IDS,
            "items": {"type": "string", "minLength": 1},
        }
        for key in AUDIENCE_KEYS
    },
    "description": "Who receives it: contacts on any of the lists, in any of the segments or "
    "carrying any of the tags, minus those on the excluded ones; each contact once, only "
    "`subscribed` ones (on the Free plan only confirmed list members). Ids of this workspace, "
    "up to 100 per key.",
}
CONTENT = (
    "Content of its own (`html_content` up to 500,000 characters, `text_content` up to 200,000; "
    "413 past either), or `template_id`, whose subject, preheader, HTML and text are copied "
    "where the request does not set them. " + MERGE_TAGS
)

Name = Annotated[Any, Doc(name_field(100))]
Subject = Annotated[Any, Doc(nullable(text(200)))]
FromName = Annotated[Any, Doc(nullable(text(100)))]
Address = Annotated[Any, Doc(nullable(EMAIL))]
Html = Annotated[Any, Doc(nullable(text(500_000)))]
Text = Annotated[Any, Doc(nullable(text(200_000)))]
Flag = Annotated[Any, Doc({"type": "boolean"})]
_VARIANT_CHANGES = ("subject", "from_name", "preheader", "html_content", "text_content")
AB_TEST = {
    "type": "object",
    "additionalProperties": False,
    "required": ["variants"],
    "properties": {
        "variants": {
            "type": "array",
            "minItems": 2,
            "maxItems": 5,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "id": nullable(text(16, min_length=1, pattern=r"^[A-Za-z0-9_-]{1,16}$")),
                    "name": nullable(name_field(100)),
                    "subject": nullable(text(200)),
                    "from_name": nullable(text(100)),
                    "preheader": nullable(text(200)),
                    "html_content": nullable(text(500_000)),
                    "text_content": nullable(text(200_000)),
                    "template_id": nullable(text(min_length=1)),
                },
                # A variant changes something: one of these, or a template's content.
                "anyOf": [
                    {"required": [key], "properties": {key: {"type": "string"}}}
                    for key in (*_VARIANT_CHANGES, "template_id")
                ],
            },
            "description": "2 to 5 variants (ids unique; `a`..`e` and `Variant A`.. where not "
            "given). Each overrides only what it names; `template_id` copies that template's "
            "subject, preheader, HTML and text where the variant sets none. " + MERGE_TAGS,
        },
        "test_share": {"type": "integer", "minimum": 10, "maximum": 50, "default": 20},
        "winner_by": {**choice("opens", "clicks", "manual"), "default": "opens"},
        "decide_after_minutes": {
            "type": "integer",
            "minimum": 30,
            "maximum": 10080,
            "default": 240,
        },
    },
    "description": "An A/B test: the variants are sent to `test_share` percent of the "
    "audience, split at random and evenly; after `decide_after_minutes` the variant with the "
    "best unique open (or click) rate among them is sent to the rest (`manual`: a person picks "
    "with POST /campaigns/{id}/ab-test/winner). Null removes the test.",
}
AbTest = Annotated[Any, Doc(nullable(AB_TEST))]


class CampaignCreate(BaseModel):
    model_config = body_config(
        "name",
        example={
            "name": "November news",
            "subject": "What's new, {{ first_name | default('friend') }}",
            "from_email": "news@example.com",
            "template_id": "0195f3b2-0000-7000-8000-000000000001",
            "audience": {"list_ids": ["0195f3b2-0000-7000-8000-000000000002"]},
        },
    )
    name: Name = Field(None, description="Up to 100 characters, unique ignoring case.")
    subject: Subject = None
    preheader: Subject = None
    from_name: FromName = None
    from_email: Address = Field(
        None,
        description="Any address when the campaign is made; its domain must be a verified "
        "sending domain when it is sent or scheduled with real SMTP configured.",
    )
    reply_to: Address = None
    html_content: Html = None
    text_content: Text = None
    template_id: Annotated[Any, Doc(nullable(text(min_length=1)))] = Field(
        None, description="A template of this workspace whose content is copied."
    )
    audience: Annotated[Any, Doc(nullable(AUDIENCE))] = None
    track_opens: Flag = Field(None, description="Default true.")
    track_clicks: Flag = Field(None, description="Default true.")
    ab_test: AbTest = None


class CampaignUpdate(BaseModel):
    model_config = body_config(forbid_extra=True, rules=[{"minProperties": 1}])
    name: Name = None
    subject: Subject = None
    preheader: Subject = None
    from_name: FromName = None
    from_email: Address = None
    reply_to: Address = None
    html_content: Html = None
    text_content: Text = None
    audience: Annotated[Any, Doc(nullable(AUDIENCE))] = None
    track_opens: Flag = None
    track_clicks: Flag = None
    ab_test: AbTest = None


class Audience(BaseModel):
    list_ids: list[str]
    segment_ids: list[str]
    tag_ids: list[str]
    exclude_list_ids: list[str]
    exclude_segment_ids: list[str]
    exclude_tag_ids: list[str]


class Stats(BaseModel):
    recipients: int
    sent: int
    failed: int
    skipped: int
    delivered: int
    opened: int
    clicked: int
    bounced: int
    complained: int
    unsubscribed: int


class CampaignApproval(BaseModel):
    """An assistant's request that waits, or waited, for a workspace admin."""

    status: Literal["pending", "approved", "rejected"] = Field(
        description="pending while the campaign is `awaiting_approval`; approved (it was sent "
        "or scheduled as asked) or rejected (it is a draft again) once an admin decided."
    )
    requested_action: Literal["send", "schedule"] = Field(
        description="send: start at once when approved; schedule: start at `send_at`."
    )
    send_at: datetime | None = Field(description="The time asked for a schedule; null for send.")
    requested_by_assistant_id: str | None = Field(description="The assistant that asked.")
    requested_at: datetime
    decided_at: datetime | None
    decided_by: str | None = Field(description="The deciding admin's email address.")
    rejected_reason: str | None = Field(description="Why the admin rejected it.")


class AbVariantOut(BaseModel):
    id: str
    name: str
    subject: str | None = None
    from_name: str | None = None
    preheader: str | None = None
    html_content: str | None = None
    text_content: str | None = None
    template_id: str | None = None


class AbTestOut(BaseModel):
    variants: list[AbVariantOut]
    test_share: int
    winner_by: Literal["opens", "clicks", "manual"]
    decide_after_minutes: int
    status: Literal["testing", "decided"] | None = Field(
        description="Null while a draft; testing from the send until a winner is picked."
    )
    decides_at: datetime | None
    winner_variant_id: str | None
    decided_at: datetime | None
    decided_by: Literal["opens", "clicks", "manual"] | None


class CampaignOut(BaseModel):
    id: str
    name: str
    subject: str
    preheader: str
    from_name: str
    from_email: str
    reply_to: str
    html_content: str
    text_content: str
    template_id: str | None
    audience: Audience
    track_opens: bool
    track_clicks: bool
    status: str = Field(
        description="draft, awaiting_approval (an assistant's send or schedule waits for a "
        "workspace admin), scheduled, sending, sent or cancelled."
    )
    scheduled_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    stats: Stats
    error: str | None = Field(
        description="Why a scheduled campaign could not start when its time came (it is a "
        "draft again); null otherwise."
    )
    approval: CampaignApproval | None = Field(
        description="The assistant's request the campaign's state comes from: pending while "
        "it awaits approval, then approved or rejected (with the reason). Null when none: "
        "sending, scheduling or cancelling it back to draft without approval clears it."
    )
    ab_test: AbTestOut | None = Field(
        description="The campaign's A/B test, or null: its variants and rules, and once "
        "sending `status` (testing, then decided), when it decides, and the winner."
    )
    created_at: datetime
    updated_at: datetime


class CampaignEnvelope(BaseModel):
    campaign: CampaignOut


class CampaignList(BaseModel):
    campaigns: list[CampaignOut]
    pagination: Pagination


class Deleted(BaseModel):
    success: bool
    id: str


class AbWinnerBody(BaseModel):
    model_config = body_config("variant_id")
    variant_id: Annotated[Any, Doc(text(16, min_length=1))] = Field(
        None, description="The id of one of the test's variants."
    )


class ScheduleBody(BaseModel):
    model_config = body_config("send_at")
    send_at: Annotated[Any, Doc({"type": "string", "format": "date-time"})] = Field(
        None, description="When to start: ISO 8601 with a time zone, in the future, within a year."
    )


class TestBody(BaseModel):
    model_config = body_config("emails")
    emails: Annotated[Any, Doc({"type": "array", "minItems": 1, "maxItems": 5, "items": EMAIL})] = (
        Field(None, description="1-5 addresses; the subject is prefixed `[Test]`.")
    )


class TestSent(BaseModel):
    sent: int


class Recipient(BaseModel):
    contact_id: str | None
    email: str
    status: str = Field(description="queued, sent, failed, skipped, bounced or complained.")
    sent_at: datetime | None
    message_id: str | None
    error: str | None


class RecipientPage(BaseModel):
    recipients: list[Recipient]
    pagination: Pagination


class ReportTotals(BaseModel):
    recipients: int
    sent: int
    delivered: int
    opened: int = Field(description="Recipients who opened (a click counts as an open).")
    clicked: int = Field(description="Recipients who clicked.")
    bounced: int
    complained: int
    unsubscribed: int


class ReportRates(BaseModel):
    open: float = Field(description="Unique opens over sent, 0 to 1.")
    click: float
    bounce: float
    complaint: float
    unsubscribe: float


class ReportLink(BaseModel):
    url: str
    clicks: int
    unique_clicks: int


class ReportHour(BaseModel):
    hour: datetime = Field(description="The start of the hour (UTC).")
    opens: int
    clicks: int


class RevenueFigures(BaseModel):
    orders: int = Field(description="Orders attributed (cancelled and refunded ones excluded).")
    total: str = Field(description="Their total, a decimal string with two places.")
    currency: str | None = Field(
        description="ISO 4217; the workspace's first store's when nothing was bought, "
        "null without a store."
    )


class Revenue(RevenueFigures):
    by_currency: list[RevenueFigures] | None = Field(
        default=None, description="Only when the orders used several currencies: each one."
    )


class VariantRates(BaseModel):
    open: float = Field(description="Unique opens over sent, 0 to 1.")
    click: float


class VariantReport(BaseModel):
    id: str
    name: str
    sent: int
    opens: int = Field(description="Recipients who opened.")
    clicks: int = Field(description="Recipients who clicked.")
    rates: VariantRates
    unsubscribes: int
    bounces: int
    revenue: Revenue = Field(
        description="Orders attributed to the campaign whose buyer was sent this variant."
    )


class AbWinner(BaseModel):
    variant_id: str
    decided_by: Literal["opens", "clicks", "manual"]
    decided_at: datetime
    reason: str = Field(description="Why it won, in words.")


class ProviderReport(BaseModel):
    provider: str = Field(
        description="The recipients' mailbox provider: google, microsoft, yahoo, apple, or the "
        "MX host of others (other when unknown)."
    )
    sent: int = Field(description="Messages it accepted.")
    deferred: int = Field(description="Deferral answers it gave (421/4xx: tried again later).")
    bounced: int
    pace_per_minute: float | None = Field(
        description="Messages it accepted per minute, from its first to its last (null before two)."
    )


class CampaignReport(BaseModel):
    totals: ReportTotals
    opens: int = Field(description="Every counted open, repeats included.")
    clicks: int = Field(description="Every counted click, repeats included.")
    rates: ReportRates
    links: list[ReportLink]
    hourly: list[ReportHour] = Field(
        description="Opens and clicks per hour over the first 48 hours after the start."
    )
    revenue: Revenue = Field(
        description="Orders placed within the store's attribution_days after a recipient "
        "clicked this campaign's email (the last email clicked wins)."
    )
    variants: list[VariantReport] | None = Field(
        default=None,
        description="With an A/B test: each variant's figures (its test sends, and the "
        "winner's sends to the rest of the audience too); null without a test.",
    )
    winner: AbWinner | None = Field(
        default=None, description="The A/B test's winner once picked, and by what rule."
    )
    providers: list[ProviderReport] = Field(
        default_factory=list,
        description="Per mailbox provider of the recipients (sent through a relay; the file "
        "outbox has none), most messages first: each is paced on its own, slowed when it "
        "answers try later.",
    )


class CampaignReportEnvelope(BaseModel):
    report: CampaignReport
