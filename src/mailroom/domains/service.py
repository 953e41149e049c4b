"""Sending domains: adding one (with a fresh DKIM key), verifying its DNS records, the daily
re-check of verified domains, and deleting.

DNS is never looked up while this unit of work holds a connection: `verify_domain` reads the
domain, ends its transaction, looks up, then writes in a new short one; the re-check claims its
domains in one short transaction, looks up with none, then writes each in its own.

Events go out on a change of status: `domain.verified` when a domain becomes verified,
`domain.failed` when it becomes failed (its first failed check, or a verified domain whose
DKIM record vanished or changed: lapsed). Both carry the `domain` dimension (`domain_ids`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.exc import IntegrityError

from mailroom.accounts import service as accounts
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.ids import new_id
from mailroom.core.pagination import PageParams
from mailroom.db import Database
from mailroom.domains import checks, dkim, dns, keys
from mailroom.domains.schemas import MAX_DOMAIN
from mailroom.events import service as events
from mailroom.models import Campaign, SendingDomain, SendingSettings
from mailroom.named import Named
from mailroom.sending import health, warmup
from mailroom.sending import service as sending
from mailroom.settings import Settings

log = logging.getLogger("mailroom.domains")

DOMAINS = Named(SendingDomain, "domain", MAX_DOMAIN, newest_first=True)
TAKEN = "This domain is already added to the workspace"
IN_USE = "This domain is used by a scheduled or sending campaign"
NO_PUBLIC_HOST = (
    "A link host needs MAILROOM_PUBLIC_URL to name a host (a CNAME cannot point at an IP "
    "address): the operator sets it to the installation's public https URL"
)
RECHECK_EVERY = timedelta(hours=24)
RECHECK_BATCH = 20
RECHECK_CONCURRENCY = 8
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_TLD = re.compile(r"[a-z][a-z0-9-]{0,61}[a-z0-9]")


# ---------------------------------------------------------------------------- the name


def clean_domain(value: Any) -> str:
    """A registrable hostname: lowercased, IDNA (xn--) form, no final dot. The published
    pattern (schemas.DOMAIN_PATTERN) admits exactly the ASCII names accepted here."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ApiError(400, "domain is required")
    if not isinstance(value, str):
        raise ApiError(400, "domain must be a string")
    name = value.strip().lower()
    name = name[:-1] if name.endswith(".") else name
    if not name.isascii():
        try:
            name = name.encode("idna").decode()
        except UnicodeError:
            raise ApiError(400, "domain must be a hostname like mail.example.com") from None
    if len(name) > MAX_DOMAIN:
        raise ApiError(400, f"domain must be {MAX_DOMAIN} characters or fewer")
    if _is_ip(name):
        raise ApiError(400, "domain must be a hostname, not an IP address")
    if name == "localhost" or name.endswith(".localhost"):
        raise ApiError(400, "domain must not be localhost")
    if "." not in name:
        raise ApiError(400, "domain must have at least one dot, like example.com")
    *labels, tld = name.split(".")
    if not (all(_LABEL.fullmatch(label) for label in labels) and _TLD.fullmatch(tld)):
        raise ApiError(
            400,
            "domain must be a hostname like mail.example.com: labels of letters, digits and "
            "hyphens, the last one starting with a letter",
        )
    return name


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def new_selector(settings: Settings) -> str:
    """`<prefix><yyyymm><4 hex>`: a new selector per key, so a replaced key never has to
    wait for resolvers to forget the old record."""
    return f"{settings.dkim_selector_prefix}{utcnow():%Y%m}{secrets.token_hex(2)}"


# ------------------------------------------------------------------------- the resource


async def get_domain(ctx: Context, domain_id: str) -> SendingDomain:
    return await DOMAINS.get(ctx, domain_id)


async def list_domains(ctx: Context, page: PageParams) -> tuple[list[SendingDomain], int]:
    return await DOMAINS.page(ctx, page)


async def create_domain(ctx: Context, value: Any) -> SendingDomain:
    name = clean_domain(value)
    # The key first, before this unit of work's first statement: ~0.1 s of CPU (off the event
    # loop) during which no connection, and on SQLite not the write lock, is held.
    pair = await asyncio.to_thread(keys.generate)
    await _refuse_taken(ctx, name)
    now = utcnow()
    domain_id = new_id()
    row = SendingDomain(
        id=domain_id,
        workspace_id=ctx.workspace_id,
        domain=name,
        status="pending",
        dkim_selector=new_selector(ctx.settings),
        dkim_private_key=keys.seal(ctx.settings.resolved_secret_key, domain_id, pair.private_der),
        dkim_public_key=pair.public_b64,
        record_status={},
        created_at=now,
        updated_at=now,
    )
    ctx.session.add(row)
    try:
        await ctx.session.flush()
    except IntegrityError:  # a concurrent add of the same name won the unique constraint
        raise ApiError(409, TAKEN) from None
    return row


async def _refuse_taken(ctx: Context, name: str) -> None:
    existing = await ctx.session.scalar(
        select(SendingDomain.id).where(
            SendingDomain.workspace_id == ctx.workspace_id, SendingDomain.domain == name
        )
    )
    if existing is not None:
        raise ApiError(409, TAKEN, id=existing)


UPDATABLE = ("link_host", "skip_warmup")
SKIP_WARMUP_TRUE = "skip_warmup must be true (warm-up cannot be restarted)"


async def update_domain(ctx: Context, domain_id: str, body: dict[str, Any]) -> SendingDomain:
    """`link_host`: a host of the domain's own (a CNAME to the installation's) for its mail's
    links, or null for none. A new link host is `pending` until the next verify; mail keeps
    the public URL's links until its record verifies. `skip_warmup: true`: the domain has a
    reputation already; its campaign mail is no longer held to a daily allowance and what
    waits for tomorrow goes now (admins for people, `campaigns:send` for keys)."""
    unknown = sorted(k for k in body if k not in UPDATABLE)
    if unknown:
        raise ApiError(400, f"Unknown field(s): {', '.join(unknown)}")
    if "skip_warmup" in body:
        if body["skip_warmup"] is not True:
            raise ApiError(400, SKIP_WARMUP_TRUE)
        if ctx.principal.person_id is not None:
            ctx.principal.check_admin()
        else:
            ctx.principal.check("campaigns:send")
    domain = await _locked(ctx, domain_id)
    if body.get("skip_warmup") is True and not domain.warmup_skipped:
        domain.warmup_skipped = True
        domain.updated_at = utcnow()
        await warmup.release(ctx.session, ctx.workspace_id, domain.updated_at)
    if "link_host" in body:
        host = _clean_link_host(ctx.settings, body["link_host"])
        if host != domain.link_host:
            domain.link_host = host
            checked = dict(domain.record_status or {})
            checked.pop(dns.LINK_HOST, None)  # the old host's verdict says nothing of this one
            domain.record_status = checked
            domain.updated_at = utcnow()
    return domain


def _clean_link_host(settings: Settings, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ApiError(400, "link_host must be a hostname, or null to remove it")
    try:
        host = clean_domain(value)
    except ApiError as problem:
        raise ApiError(400, problem.message.replace("domain", "link_host", 1)) from None
    public = dns.public_host(settings)
    if host == public:
        raise ApiError(400, "link_host must be a host of your own, not this installation's")
    if not public or _is_ip(public):
        raise ApiError(422, NO_PUBLIC_HOST)
    return host


async def delete_domain(ctx: Context, domain_id: str) -> None:
    domain = await get_domain(ctx, domain_id)
    await refuse_if_sending(ctx, domain)
    await DOMAINS.delete(ctx, domain)
    dkim.forget(domain.id)


async def refuse_if_sending(ctx: Context, domain: SendingDomain) -> None:
    """409 `IN_USE` while a scheduled or sending campaign sends from `domain` (its own
    `from_email`, or the workspace's sender identity when it names none)."""
    active = (
        await ctx.session.execute(
            select(Campaign.id, Campaign.from_email).where(
                Campaign.workspace_id == ctx.workspace_id,
                Campaign.status.in_(("scheduled", "sending")),
            )
        )
    ).all()
    if not active:
        return
    identity = await ctx.session.scalar(
        select(SendingSettings.from_email).where(SendingSettings.workspace_id == ctx.workspace_id)
    )
    for campaign_id, from_email in active:
        sender = from_email or identity or ""
        if sender.rpartition("@")[2].lower() == domain.domain:
            raise ApiError(409, IN_USE, campaign_id=campaign_id)


def records_of(ctx: Context, domain: SendingDomain) -> list[dict[str, Any]]:
    """The records to publish, with the last check's verdict on each (`pending` before)."""
    checked = domain.record_status or {}
    out = []
    for record in dns.expected_records(
        ctx.settings, domain.domain, domain.dkim_selector, domain.dkim_public_key, domain.link_host
    ):
        verdict = checked.get(record.purpose) or {}
        out.append(
            {
                "type": record.type,
                "host": record.host,
                "value": record.value,
                "purpose": record.purpose,
                "status": verdict.get("status", "pending"),
                "reason": verdict.get("reason"),
            }
        )
    return out


@dataclass(frozen=True)
class Standing:
    """The workspace's recent figures a domain's view depends on."""

    complaint_rate: float | None  # None: nothing sent lately
    healthy: bool  # bounces and complaints under the warning levels (warm-up advances)


async def standing(ctx: Context) -> Standing:
    found = await health.rates(ctx, await sending.settings_of(ctx))
    rate = float(found["complaint_rate"]) if found["messages_in_window"] else None
    return Standing(rate, health.healthy(ctx.settings, found))


async def describe(ctx: Context, rows: list[SendingDomain]) -> list[dict[str, Any]]:
    """Domains as routes show them, the workspace's figures read once for all."""
    figures = await standing(ctx)
    return [as_dict(ctx, row, figures) for row in rows]


def as_dict(ctx: Context, domain: SendingDomain, figures: Standing) -> dict[str, Any]:
    """The domain as routes show it (never its private key)."""
    return {
        "id": domain.id,
        "domain": domain.domain,
        "status": domain.status,
        "dkim_selector": domain.dkim_selector,
        "records": records_of(ctx, domain),
        "failure_reason": domain.failure_reason,
        "link_host": domain.link_host,
        "verified_at": domain.verified_at,
        "last_checked_at": domain.last_checked_at,
        "created_at": domain.created_at,
        "warmup": warmup.state_of(domain, ctx.principal.plan, utcnow(), figures.healthy),
        "checks": checks.checks_of(ctx.settings, domain, figures.complaint_rate),
    }


# ------------------------------------------------------------------------- verification


@dataclass(frozen=True)
class Target:
    """What a check needs, read before the transaction ends (rows expire on rollback)."""

    id: str
    workspace_id: str
    domain: str
    selector: str
    public_key: str
    link_host: str | None = None

    @classmethod
    def of(cls, row: SendingDomain) -> Target:
        return cls(
            row.id,
            row.workspace_id,
            row.domain,
            row.dkim_selector,
            row.dkim_public_key,
            row.link_host,
        )

    def records(self, settings: Settings) -> list[dns.Record]:
        return dns.expected_records(
            settings, self.domain, self.selector, self.public_key, self.link_host
        )


async def lookup(settings: Settings, target: Target) -> dict[str, dns.Check]:
    """Every record of `target` looked up now (DNS I/O: hold no connection meanwhile)."""
    return await dns.check(settings, target.records(settings), target.domain, target.public_key)


async def verify_domain(ctx: Context, domain_id: str) -> SendingDomain:
    target = Target.of(await get_domain(ctx, domain_id))
    # Only read so far: end the transaction, so no connection (on SQLite not the single
    # write connection) waits on DNS. The audit entry and the result open a new one.
    await ctx.session.rollback()
    verdicts, reverse = await asyncio.gather(
        lookup(ctx.settings, target), dns.reverse_dns(ctx.settings)
    )
    row = await _locked(ctx, domain_id)  # 404 if deleted meanwhile
    if row.dkim_public_key != target.public_key or row.link_host != target.link_host:
        return row  # given a new key or link host meanwhile: this check was about the old
    _record(row, verdicts, reverse)
    if verdicts[dns.DKIM].ok:
        await _become_verified(ctx, row)
    else:
        await _become_failed(ctx, row, _failure_reason(verdicts), lapsed=False)
    return row


async def _locked(ctx: Context, domain_id: str) -> SendingDomain:
    """The domain, locked until commit on PostgreSQL (SQLite's write transaction is already
    exclusive), so concurrent checks apply one after the other and each status change, and
    its event, happens once."""
    row: SendingDomain | None = await ctx.session.scalar(
        select(SendingDomain)
        .where(SendingDomain.id == domain_id, SendingDomain.workspace_id == ctx.workspace_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if row is None:
        raise ApiError(404, DOMAINS.not_found)
    return row


def _record(
    row: SendingDomain, verdicts: dict[str, dns.Check], reverse: dict[str, Any] | None
) -> None:
    """Store the verdicts, and the relay's reverse DNS when known (the last known kept when
    this check could not tell)."""
    found: dict[str, Any] = {
        p: {"status": v.status, "reason": v.reason} for p, v in verdicts.items()
    }
    before = (row.record_status or {}).get(dns.REVERSE_DNS)
    if reverse is not None or before:
        found[dns.REVERSE_DNS] = reverse or before
    row.record_status = found
    row.last_checked_at = row.updated_at = utcnow()


def _failure_reason(verdicts: dict[str, dns.Check]) -> str:
    """The failed records and why, DKIM (the one that decides) first."""
    return "; ".join(
        f"{dns.LABELS[purpose]}: {verdict.reason}"
        for purpose, verdict in verdicts.items()
        if not verdict.ok
    )


def _event_data(row: SendingDomain, **extra: Any) -> dict[str, Any]:
    failed = [
        p
        for p, v in (row.record_status or {}).items()
        if p != dns.REVERSE_DNS and v.get("status") == "failed"
    ]
    return {
        "domain": {
            "id": row.id,
            "name": row.domain,
            "status": row.status,
            "dkim_selector": row.dkim_selector,
            "failed_records": failed,
            **extra,
        }
    }


async def _become_verified(ctx: Context, row: SendingDomain) -> None:
    row.failure_reason = None
    if row.status == "verified":
        return
    row.status = "verified"
    row.verified_at = row.last_checked_at
    data = _event_data(row, verified_at=events.iso(row.verified_at))
    await events.emit(ctx, "domain.verified", data, domain_id=row.id)


async def _become_failed(ctx: Context, row: SendingDomain, reason: str, *, lapsed: bool) -> None:
    row.failure_reason = reason
    if row.status == "failed":
        return
    row.status = "failed"
    row.verified_at = None
    data = _event_data(row, reason=reason, lapsed=lapsed)
    await events.emit(ctx, "domain.failed", data, domain_id=row.id)


# --------------------------------------------------------------- the daily re-check (worker)


async def recheck_due(
    db: Database, settings: Settings, *, now: datetime | None = None, limit: int = RECHECK_BATCH
) -> int:
    """Re-check verified domains last checked a day or more ago; returns how many were taken.

    A DKIM record that is gone or changed (a definite answer) lapses the domain to `failed`
    with `domain.failed`. No answer either way (timeout, SERVFAIL) leaves it verified until the
    next round: a resolver's bad minute must not stop a workspace's sending."""
    now = now or utcnow()
    targets = await _claim_due(db, now, limit)
    gate = asyncio.Semaphore(RECHECK_CONCURRENCY)

    async def looked_up(target: Target) -> dict[str, dns.Check]:
        async with gate:
            return await lookup(settings, target)

    # All the lookups first, with no transaction open; then one short write each.
    found = await asyncio.gather(*(looked_up(t) for t in targets))
    reverse = await dns.reverse_dns(settings) if targets else None
    for target, verdicts in zip(targets, found, strict=True):
        try:
            async with db.transaction() as session:
                principal = await accounts.principal_for_workspace(session, target.workspace_id)
                context = Context(session, principal, settings)
                await _apply_recheck(context, target, verdicts, reverse)
        except ApiError:  # the workspace or the domain went meanwhile
            continue
    return len(targets)


async def _claim_due(db: Database, now: datetime, limit: int) -> list[Target]:
    """Take up to `limit` due domains by marking them checked now, in one short transaction:
    other workers skip them (SKIP LOCKED on PostgreSQL), and a crash loses one day's check
    of a domain at most."""
    async with db.transaction() as session:
        query = (
            select(SendingDomain)
            .where(
                SendingDomain.status == "verified",
                or_(
                    SendingDomain.last_checked_at.is_(None),
                    SendingDomain.last_checked_at <= now - RECHECK_EVERY,
                ),
            )
            .order_by(SendingDomain.last_checked_at)
            .limit(limit)
        )
        if not db.is_sqlite:
            query = query.with_for_update(skip_locked=True)
        rows = list((await session.scalars(query)).all())
        for row in rows:
            row.last_checked_at = now
        return [Target.of(row) for row in rows]


async def _apply_recheck(
    ctx: Context,
    target: Target,
    verdicts: dict[str, dns.Check],
    reverse: dict[str, Any] | None,
) -> None:
    row = await _locked(ctx, target.id)
    if (
        row.status != "verified"
        or row.dkim_public_key != target.public_key
        or row.link_host != target.link_host
    ):
        return  # verified again, failed, re-keyed or re-hosted meanwhile: that one stands
    dkim_verdict = verdicts[dns.DKIM]
    if not dkim_verdict.ok and not dkim_verdict.definite:
        log.warning("re-check of %s inconclusive: %s", row.domain, dkim_verdict.reason)
        verdicts = {**verdicts, dns.DKIM: dns.Check("verified")}  # as it was; next round
    _record(row, verdicts, reverse)
    if not verdicts[dns.DKIM].ok:
        reason = f"lapsed, no longer verified: {_failure_reason(verdicts)}"
        await _become_failed(ctx, row, reason, lapsed=True)
