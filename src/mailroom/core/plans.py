"""Plans as data: every number of the spec's Limits table, in one place.

`None` means unlimited. Numbers the spec leaves open (hourly sending ceiling, image storage)
are ours, chosen to fit each plan's monthly allowance.
"""

from __future__ import annotations

from dataclasses import dataclass

from mailroom.core.errors import ApiError

MB = 1024 * 1024


@dataclass(frozen=True)
class Plan:
    name: str  # the key stored on the account: free, starter, pro, business
    label: str  # as shown in messages: "Free", "Starter", ...
    writes_per_hour: int | None
    contacts: int
    emails_per_month: int
    live_automations: int | None
    webhook_endpoints: int | None
    media_quota_bytes: int
    hourly_send_ceiling: int
    double_opt_in_everywhere: bool = False

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "writes_per_hour": self.writes_per_hour,
            "contacts": self.contacts,
            "emails_per_month": self.emails_per_month,
            "live_automations": self.live_automations,
            "webhook_endpoints": self.webhook_endpoints,
            "media_quota_bytes": self.media_quota_bytes,
            "hourly_send_ceiling": self.hourly_send_ceiling,
            "double_opt_in_everywhere": self.double_opt_in_everywhere,
        }


PLANS: dict[str, Plan] = {
    "free": Plan(
        name="free",
        label="Free",
        writes_per_hour=120,
        contacts=500,
        emails_per_month=2_000,
        live_automations=1,
        webhook_endpoints=1,
        media_quota_bytes=50 * MB,
        hourly_send_ceiling=500,
        double_opt_in_everywhere=True,
    ),
    "starter": Plan(
        name="starter",
        label="Starter",
        writes_per_hour=600,
        contacts=2_500,
        emails_per_month=15_000,
        live_automations=5,
        webhook_endpoints=5,
        media_quota_bytes=500 * MB,
        hourly_send_ceiling=2_500,
    ),
    "pro": Plan(
        name="pro",
        label="Pro",
        writes_per_hour=None,
        contacts=10_000,
        emails_per_month=60_000,
        live_automations=None,
        webhook_endpoints=None,
        media_quota_bytes=2_048 * MB,
        hourly_send_ceiling=10_000,
    ),
    "business": Plan(
        name="business",
        label="Business",
        writes_per_hour=None,
        contacts=50_000,
        emails_per_month=250_000,
        live_automations=None,
        webhook_endpoints=None,
        media_quota_bytes=10_240 * MB,
        hourly_send_ceiling=100_000,
    ),
}


def get_plan(name: str) -> Plan:
    try:
        return PLANS[name]
    except KeyError:
        raise ApiError(400, f"Unknown plan: {name}. Choose one of {', '.join(PLANS)}") from None
