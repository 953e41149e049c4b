from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class PlanLimits(BaseModel):
    name: str
    writes_per_hour: int | None
    contacts: int
    emails_per_month: int
    live_automations: int | None
    webhook_endpoints: int | None
    media_quota_bytes: int
    hourly_send_ceiling: int
    double_opt_in_everywhere: bool


class SendingHealth(BaseModel):
    paused: bool
    reason: str | None = Field(description="workspace, operator, bounce_rate or complaint_rate.")
    paused_by: str | None = Field(description="workspace, operator or health.")
    paused_at: datetime | None
    bounce_rate: float
    complaint_rate: float
    messages_in_window: int


class WhoAmI(BaseModel):
    account_id: str
    workspace_id: str
    key_id: str | None
    assistant_id: str | None = Field(
        description="Set when the caller is an assistant (a bearer token); `key_id` is then null."
    )
    permissions: list[str]
    plan: PlanLimits
    sending: SendingHealth = Field(
        description="The workspace's sending: paused or not, and its delivery health."
    )
