from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from mailroom.core.loose import Doc, body_config, choice, nullable, text
from mailroom.core.pagination import Pagination
from mailroom.events.catalog import CHAT_EVENTS, DIMENSIONS, EVENT_NAMES

CHANNELS = ("server", "slack", "teams")
URL = text(2000, pattern="^https://[^@/?#]+", format="uri")
EVENT_TYPES = {
    "type": "array",
    "minItems": 1,
    "items": choice(*EVENT_NAMES),
    "description": "Event names to receive; Slack and Teams endpoints take only "
    f"{', '.join(sorted(CHAT_EVENTS))}.",
}
FILTERS = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        key: {"type": "array", "maxItems": 100, "items": {"type": "string"}} for key in DIMENSIONS
    },
    "description": "Optional scoping by ids of this workspace (up to 100 per dimension); "
    "several dimensions combine with AND; omitted or {} means unscoped.",
}
# A chat channel named outright takes only the chat events.
CHAT_ONLY = {
    "if": {"required": ["channel"], "properties": {"channel": {"enum": ["slack", "teams"]}}},
    "then": {"properties": {"event_types": {"items": choice(*sorted(CHAT_EVENTS))}}},
}


class WebhookCreate(BaseModel):
    model_config = body_config(
        "url",
        "event_types",
        rules=[CHAT_ONLY],
        example={"url": "https://hooks.example.com/mailroom", "event_types": ["contact.created"]},
    )
    url: Annotated[Any, Doc(URL)] = Field(
        None,
        description="https URL of a publicly reachable receiver, no credentials (or a Slack / "
        "Teams URL). Private, loopback and link-local addresses are refused.",
    )
    description: Annotated[Any, Doc(nullable(text(500)))] = Field(
        None, description="Up to 500 characters."
    )
    event_types: Annotated[Any, Doc(EVENT_TYPES)] = None
    filters: Annotated[Any, Doc(nullable(FILTERS))] = None
    enabled: Annotated[Any, Doc({"type": "boolean"})] = Field(None, description="Default true.")
    channel: Annotated[Any, Doc(nullable(choice(*CHANNELS)))] = Field(
        None, description="server, slack or teams; detected from the URL when omitted."
    )


class WebhookUpdate(BaseModel):
    model_config = body_config(forbid_extra=True, rules=[{"minProperties": 1}, CHAT_ONLY])
    url: Annotated[Any, Doc(URL)] = None
    description: Annotated[Any, Doc(nullable(text(500)))] = None
    event_types: Annotated[Any, Doc(EVENT_TYPES)] = None
    filters: Annotated[Any, Doc(nullable(FILTERS))] = None
    enabled: Annotated[Any, Doc({"type": "boolean"})] = Field(
        None, description="true re-enables a disabled endpoint (failure count reset)."
    )
    channel: Annotated[Any, Doc(nullable(choice(*CHANNELS)))] = None


class Health(BaseModel):
    consecutive_failures: int
    last_success_at: datetime | None
    last_failure_at: datetime | None
    disabled_reason: str | None
    disabled_at: datetime | None


class WebhookOut(BaseModel):
    id: str
    url: str
    description: str
    channel: str
    event_types: list[str]
    enabled: bool
    filters: dict[str, list[str]]
    created_at: datetime
    updated_at: datetime
    health: Health


class WebhookWithSecret(WebhookOut):
    secret: str = Field(description="Signing secret: shown only here and on rotation.")


class WebhookList(BaseModel):
    webhooks: list[WebhookOut]


class WebhookDeleted(BaseModel):
    success: bool
    id: str


class DeliveryOut(BaseModel):
    id: str
    event_type: str
    status: str
    attempts: int
    last_status_code: int | None
    last_error: str | None
    delivered_at: datetime | None
    created_at: datetime
    next_attempt_at: datetime | None
    payload: dict[str, Any] | None = Field(None, description="Only with include=payload.")


class DeliveryPage(BaseModel):
    deliveries: list[DeliveryOut]
    pagination: Pagination


class TestRequest(BaseModel):
    model_config = body_config("event")
    event: Annotated[Any, Doc(choice(*EVENT_NAMES))] = Field(
        None, description="An event name from the catalog (a chat endpoint takes chat events)."
    )


class TestResult(BaseModel):
    ok: bool
    status: int
    error: str | None = None
