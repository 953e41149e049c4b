from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mailroom.core.pagination import Pagination


class WebhookCreate(BaseModel):
    url: Any = Field(None, description="https URL of a public receiver (or a Slack / Teams URL).")
    description: Any = Field(None, description="Optional, up to 500 characters.")
    event_types: Any = Field(None, description="Event names to receive (see the catalog).")
    filters: Any = Field(
        None,
        description="Optional scoping: list_ids, form_ids, tag_ids, campaign_ids, domain_ids "
        "(up to 100 ids each); several dimensions combine with AND.",
    )
    enabled: Any = Field(None, description="Default true.")
    channel: Any = Field(
        None, description="server, slack or teams; detected from the URL when omitted."
    )


class WebhookUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: Any = None
    description: Any = None
    event_types: Any = None
    filters: Any = None
    enabled: Any = None
    channel: Any = None


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
    event: Any = Field(None, description="An event name from the catalog.")


class TestResult(BaseModel):
    ok: bool
    status: int
    error: str | None = None
