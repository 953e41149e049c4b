from __future__ import annotations

from pydantic import BaseModel


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


class WhoAmI(BaseModel):
    account_id: str
    workspace_id: str
    key_id: str | None
    permissions: list[str]
    plan: PlanLimits
