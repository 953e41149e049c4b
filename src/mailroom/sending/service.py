"""A workspace's sending: its sender identity (used when a send names none), the pause switch
(by the workspace, the operator, or automatically on bad delivery results), and whether a
sender address may be used at all (its domain verified, when real SMTP is configured)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select

from mailroom.contacts.fields import clean_email
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.emails import email_domain
from mailroom.core.errors import ApiError
from mailroom.events import service as events
from mailroom.models import SendingDomain, SendingSettings, WorkerProcess, Workspace
from mailroom.sending import addresses, health, limits, pacing
from mailroom.sending.transport import parse_smtp_url, relay_urls

PAUSED_BY = ("workspace", "operator", "health")
REASONS = ("workspace", "operator", "bounce_rate", "complaint_rate")
MAX_FROM_NAME = 100
MAX_NOTE = 500


async def settings_of(ctx: Context, *, for_update: bool = False) -> SendingSettings:
    """The workspace's row, made (unsaved until flushed) when it has none yet. Read once per
    unit of work (an automation batch queues many emails) unless it is to be updated."""
    cached: SendingSettings | None = ctx.cache.get("sending_settings")
    if cached is not None and not for_update:
        return cached
    query = select(SendingSettings).where(SendingSettings.workspace_id == ctx.workspace_id)
    if for_update and ctx.dialect == "postgresql":
        query = query.with_for_update()
    found: SendingSettings | None = await ctx.session.scalar(query)
    if found is not None:
        ctx.cache["sending_settings"] = found
    if found is None:
        found = SendingSettings(workspace_id=ctx.workspace_id, paused=False, updated_at=utcnow())
        if for_update:
            ctx.session.add(found)
    return found


async def state(ctx: Context) -> dict[str, Any]:
    """The pause and delivery health as `GET /api/v1/account` shows them."""
    row = await settings_of(ctx)
    return {
        "paused": bool(row.paused),
        "reason": row.pause_reason if row.paused else None,
        "paused_by": row.paused_by if row.paused else None,
        "paused_at": row.paused_at if row.paused else None,
        **health.shown(await health.rates(ctx, row)),
    }


def paused_error(row: SendingSettings) -> ApiError:
    """403 `Sending is paused for this account...`, saying by whom and what to do."""
    if row.paused_by == "operator":
        note = f" ({row.pause_note.rstrip('. ')})" if row.pause_note else ""
        return ApiError(
            403,
            f"Sending is paused for this account by the operator of this service{note}. "
            "An API key cannot resume it: contact the operator.",
        )
    if row.paused_by == "health":
        what = "complaint" if row.pause_reason == "complaint_rate" else "bounce"
        return ApiError(
            403,
            f"Sending is paused for this account: the {what} rate of recent messages is too "
            "high. Clean the audience, then ask the operator of this service to resume it "
            "(an API key cannot).",
        )
    return ApiError(
        403,
        "Sending is paused for this account (paused from the workspace). "
        "Resume with POST /api/v1/sending/resume.",
    )


async def ensure_not_paused(ctx: Context) -> None:
    row = await settings_of(ctx)
    if row.paused:
        raise paused_error(row)


async def describe(ctx: Context, row: SendingSettings | None = None) -> dict[str, Any]:
    row = row or await settings_of(ctx)
    now = utcnow()
    plan = ctx.principal.plan
    account = ctx.principal.account_id
    return {
        "from_email": row.from_email or "",
        "from_name": row.from_name or "",
        "reply_to": row.reply_to or "",
        "paused": bool(row.paused),
        "reason": row.pause_reason if row.paused else None,
        "note": row.pause_note if row.paused else None,
        "paused_at": row.paused_at if row.paused else None,
        "paused_by": row.paused_by if row.paused else None,
        **health.shown(await health.rates(ctx, row)),
        "hourly_ceiling": plan.hourly_send_ceiling,
        "sent_this_hour": await limits.sent_this_hour(ctx.session, account, now),
        "monthly_allowance": plan.emails_per_month,
        "sent_this_month": await limits.used_this_month(ctx.session, account, now),
        "provider_blocks": blocks_of(row, now),
    }


def blocks_of(row: SendingSettings, now: datetime) -> list[dict[str, Any]]:
    """The mailbox providers whose mail waits now because they blocked the workspace's."""
    blocks = row.provider_blocks or {}
    out = []
    for provider in sorted(blocks):
        until = pacing.block_ends(blocks, provider, now)
        if until is not None:
            out.append(
                {"provider": provider, "until": until, "reason": blocks[provider].get("reason", "")}
            )
    return out


async def block_provider(ctx: Context, provider: str, reason: str, until: datetime) -> None:
    """`provider` refused the workspace's mail for policy (spam, reputation): its mail waits
    until `until`, the others go on. `workspace.health_warning` (reason `provider_blocked`)
    when it was not already blocked in the last day."""
    row = await settings_of(ctx, for_update=True)
    now = utcnow()
    blocks = dict(row.provider_blocks or {})
    before = blocks.get(provider) or {}
    warned = before.get("warned_at")
    warn = not warned or now - datetime.fromisoformat(str(warned)) >= health.WARN_EVERY
    blocks[provider] = {
        "until": until.isoformat(),
        "reason": reason[:300],
        "warned_at": now.isoformat() if warn else warned,
    }
    row.provider_blocks = blocks
    row.updated_at = now
    if not warn:
        return
    name = await workspace_name(ctx)
    await events.emit(
        ctx,
        "workspace.health_warning",
        {
            "workspace": {"id": ctx.workspace_id, "name": name},
            "reason": "provider_blocked",
            "provider": provider,
            "response": reason[:300],
            "paused_until": events.iso(until),
            "at": events.iso(now),
        },
    )


def clean_address(name: str, value: Any, *, required: bool = False) -> str:
    """An optional (or required) address field, with the contact-email rules and messages
    worded for the field (`from_email must be a valid email address`)."""
    if value is None or value == "":
        if required:
            raise ApiError(400, f"{name} is required")
        return ""
    try:
        return clean_email(value)
    except ApiError as problem:
        if problem.message == "Invalid email address":
            raise ApiError(400, f"{name} must be a valid email address") from None
        raise ApiError(400, problem.message.replace("email", name, 1)) from None


def clean_from_name(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ApiError(400, "from_name must be a string")
    value = " ".join(value.split())
    if len(value) > MAX_FROM_NAME:
        raise ApiError(400, f"from_name must be {MAX_FROM_NAME} characters or fewer")
    return value


async def update_identity(ctx: Context, body: dict[str, Any]) -> SendingSettings:
    if not body:
        raise ApiError(400, "No updatable fields provided")
    row = await settings_of(ctx, for_update=True)
    if "from_email" in body:
        row.from_email = clean_address("from_email", body["from_email"])
    if "from_name" in body:
        row.from_name = clean_from_name(body["from_name"])
    if "reply_to" in body:
        row.reply_to = clean_address("reply_to", body["reply_to"])
    row.updated_at = utcnow()
    await ctx.session.flush()
    return row


async def workspace_name(ctx: Context) -> str:
    name = await ctx.session.scalar(select(Workspace.name).where(Workspace.id == ctx.workspace_id))
    return str(name or "")


def clean_note(value: str | None) -> str | None:
    """The operator's `--reason`: one line of at most MAX_NOTE characters (the workspace reads
    it in the 403 message and `GET /api/v1/sending`)."""
    text = " ".join((value or "").split())
    if len(text) > MAX_NOTE:
        raise ApiError(400, f"The pause's reason must be {MAX_NOTE} characters or fewer")
    return text or None


# A stronger pause takes over a weaker one and is never taken over by it.
_STRENGTH = {"workspace": 1, "health": 2, "operator": 3}


async def pause(
    ctx: Context,
    *,
    by: str = "workspace",
    reason: str = "workspace",
    note: str | None = None,
    rates: dict[str, Any] | None = None,
) -> SendingSettings:
    """Stop claiming this workspace's messages (campaigns stay `sending`); `workspace.paused`.
    Pausing again keeps the first pause unless the new one is stronger (operator > health >
    workspace); the operator pausing again only replaces the note."""
    if by not in PAUSED_BY or reason not in REASONS:
        raise ValueError(f"unknown pause: {by}/{reason}")
    note = clean_note(note)
    if by == "operator" and note is None:
        raise ApiError(400, "The operator's pause needs a reason (--reason)")
    row = await settings_of(ctx, for_update=True)
    if row.paused and row.paused_by == "operator" and by == "operator":
        if note != row.pause_note:
            row.pause_note, row.updated_at = note, utcnow()
            await ctx.session.flush()
        return row
    if row.paused and _STRENGTH.get(row.paused_by or "", 0) >= _STRENGTH[by]:
        return row
    now = utcnow()
    row.paused, row.paused_by, row.pause_reason = True, by, reason
    row.pause_note, row.paused_at, row.updated_at = note, now, now
    await ctx.session.flush()
    await events.emit(ctx, "workspace.paused", await _event(ctx, row, now, rates=rates))
    return row


async def resume(ctx: Context, *, by: str = "workspace") -> SendingSettings:
    """Lift the pause; `workspace.resumed`. A key (`by="workspace"`) lifts only the pause a
    key made; the health check's and the operator's are 403 (the paused message). Not
    paused: nothing. Delivery health counts from here again."""
    row = await settings_of(ctx, for_update=True)
    if not row.paused:
        return row
    if row.paused_by != "workspace" and by != "operator":
        raise paused_error(row)
    now = utcnow()
    row.paused, row.paused_by, row.pause_reason = False, None, None
    row.pause_note, row.paused_at, row.updated_at = None, None, now
    row.resumed_at = now
    await ctx.session.flush()
    await events.emit(ctx, "workspace.resumed", await _event(ctx, row, now, resumed_by=by))
    return row


async def _event(
    ctx: Context,
    row: SendingSettings,
    now: datetime,
    resumed_by: str | None = None,
    rates: dict[str, Any] | None = None,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "workspace": {"id": ctx.workspace_id, "name": await workspace_name(ctx)},
        "at": events.iso(now),
    }
    if resumed_by:
        data["resumed_by"] = resumed_by
    else:
        rates = rates if rates is not None else health.shown(await health.rates(ctx, row))
        data.update(
            paused_by=row.paused_by,
            reason=row.pause_reason,
            note=row.pause_note,
            paused_at=events.iso(now),
            bounce_rate=rates["bounce_rate"],
            complaint_rate=rates["complaint_rate"],
        )
    return data


async def verified_domain(ctx: Context, from_email: str) -> SendingDomain | None:
    # Domains are stored in their IDNA form; a sender may write its domain either way.
    domain = addresses.wire_domain(email_domain(from_email))
    found: SendingDomain | None = await ctx.session.scalar(
        select(SendingDomain).where(
            SendingDomain.workspace_id == ctx.workspace_id,
            SendingDomain.domain == domain,
            SendingDomain.status == "verified",
        )
    )
    return found


async def check_sender(ctx: Context, from_email: str) -> None:
    """422 `Sending is not configured: ...` when real SMTP is configured and the sender's
    domain is not a verified sending domain of the workspace. With the file outbox (no SMTP)
    any sender goes, so a fresh install can send at once."""
    if not from_email:
        raise ApiError(
            422,
            "Sending is not configured: set a from_email on the campaign or the workspace's "
            "sender identity (PATCH /api/v1/sending).",
        )
    if not ctx.settings.smtp_url:
        return
    if await verified_domain(ctx, from_email) is None:
        domain = email_domain(from_email)
        raise ApiError(
            422,
            f"Sending is not configured: {domain} is not a verified sending domain of this "
            f"workspace. Add it with POST /api/v1/domains, publish its DNS records, then "
            "POST /api/v1/domains/{id}/verify.",
        )


async def check_health(ctx: Context) -> None:
    """After a hard bounce or a complaint: warn or pause when the rates call for it."""
    row = await settings_of(ctx, for_update=True)
    found = await health.rates(ctx, row)
    settings = ctx.settings
    if found["messages_in_window"] < settings.health_min_messages:
        return
    bounce, complaint = found["bounce_rate"], found["complaint_rate"]
    if complaint > settings.health_pause_complaint_rate:
        await pause(ctx, by="health", reason="complaint_rate", rates=health.shown(found))
        return
    if bounce > settings.health_pause_bounce_rate:
        await pause(ctx, by="health", reason="bounce_rate", rates=health.shown(found))
        return
    warn = (
        bounce > settings.health_warn_bounce_rate or complaint > settings.health_warn_complaint_rate
    )
    now = utcnow()
    if not warn or (row.health_warned_at and now - row.health_warned_at < health.WARN_EVERY):
        return
    row.health_warned_at = now
    name = await workspace_name(ctx)
    await events.emit(
        ctx,
        "workspace.health_warning",
        {
            "workspace": {"id": ctx.workspace_id, "name": name},
            "reason": "complaint_rate"
            if complaint > settings.health_warn_complaint_rate
            else "bounce_rate",
            **health.shown(found),
            "at": events.iso(now),
        },
    )


async def relay_states(ctx: Context) -> list[dict[str, Any]]:
    """With several relays: each one's state as the running workers last saw it (resting
    when any worker rests it), with its settings."""
    urls = relay_urls(ctx.settings.smtp_url)
    if len(urls) < 2:
        return []
    try:
        targets = [parse_smtp_url(url) for url in urls]
    except ValueError:
        return []
    alive = utcnow() - timedelta(minutes=1)
    seen = (
        await ctx.session.scalars(
            select(WorkerProcess.relays).where(
                WorkerProcess.heartbeat_at >= alive, WorkerProcess.relays.is_not(None)
            )
        )
    ).all()
    out = []
    for target in targets:
        name = f"{target.host}:{target.port}"
        states = [s for found in seen for s in (found or []) if s.get("relay") == name]
        resting = [s for s in states if s.get("state") == "resting"]
        out.append(
            {
                "relay": name,
                "weight": target.weight,
                "max_connections": target.max_connections,
                "max_per_second": target.max_per_second,
                "state": "resting" if resting else ("ok" if states else "not used yet"),
                "resting_until": max((s["resting_until"] for s in resting), default=None),
                "last_error": next((s["last_error"] for s in resting if s.get("last_error")), None),
                "sent": sum(int(s.get("sent") or 0) for s in states),
                "failed": sum(int(s.get("failed") or 0) for s in states),
            }
        )
    return out
