from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from mailroom.core.loose import Doc, body_config, nullable, text
from mailroom.templates.schemas import MERGE_TAGS

EMAIL = text(254, min_length=3, format="email")


class ProviderBlockOut(BaseModel):
    provider: str = Field(description="google, microsoft, yahoo, apple, or an MX host.")
    until: datetime = Field(description="When its mail is tried again.")
    reason: str = Field(description="What the provider answered.")


class SendingOut(BaseModel):
    from_email: str
    from_name: str
    reply_to: str
    paused: bool
    reason: str | None = Field(description="workspace, operator, bounce_rate or complaint_rate.")
    note: str | None = Field(description="The operator's words, when the operator paused.")
    paused_at: datetime | None
    paused_by: str | None = Field(description="workspace, operator or health.")
    bounce_rate: float = Field(
        description="Hard bounces over the messages in the health window (0 to 1)."
    )
    complaint_rate: float = Field(description="Complaints over the messages in the window.")
    messages_in_window: int = Field(
        description="Messages the relay accepted in the last 7 days (at most the last 2,000) "
        "since the last resume."
    )
    hourly_ceiling: int
    sent_this_hour: int
    monthly_allowance: int
    sent_this_month: int = Field(
        description="Messages counted this month (queued or sent; skipped and failed ones are "
        "given back), pooled over the account's workspaces."
    )
    provider_blocks: list[ProviderBlockOut] = Field(
        default_factory=list,
        description="Mailbox providers that refused this workspace's mail for policy (spam, "
        "reputation): their mail waits until `until`, the others' goes on.",
    )


class SendingEnvelope(BaseModel):
    sending: SendingOut


class IdentityUpdate(BaseModel):
    model_config = body_config(forbid_extra=True, rules=[{"minProperties": 1}])
    from_email: Annotated[Any, Doc(nullable({"anyOf": [EMAIL, {"const": ""}]}))] = None
    from_name: Annotated[Any, Doc(nullable(text(100)))] = None
    reply_to: Annotated[Any, Doc(nullable({"anyOf": [EMAIL, {"const": ""}]}))] = None


class SendRequest(BaseModel):
    model_config = body_config(
        rules=[
            {"anyOf": [{"required": ["to"]}, {"required": ["contact_id"]}]},
            {
                "anyOf": [
                    {"required": ["template_id"]},
                    {
                        "required": ["subject"],
                        "properties": {"subject": text(200, pattern=r"\S")},
                        "anyOf": [
                            {
                                "required": ["html_content"],
                                "properties": {"html_content": text(500_000, pattern=r"\S")},
                            },
                            {
                                "required": ["text_content"],
                                "properties": {"text_content": text(200_000, pattern=r"\S")},
                            },
                        ],
                    },
                ]
            },
        ],
        example={
            "to": "jane@example.com",
            "subject": "Your order {{ vars.order_id }}",
            "html_content": "<p>Thanks, {{ first_name | default('there') }}!</p>",
            "variables": {"order_id": "A-1001"},
        },
    )
    to: Annotated[Any, Doc(EMAIL)] = Field(None, description="The address of a contact.")
    contact_id: Annotated[Any, Doc(text(min_length=1))] = Field(None, description="Or its id.")
    template_id: Annotated[Any, Doc(text(min_length=1))] = Field(
        None, description="A template of this workspace (parts sent here override it)."
    )
    subject: Annotated[Any, Doc(text(200))] = None
    preheader: Annotated[Any, Doc(text(200))] = None
    html_content: Annotated[Any, Doc(text(500_000))] = None
    text_content: Annotated[Any, Doc(text(200_000))] = None
    variables: Annotated[Any, Doc({"type": "object", "maxProperties": 100})] = Field(
        None, description="Values for `{{ vars.<name> }}`."
    )
    from_email: Annotated[Any, Doc(EMAIL)] = Field(
        None, description="Default: the workspace's sender identity."
    )
    from_name: Annotated[Any, Doc(text(100))] = None
    reply_to: Annotated[Any, Doc(EMAIL)] = None


class MessageOut(BaseModel):
    id: str
    status: str = Field(
        description="queued, sent (the relay took it), delivered (a success report came back), "
        "failed, skipped, bounced or complained."
    )
    to: str
    contact_id: str | None
    message_id: str | None
    error: str | None
    created_at: datetime
    sent_at: datetime | None
    delivered_at: datetime | None = None
    bounced_at: datetime | None = None
    complained_at: datetime | None = None


class MessageEnvelope(BaseModel):
    message: MessageOut


SEND_DESCRIPTION = (
    "Queues one message to one subscribed contact (`to` or `contact_id`), ahead of campaign "
    "traffic. Content: `template_id` and/or `subject` with `html_content` / `text_content`; "
    f"`variables` fill `{{{{ vars.<name> }}}}`. {MERGE_TAGS} Refused with nothing queued: 404 "
    "`Contact not found`; 422 when the contact is not subscribed or its address is "
    "suppressed; 403 when sending is paused or the month's allowance is used; 429 with "
    "`Retry-After` at the hourly ceiling; 422 `Sending is not configured: ...`. Sent by an "
    "assistant connected with a daily recipient budget, each message counts one recipient "
    "of its budget for the UTC day; once spent, 403 `Forbidden: this assistant's daily "
    "recipient budget (<n>) is spent; it renews at 00:00 UTC`. Never held for approval."
)
