"""A campaign's results: totals from its send log, opens and clicks from its tracking hits
(people only: scanners' and prefetchers' requests are stored but not counted), clicks per link,
opens/clicks per hour over the first 48 hours after it started, and the revenue of the orders
attributed to it."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from mailroom.campaigns import ab_test as ab_tests
from mailroom.campaigns.service import get_campaign, stats
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.ecommerce import attribution
from mailroom.models import Campaign, SendLog, TrackingHit

HOURS = 48


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


async def report(ctx: Context, campaign_id: str) -> dict[str, Any]:
    _counts, found = await report_of(ctx, await get_campaign(ctx, campaign_id))
    return found


async def report_of(ctx: Context, campaign: Campaign) -> tuple[dict[str, int], dict[str, Any]]:
    """(the campaign's stats as `describe` gives them, its report): the send log is read
    once for both (a report page at 50,000 recipients reads it in one pass, not three)."""
    counts = (await stats(ctx, [campaign.id], with_sums=True))[campaign.id]
    opens, clicks = counts.pop("opens"), counts.pop("clicks")
    totals = {
        name: counts[name]
        for name in (
            "recipients",
            "sent",
            "delivered",
            "opened",
            "clicked",
            "bounced",
            "complained",
            "unsubscribed",
        )
    }
    people = (
        TrackingHit.workspace_id == ctx.workspace_id,
        TrackingHit.campaign_id == campaign.id,
        TrackingHit.automated.is_(False),
    )
    link_rows = await ctx.session.execute(
        select(
            TrackingHit.url,
            func.count().label("clicks"),
            func.count(func.distinct(TrackingHit.send_log_id)).label("unique_clicks"),
        )
        .where(*people, TrackingHit.kind == "click")
        .group_by(TrackingHit.url)
        .order_by(func.count().desc(), TrackingHit.url)
    )
    sent = totals["sent"]
    return counts, {
        "totals": totals,
        "opens": int(opens),
        "clicks": int(clicks),
        "rates": {
            "open": _rate(totals["opened"], sent),
            "click": _rate(totals["clicked"], sent),
            "bounce": _rate(totals["bounced"], sent),
            "complaint": _rate(totals["complained"], sent),
            "unsubscribe": _rate(totals["unsubscribed"], sent),
        },
        "links": [
            {"url": url, "clicks": int(n), "unique_clicks": int(unique)}
            for url, n, unique in link_rows.all()
        ],
        "hourly": await _hourly(ctx, campaign.id, campaign.started_at, people),
        "revenue": (await attribution.revenue_of(ctx, "campaign", [campaign.id]))[campaign.id],
        "providers": await _providers(ctx, campaign.id),
        **await _variants(ctx, campaign),
    }


async def _providers(ctx: Context, campaign_id: str) -> list[dict[str, Any]]:
    """Sent, deferred and bounced per mailbox provider, and the pace it took mail at."""
    rows = await ctx.session.execute(
        select(
            SendLog.provider,
            func.count(SendLog.sent_at),
            func.coalesce(func.sum(SendLog.deferrals), 0),
            func.count(SendLog.bounced_at),
            func.min(SendLog.sent_at),
            func.max(SendLog.sent_at),
        )
        .where(
            SendLog.workspace_id == ctx.workspace_id,
            SendLog.campaign_id == campaign_id,
            SendLog.provider.is_not(None),
        )
        .group_by(SendLog.provider)
    )
    out = []
    for provider, sent, deferred, bounced, first, last in rows.all():
        seconds = (last - first).total_seconds() if first and last else 0.0
        out.append(
            {
                "provider": provider,
                "sent": int(sent),
                "deferred": int(deferred),
                "bounced": int(bounced),
                "pace_per_minute": round(int(sent) * 60 / seconds, 1) if seconds > 0 else None,
            }
        )
    return sorted(out, key=lambda p: (-(p["sent"] + p["bounced"]), p["provider"]))


async def _variants(ctx: Context, campaign: Campaign) -> dict[str, Any]:
    test = campaign.ab_test
    if not test:
        return {}
    found = await ab_tests.counts(ctx, campaign.id)
    ids = [variant["id"] for variant in test["variants"]]
    revenue = await attribution.revenue_by_variant(ctx, campaign.id, ids)
    variants = []
    for variant in test["variants"]:
        figures = found.get(variant["id"], dict.fromkeys(ab_tests.FIGURES, 0))
        variants.append(
            {
                "id": variant["id"],
                "name": variant["name"],
                **figures,
                "rates": {
                    "open": _rate(figures["opens"], figures["sent"]),
                    "click": _rate(figures["clicks"], figures["sent"]),
                },
                "revenue": revenue[variant["id"]],
            }
        )
    winner = None
    if test.get("winner_variant_id"):
        winner = {
            "variant_id": test["winner_variant_id"],
            "decided_by": test["decided_by"],
            "decided_at": test["decided_at"],
            "reason": test.get("reason", ""),
        }
    return {"variants": variants, "winner": winner}


async def _hourly(
    ctx: Context, campaign_id: str, started_at: datetime | None, people: tuple[Any, ...]
) -> list[dict[str, Any]]:
    """Every hour from the start's hour to now, at most 48, with zeros where nothing happened
    (a chart needs the gaps)."""
    if started_at is None:
        return []
    first = started_at.replace(minute=0, second=0, microsecond=0)
    last = min(utcnow(), first + timedelta(hours=HOURS - 1))
    rows = await ctx.session.execute(
        select(TrackingHit.hour, TrackingHit.kind, func.count())
        .where(*people, TrackingHit.hour >= first, TrackingHit.hour <= last)
        .group_by(TrackingHit.hour, TrackingHit.kind)
    )
    found: dict[tuple[datetime, str], int] = {(hour, kind): int(n) for hour, kind, n in rows.all()}
    out = []
    hour = first
    while hour <= last:
        out.append(
            {
                "hour": hour,
                "opens": found.get((hour, "open"), 0),
                "clicks": found.get((hour, "click"), 0),
            }
        )
        hour += timedelta(hours=1)
    return out
