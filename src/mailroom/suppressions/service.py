"""The suppression list: lookups, never-downgrading writes, listing, lifting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, delete, func, select, update

from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.emails import (
    HASH_PATTERN,
    email_domain,
    is_valid_email,
    mask_email,
    normalize_email,
)
from mailroom.core.errors import ApiError
from mailroom.core.ids import new_id
from mailroom.core.text import contains_pattern
from mailroom.db import chunks, insert_ignoring_conflicts
from mailroom.models import REASON_STRENGTH, Contact, Suppression

REASONS = ("unsubscribed", "bounced", "complained", "deleted")
IMPORTABLE_REASONS = ("unsubscribed", "bounced", "complained")
REASON_ALIASES = {
    "unsubscribed": "unsubscribed",
    "cancelled": "unsubscribed",
    "canceled": "unsubscribed",
    "opted out": "unsubscribed",
    "opted_out": "unsubscribed",
    "unsubscribe": "unsubscribed",
    "bounced": "bounced",
    "cleaned": "bounced",
    "hard bounce": "bounced",
    "hard_bounce": "bounced",
    "invalid": "bounced",
    "bounce": "bounced",
    "complained": "complained",
    "junk": "complained",
    "spam": "complained",
    "abuse": "complained",
    "complaint": "complained",
}


def importable_reason(value: Any) -> str | None:
    """An import reason (with aliases) as one of the three importable reasons, else None."""
    if not isinstance(value, str):
        return None
    return REASON_ALIASES.get(" ".join(value.strip().lower().replace("-", " ").split()))


def refusal(reason: str) -> ApiError:
    """409 for making a suppressed address a subscriber, worded by why it is suppressed."""
    messages = {
        "unsubscribed": "This address unsubscribed and is on the suppression list. It can return "
        "via a signup form, or with resubscribe: true when you have fresh consent.",
        "bounced": "This address previously bounced and cannot be re-added.",
        "complained": "This address previously reported spam and cannot be re-added.",
        "deleted": "This address was deleted and can only return through a signup form.",
    }
    return ApiError(409, messages[reason], reason=reason)


async def find(ctx: Context, email_hash: str) -> Suppression | None:
    result: Suppression | None = await ctx.session.scalar(
        select(Suppression).where(
            Suppression.workspace_id == ctx.workspace_id, Suppression.email_hash == email_hash
        )
    )
    return result


async def reasons(ctx: Context, email_hashes: set[str]) -> dict[str, str]:
    """Which of these addresses are suppressed, and why: one read for a batch."""
    if not email_hashes:
        return {}
    found: dict[str, str] = {}
    for part in chunks(ctx.session, sorted(email_hashes)):
        rows = await ctx.session.execute(
            select(Suppression.email_hash, Suppression.reason).where(
                Suppression.workspace_id == ctx.workspace_id, Suppression.email_hash.in_(part)
            )
        )
        found.update((row.email_hash, row.reason) for row in rows)
    return found


def stronger(new: str, old: str) -> bool:
    return REASON_STRENGTH[new] > REASON_STRENGTH[old]


async def suppress(
    ctx: Context,
    *,
    email: str | None,
    reason: str,
    source: str,
    erase: bool = False,
    email_hash: str | None = None,
) -> str:
    """Put an address on the list; returns `added`, `upgraded` or `unchanged`.

    A stronger reason replaces a weaker one, never the reverse. An erasure keeps the hash only
    (masked form and domain are wiped, even from an existing row) and is never liftable.
    """
    digest = email_hash or ctx.hash_email(email or "")
    row = await find(ctx, digest)
    masked = None if erase or not email else mask_email(email)
    domain = None if erase or not email else email_domain(email)
    now = utcnow()
    if row is None:
        ctx.session.add(
            Suppression(
                workspace_id=ctx.workspace_id,
                email_hash=digest,
                reason=reason,
                source=source[:40],
                email_masked=masked,
                email_domain=domain,
                erased=erase,
                created_at=now,
                updated_at=now,
            )
        )
        await ctx.session.flush()
        return "added"
    outcome = "unchanged"
    if stronger(reason, row.reason):
        row.reason = reason
        row.source = source[:40]
        outcome = "upgraded"
    if erase:
        row.erased = True
        row.email_masked = None
        row.email_domain = None
    elif not row.erased and row.email_masked is None and masked:
        row.email_masked, row.email_domain = masked, domain
    row.updated_at = now
    return outcome


async def suppress_many(ctx: Context, emails: list[str], *, reason: str, source: str) -> None:
    """`suppress` for a batch of addresses in a few statements (bounce and complaint reports
    come in batches): new addresses are inserted, weaker reasons raised, stronger ones kept."""
    by_hash = {ctx.hash_email(e): e for e in emails if e}
    now = utcnow()
    weaker_reasons = [r for r in REASON_STRENGTH if stronger(reason, r)]
    for part in chunks(ctx.session, sorted(by_hash)):
        found = {
            r.email_hash: r
            for r in (
                await ctx.session.execute(
                    select(
                        Suppression.email_hash, Suppression.email_masked, Suppression.erased
                    ).where(
                        Suppression.workspace_id == ctx.workspace_id,
                        Suppression.email_hash.in_(part),
                    )
                )
            ).all()
        }
        new = [h for h in part if h not in found]
        if new:
            # A concurrent insert of the same address wins; its reason is then kept.
            await ctx.session.execute(
                insert_ignoring_conflicts(ctx.session, Suppression),
                [
                    {
                        "id": new_id(),
                        "workspace_id": ctx.workspace_id,
                        "email_hash": digest,
                        "reason": reason,
                        "source": source[:40],
                        "email_masked": mask_email(by_hash[digest]),
                        "email_domain": email_domain(by_hash[digest]),
                        "erased": False,
                        "created_at": now,
                        "updated_at": now,
                    }
                    for digest in new
                ],
            )
        known = [h for h in part if h in found]
        if known and weaker_reasons:
            await ctx.session.execute(
                update(Suppression)
                .where(
                    Suppression.workspace_id == ctx.workspace_id,
                    Suppression.email_hash.in_(known),
                    Suppression.reason.in_(weaker_reasons),
                )
                .values(reason=reason, source=source[:40], updated_at=now)
                .execution_options(synchronize_session=False)
            )
        for digest in known:  # rare: a row imported by hash alone learns its masked form
            row = found[digest]
            if not row.erased and row.email_masked is None:
                await ctx.session.execute(
                    update(Suppression)
                    .where(
                        Suppression.workspace_id == ctx.workspace_id,
                        Suppression.email_hash == digest,
                    )
                    .values(
                        email_masked=mask_email(by_hash[digest]),
                        email_domain=email_domain(by_hash[digest]),
                    )
                    .execution_options(synchronize_session=False)
                )


async def remove(ctx: Context, row: Suppression) -> None:
    await ctx.session.execute(delete(Suppression).where(Suppression.id == row.id))


# ---------------------------------------------------------------- reading the list


async def summary(ctx: Context) -> dict[str, Any]:
    rows = await ctx.session.execute(
        select(Suppression.reason, func.count())
        .where(Suppression.workspace_id == ctx.workspace_id)
        .group_by(Suppression.reason)
    )
    by_reason = dict.fromkeys(REASONS, 0)
    for reason, count in rows.all():
        by_reason[reason] = int(count)
    return {"count": sum(by_reason.values()), "by_reason": by_reason}


def parse_lookup_email(value: Any, field: str = "email") -> str:
    if not isinstance(value, str):
        raise ApiError(400, f"{field} must be a valid email address")
    email = normalize_email(value)
    if not is_valid_email(email):
        raise ApiError(400, f"{field} must be a valid email address")
    return email


async def check_address(ctx: Context, raw_email: Any) -> dict[str, Any]:
    email = parse_lookup_email(raw_email)
    row = await find(ctx, ctx.hash_email(email))
    return {
        "email": email,
        "suppressed": row is not None,
        "reason": row.reason if row else None,
        "source": row.source if row else None,
        "added_at": row.created_at if row else None,
        "liftable": is_liftable(row) if row else False,
    }


def is_liftable(row: Suppression) -> bool:
    return row.reason == "deleted" and not row.erased


def parse_reason_filter(reason: str | None) -> str | None:
    if reason is None:  # an empty one is refused, as the published enum says
        return None
    if reason not in REASONS:
        raise ApiError(400, f"reason must be one of {', '.join(REASONS)}")
    return reason


def listing_query(
    ctx: Context, reason: str | None, domain: str | None
) -> Select[Suppression, str | None, str | None, str | None]:
    """Rows with the contact that still carries the address (if any), newest first."""
    query = (
        select(Suppression, Contact.id, Contact.email, Contact.status)
        .outerjoin(
            Contact,
            (Contact.workspace_id == Suppression.workspace_id)
            & (Contact.email_hash == Suppression.email_hash),
        )
        .where(Suppression.workspace_id == ctx.workspace_id)
    )
    if reason:
        query = query.where(Suppression.reason == reason)
    if domain and domain.strip():
        # Stored domains are lowercase already (they come from normalised addresses).
        pattern = contains_pattern(domain.strip())
        query = query.where(Suppression.email_domain.like(pattern, escape="\\"))
    return query.order_by(Suppression.created_at.desc(), Suppression.id.desc())


@dataclass
class SuppressionView:
    row: Suppression
    contact_id: str | None
    contact_email: str | None
    contact_status: str | None

    @classmethod
    def from_row(cls, row: Any) -> SuppressionView:
        suppression, contact_id, contact_email, contact_status = row
        return cls(suppression, contact_id, contact_email, contact_status)

    def as_dict(self) -> dict[str, Any]:
        row = self.row
        masked, domain = row.email_masked, row.email_domain
        if masked is None and not row.erased and self.contact_email:
            # Older hash-only rows: derived from the surviving contact, never stored back.
            masked, domain = mask_email(self.contact_email), email_domain(self.contact_email)
        return {
            "email_hash": row.email_hash,
            "reason": row.reason,
            "source": row.source,
            "created_at": row.created_at,
            "email_masked": masked,
            "email_domain": domain,
            "contact": (
                {"id": self.contact_id, "email": self.contact_email, "status": self.contact_status}
                if self.contact_id
                else None
            ),
            "liftable": is_liftable(row),
        }


async def list_page(
    ctx: Context, *, reason: str | None, domain: str | None, offset: int, limit: int
) -> tuple[list[SuppressionView], int]:
    query = listing_query(ctx, reason, domain)
    total = int(
        await ctx.session.scalar(select(func.count()).select_from(query.order_by(None).subquery()))
        or 0
    )
    rows = await ctx.session.execute(query.offset(offset).limit(limit))
    return [SuppressionView.from_row(row) for row in rows.all()], total


# ---------------------------------------------------------------- lifting


async def lift(ctx: Context, *, email: Any = None, email_hash: Any = None) -> str:
    """Remove a plain-delete row; every other row is refused (409 with its reason)."""
    if email in (None, "") and email_hash in (None, ""):
        raise ApiError(400, "email or email_hash is required")
    if email not in (None, ""):
        digest = ctx.hash_email(parse_lookup_email(email))
    else:
        if not isinstance(email_hash, str) or not HASH_PATTERN.match(email_hash.strip().lower()):
            raise ApiError(400, "email_hash must be a 64-character hex string")
        digest = email_hash.strip().lower()
    ctx.principal.check_admin()
    row = await find(ctx, digest)
    if row is None:
        raise ApiError(404, "Address not found on the suppression list")
    if row.erased:
        raise ApiError(409, "This address was erased and can never be lifted.", reason=row.reason)
    if row.reason != "deleted":
        messages = {
            "bounced": "This address bounced; bounces are permanent and cannot be lifted.",
            "complained": "This address reported spam; complaints are permanent and cannot be "
            "lifted.",
            "unsubscribed": "This address unsubscribed; lifting needs new consent: use "
            "resubscribe: true on the contact, or a signup form.",
        }
        raise ApiError(409, messages[row.reason], reason=row.reason)
    await remove(ctx, row)
    return row.reason
