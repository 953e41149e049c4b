from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mailroom.core.loose import LooseBool, LooseObject, LooseString, LooseStringList
from mailroom.core.pagination import Pagination


class WebhookCreate(BaseModel):
    url: LooseString = Field(
        None, description="https URL of a public receiver (or a Slack / Teams URL)."
    )
    description: LooseString = Field(None, description="Optional, up to 500 characters.")
    event_types: LooseStringList = Field(
        None, description="Event names to receive (see the catalog)."
    )
    filters: LooseObject = Field(
        None,
        description="Optional scoping: list_ids, form_ids, tag_ids, campaign_ids, domain_ids "
        "(up to 100 ids each); several dimensions combine with AND.",
    )
    enabled: LooseBool = Field(None, description="Default true.")
    channel: LooseString = Field(
        None, description="server, slack or teams; detected from the URL when omitted."
    )


class WebhookUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: LooseString = None
    description: LooseString = None
    event_types: LooseStringList = None
    filters: LooseObject = None
    enabled: LooseBool = None
    channel: LooseString = None


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
    event: LooseString = Field(None, description="An event name from the catalog.")


class TestResult(BaseModel):
    ok: bool
    status: int
    error: str | None = None
