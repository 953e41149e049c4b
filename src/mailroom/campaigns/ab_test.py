"""A/B tests (issue 32): a campaign tries 2 to 5 variants on a share of its
audience, then sends the winner to the rest.

The test lives on the campaign (`Campaign.ab_test`, plain JSON): the variants and rules a
draft's editor sets, and once sending its state (`testing` -> `decided`). Each send-log row
of the test carries its variant (`SendLog.variant_id`); the rest of the audience waits as
`waiting` rows, which no worker claims, until a winner releases them as `pending` rows of the
winning variant. So a crash or restart keeps the split and the decision: both are rows.
"""

from __future__ import annotations

import asyncio
import re
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case, func, literal, null, select, update

from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.models import Campaign, Contact, SendLog
from mailroom.sending.service import MAX_FROM_NAME
from mailroom.templates import service as templates
from mailroom.templates.render import syntax_error

MIN_VARIANTS, MAX_VARIANTS = 2, 5
MIN_SHARE, MAX_SHARE = 10, 50
MIN_MINUTES, MAX_MINUTES = 30, 10_080
WINNER_RULES = ("opens", "clicks", "manual")
DEFAULTS = {"test_share": 20, "winner_by": "opens", "decide_after_minutes": 240}
KEYS = ("variants", "test_share", "winner_by", "decide_after_minutes")
# What a variant may change; each overrides the campaign's own only where it is given.
OVERRIDES = ("subject", "from_name", "preheader", "html_content", "text_content")
VARIANT_KEYS = ("id", "name", *OVERRIDES, "template_id")
VARIANT_ID = re.compile(r"^[A-Za-z0-9_-]{1,16}$")
MAX_VARIANT_NAME = 100
WAITING = "waiting"  # a send-log row held for the winner
FIGURES = ("sent", "opens", "clicks", "unsubscribes", "bounces")  # per variant (`counts`)


def _variants_error() -> ApiError:
    return ApiError(400, f"ab_test.variants must have {MIN_VARIANTS} to {MAX_VARIANTS} items")


def _integer(raw: dict[str, Any], key: str, low: int, high: int) -> int:
    value = raw.get(key, DEFAULTS[key])
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ApiError(400, f"ab_test.{key} must be between {low} and {high}")
    return value


async def clean(ctx: Context, raw: Any) -> dict[str, Any] | None:
    """The test as stored on a draft (400 naming the first problem), or None: no test."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ApiError(400, "ab_test must be an object or null")
    unknown = sorted(k for k in raw if k not in KEYS)
    if unknown:
        raise ApiError(400, f"Unknown ab_test key(s): {', '.join(unknown)}")
    given = raw.get("variants")
    if not isinstance(given, list) or not MIN_VARIANTS <= len(given) <= MAX_VARIANTS:
        raise _variants_error()
    winner_by = raw.get("winner_by", DEFAULTS["winner_by"])
    if winner_by not in WINNER_RULES:
        raise ApiError(400, f"ab_test.winner_by must be one of {', '.join(WINNER_RULES)}")
    test = {
        "variants": [await _variant(ctx, i, v) for i, v in enumerate(given)],
        "test_share": _integer(raw, "test_share", MIN_SHARE, MAX_SHARE),
        "winner_by": winner_by,
        "decide_after_minutes": _integer(raw, "decide_after_minutes", MIN_MINUTES, MAX_MINUTES),
    }
    _name_variants(test["variants"])
    return test


async def _variant(ctx: Context, index: int, raw: Any) -> dict[str, Any]:
    where = f"ab_test.variants[{index}]"
    if not isinstance(raw, dict):
        raise ApiError(400, f"{where} must be an object")
    unknown = sorted(k for k in raw if k not in VARIANT_KEYS)
    if unknown:
        raise ApiError(400, f"Unknown {where} key(s): {', '.join(unknown)}")
    variant: dict[str, Any] = {}
    if raw.get("id") is not None:
        if not isinstance(raw["id"], str) or not VARIANT_ID.match(raw["id"]):
            raise ApiError(400, f"{where}.id must be 1 to 16 letters, digits, _ or -")
        variant["id"] = raw["id"]
    if raw.get("name") is not None:
        name = raw["name"]
        if not isinstance(name, str) or not name.split() or len(name) > MAX_VARIANT_NAME:
            raise ApiError(400, f"{where}.name must be 1 to {MAX_VARIANT_NAME} characters")
        variant["name"] = " ".join(name.split())
    for key in OVERRIDES:
        if raw.get(key) is None:
            continue
        value = raw[key]
        if not isinstance(value, str):
            raise ApiError(400, f"{where}.{key} must be a string")
        limit = MAX_FROM_NAME if key == "from_name" else templates.LIMITS[key]
        if len(value) > limit:
            status = 413 if key in templates.TOO_LARGE else 400
            raise ApiError(status, f"{where}.{key} must be {limit:,} characters or fewer")
        variant[key] = " ".join(value.split()) if key == "from_name" else value
    if raw.get("template_id") is not None:
        if not isinstance(raw["template_id"], str) or not raw["template_id"]:
            raise ApiError(400, f"{where}.template_id must be a string")
        template = await templates.get_template(ctx, raw["template_id"])
        for key in ("subject", "preheader", "html_content", "text_content"):
            variant.setdefault(key, getattr(template, key))
        variant["template_id"] = template.id
    if not any(key in variant for key in OVERRIDES):
        raise ApiError(400, f"{where} changes nothing")
    parts = {key: variant[key] for key in OVERRIDES if key != "from_name" and variant.get(key)}
    message = (
        await asyncio.to_thread(_first_error, where, parts)
        if sum(len(v) for v in parts.values()) > templates.INLINE_CHECK_CHARS
        else _first_error(where, parts)
    )
    if message:
        raise ApiError(400, message)
    return variant


def _first_error(where: str, parts: dict[str, str]) -> str | None:
    for key, value in parts.items():
        message = syntax_error(f"{where}.{key}", value)
        if message:
            return message
    return None


def _name_variants(variants: list[dict[str, Any]]) -> None:
    """Ids `a`..`e` and names `Variant A`.. where the request gave none; ids unique."""
    seen: set[str] = set()
    for index, variant in enumerate(variants):
        if "id" in variant:
            if variant["id"] in seen:
                raise ApiError(400, f"ab_test.variants[{index}].id repeats {variant['id']!r}")
            seen.add(variant["id"])
    free = (letter for letter in "abcdefghij" if letter not in seen)
    for variant in variants:
        if "id" not in variant:
            variant["id"] = next(free)
            seen.add(variant["id"])
        variant.setdefault("name", f"Variant {variant['id'].upper()}")


def rules_of(test: dict[str, Any] | None) -> dict[str, Any] | None:
    """A test as a new draft takes it: the variants and rules, none of the state."""
    if not test:
        return None
    return {key: test[key] for key in KEYS}


def shown(test: dict[str, Any] | None) -> dict[str, Any] | None:
    """The test as a client sees it: the rules, and once sending its state."""
    if test is None:
        return None
    return {
        "variants": test["variants"],
        "test_share": test["test_share"],
        "winner_by": test["winner_by"],
        "decide_after_minutes": test["decide_after_minutes"],
        "status": test.get("status"),
        "decides_at": test.get("decides_at"),
        "winner_variant_id": test.get("winner_variant_id"),
        "decided_at": test.get("decided_at"),
        "decided_by": test.get("decided_by"),
    }


def variant_of(test: dict[str, Any] | None, variant_id: str | None) -> dict[str, Any]:
    """A variant's overrides by id ({} without a test or for an unknown id): what the engine
    sends and the dashboard previews."""
    if not variant_id or not test:
        return {}
    for variant in test.get("variants", ()):
        if variant.get("id") == variant_id:
            return dict(variant)
    return {}


# ------------------------------------------------------------------ the split, at start


def split_source(condition: Any, test: dict[str, Any]) -> Any:
    """The audience (`condition` over contacts) in random order, each row with its status and
    variant: the first `test_share` percent shared evenly among the variants (sizes within
    one of each other), the rest `waiting` with none. The snapshot inserts from it."""
    variants = [v["id"] for v in test["variants"]]
    ordered = (
        select(
            Contact.id.label("contact_id"),
            Contact.email.label("email"),
            func.row_number().over(order_by=func.random()).label("rn"),
            func.count().over().label("total"),
        )
        .where(condition)
        .subquery("audience")
    )
    # rn <= floor(total * share / 100), without a division whose rounding differs by dialect.
    tested = ordered.c.rn * 100 <= ordered.c.total * int(test["test_share"])
    which = case(
        *[((ordered.c.rn - 1) % len(variants) == i, literal(v)) for i, v in enumerate(variants)],
        else_=literal(variants[0]),
    )
    return select(
        ordered.c.contact_id,
        ordered.c.email,
        case((tested, literal("pending")), else_=literal(WAITING)).label("status"),
        case((tested, which), else_=null()).label("variant_id"),
    ).subquery("split")


def started(test: dict[str, Any], queued: int, now: datetime) -> dict[str, Any]:
    """The test's state once its audience is frozen and split (`split_source`): `testing`,
    and when it decides. 422 when the tested share is smaller than the number of variants."""
    if queued * int(test["test_share"]) // 100 < len(test["variants"]):
        raise ApiError(422, f"Audience too small for {len(test['variants'])} variants")
    decides_at = now + timedelta(minutes=int(test["decide_after_minutes"]))
    return {
        **test,
        "status": "testing",
        "decides_at": _iso(decides_at),
        "winner_variant_id": None,
        "decided_at": None,
        "decided_by": None,
    }


# ---------------------------------------------------------------- the winner


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


async def counts(ctx: Context, campaign_id: str) -> dict[str, dict[str, int]]:
    """Per variant, among its test sends: sent, unique opens and clicks, unsubscribes and
    bounces (one statement)."""
    rows = await ctx.session.execute(
        select(
            SendLog.variant_id,
            func.count(SendLog.sent_at),
            func.count(SendLog.first_opened_at),
            func.count(SendLog.first_clicked_at),
            func.count(SendLog.unsubscribed_at),
            func.count(SendLog.bounced_at),
        )
        .where(
            SendLog.workspace_id == ctx.workspace_id,
            SendLog.campaign_id == campaign_id,
            SendLog.variant_id.is_not(None),
        )
        .group_by(SendLog.variant_id)
    )
    return {
        str(variant): dict(zip(FIGURES, map(int, rest), strict=True))
        for variant, *rest in rows.all()
    }


def best(test: dict[str, Any], found: dict[str, dict[str, int]]) -> tuple[str, str]:
    """The variant with the best unique open (or click) rate among its test sends, the
    earliest on a tie; and why, in words."""
    measure = test["winner_by"]
    scored = []
    for index, variant in enumerate(test["variants"]):
        figures = found.get(variant["id"], {})
        sent = figures.get("sent", 0)
        rate = figures.get(measure, 0) / sent if sent else 0.0
        scored.append((-rate, index, variant["id"], rate, sent))
    scored.sort()
    _, _, winner, rate, sent = scored[0]
    return winner, f"best unique {measure[:-1]} rate: {rate:.1%} of {sent} sent"


async def pick_winner(
    ctx: Context, campaign: Any, variant_id: Any, decided_by: str, now: datetime, why: str
) -> None:
    """Record the winner and release the waiting rest of the audience to it (the caller
    holds the campaign's row locked). 409 unless the campaign is testing."""
    test = campaign.ab_test
    if campaign.status != "sending" or not test or test.get("status") != "testing":
        raise ApiError(
            409, "Campaign is not testing: a winner can only be picked while its A/B test runs"
        )
    ids = [variant["id"] for variant in test["variants"]]
    if not isinstance(variant_id, str) or variant_id not in ids:
        raise ApiError(400, f"variant_id must be one of {', '.join(ids)}")
    await ctx.session.execute(
        update(SendLog)
        .where(
            SendLog.workspace_id == ctx.workspace_id,
            SendLog.campaign_id == campaign.id,
            SendLog.status == WAITING,
        )
        .values(status="pending", variant_id=variant_id, run_at=now, updated_at=now)
    )
    campaign.ab_test = {
        **test,
        "status": "decided",
        "winner_variant_id": variant_id,
        "decided_at": _iso(now),
        "decided_by": decided_by,
        "reason": why,
    }
    campaign.updated_at = now


async def decide_due(ctx_for: Any, db: Any, limit: int = 20) -> int:
    """The worker's part: tests whose time has come get their winner by their rule, each in
    a transaction of its own."""
    now = utcnow()
    async with db.session(write=False) as session:
        sending = (
            await session.execute(
                select(Campaign.id, Campaign.workspace_id, Campaign.ab_test).where(
                    Campaign.status == "sending", Campaign.ab_test.is_not(None)
                )
            )
        ).all()
    due = [
        (campaign_id, workspace_id)
        for campaign_id, workspace_id, test in sending
        if test
        and test.get("status") == "testing"
        and test.get("winner_by") != "manual"
        and datetime.fromisoformat(str(test["decides_at"]).replace("Z", "+00:00")) <= now
    ][:limit]
    decided = 0
    for campaign_id, workspace_id in due:
        async with db.transaction() as session:
            ctx = await ctx_for(session, workspace_id)
            campaign = await session.scalar(
                select(Campaign)
                .where(Campaign.id == campaign_id)
                .with_for_update()
                .execution_options(populate_existing=True)
            )
            test = campaign.ab_test if campaign is not None else None
            if campaign is None or not test or test.get("status") != "testing":
                continue  # decided meanwhile (by hand, or another worker)
            winner, why = best(test, await counts(ctx, campaign.id))
            await pick_winner(ctx, campaign, winner, test["winner_by"], now, why)
            decided += 1
    return decided
