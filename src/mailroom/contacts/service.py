"""Contacts: create, read, list, update (the status machine), delete and erase."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, delete, func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm.exc import StaleDataError

from mailroom.automations import enrol as automations
from mailroom.contacts import fields as check
from mailroom.contacts import memberships, selection, send_history, submissions
from mailroom.contacts.query import ContactFilter, conditions, counts_suffice, order_by
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.custom_fields import service as custom_fields
from mailroom.db import serialise
from mailroom.ecommerce import customers
from mailroom.events import service as events
from mailroom.models import (
    CONTACT_STATUSES,
    Contact,
    ContactCounts,
    ContactTag,
    CustomFieldDefinition,
    ListMember,
    Tag,
    Workspace,
)
from mailroom.suppressions import service as suppressions

DUPLICATE = "A contact with this email already exists"


# ---------------------------------------------------------------- reading


async def get_contact(ctx: Context, contact_id: str) -> Contact:
    contact: Contact | None = await ctx.session.scalar(
        select(Contact).where(Contact.id == contact_id, Contact.workspace_id == ctx.workspace_id)
    )
    if contact is None:
        raise ApiError(404, "Contact not found")
    return contact


async def contact_tags(ctx: Context, contact_id: str) -> list[dict[str, Any]]:
    rows = await ctx.session.execute(
        select(Tag.id, Tag.name, Tag.color, ContactTag.created_at)
        .join(ContactTag, ContactTag.tag_id == Tag.id)
        .where(ContactTag.contact_id == contact_id, ContactTag.workspace_id == ctx.workspace_id)
        .order_by(ContactTag.created_at, Tag.name_key)
    )
    return [
        {"id": tag_id, "name": name, "color": color, "assigned_at": assigned}
        for tag_id, name, color, assigned in rows.all()
    ]


def to_dict(contact: Contact, fields: dict[str, CustomFieldDefinition]) -> dict[str, Any]:
    return {
        "id": contact.id,
        "tenant_id": contact.workspace_id,
        "email": contact.email,
        "first_name": contact.first_name,
        "last_name": contact.last_name,
        "status": contact.status,
        "custom_fields": contact.custom_fields or {},
        "source": contact.source,
        "language": contact.language,
        "subscribed_at": contact.subscribed_at,
        "unsubscribed_at": contact.unsubscribed_at,
        "created_at": contact.created_at,
        "updated_at": contact.updated_at,
        "invalid_custom_fields": custom_fields.invalid_keys(contact.custom_fields or {}, fields),
    }


async def describe(ctx: Context, contact: Contact) -> dict[str, Any]:
    """The single-contact shape: the contact plus its tags."""
    fields = await custom_fields.registry(ctx)
    return {**to_dict(contact, fields), "tags": await contact_tags(ctx, contact.id)}


async def list_contacts(
    ctx: Context, f: ContactFilter, page: PageParams, sort: str | None, direction: str | None
) -> tuple[list[dict[str, Any]], int]:
    ordering = order_by(sort, direction)
    where = and_(*conditions(ctx, f))
    total = await count_matching(ctx, f)
    if total == 0 or page.offset >= total:
        # Nothing to show: skip a walk that would find nothing (on PostgreSQL a status with
        # no contacts would otherwise be a scan of the workspace: no index names `status`).
        return [], total
    rows = await ctx.session.scalars(
        select(Contact).where(where).order_by(*ordering).offset(page.offset).limit(page.limit)
    )
    fields = await custom_fields.registry(ctx)
    return [to_dict(c, fields) for c in rows.all()], total


async def count_matching(ctx: Context, f: ContactFilter) -> int:
    """How many contacts a filter matches, by the cheapest exact route."""
    counts = await status_counts(ctx)
    if counts_suffice(f):
        return counts[f.status] if f.status else sum(counts.values()) - counts["archived"]
    only_membership = not (f.q or f.source or f.date_from or f.date_to or f.status)
    if only_membership and counts["archived"] == 0 and bool(f.tag) != bool(f.list_id):
        # Nothing is hidden, so every membership row of the workspace is a match.
        member: Any = ContactTag if f.tag else ListMember
        key = member.tag_id if f.tag else member.list_id
        return int(
            await ctx.session.scalar(
                select(func.count())
                .select_from(member)
                .where(key == (f.tag or f.list_id), member.workspace_id == ctx.workspace_id)
            )
            or 0
        )
    where = and_(*conditions(ctx, f, for_count=True))
    return int(
        await ctx.session.scalar(select(func.count()).select_from(Contact).where(where)) or 0
    )


# ---------------------------------------------------------------- the contact cap


async def status_counts(ctx: Context) -> dict[str, int]:
    """Contacts of the workspace per status (kept by triggers, read in one row)."""
    row = await ctx.session.get(ContactCounts, ctx.workspace_id, populate_existing=True)
    return {status: int(getattr(row, status, 0) or 0) for status in CONTACT_STATUSES}


@asynccontextmanager
async def counting_once(ctx: Context) -> AsyncIterator[None]:
    """For one big write on SQLite: lift the per-row count triggers, then recount the
    workspace once (PostgreSQL's triggers are per statement already).

    SQLite runs a row trigger ~25 µs per row (1.5 s for 50,000); DDL is transactional there,
    so the triggers come back with the same commit, or the rollback restores them, and no other
    writer can run meanwhile (we hold the write lock).
    """
    if ctx.dialect != "sqlite":
        yield
        return
    triggers = (
        await ctx.session.execute(
            text(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' "
                "AND tbl_name = 'contacts' AND name LIKE 'contacts_count_%'"
            )
        )
    ).all()
    for name, _sql in triggers:
        await ctx.session.execute(text(f'DROP TRIGGER "{name}"'))
    yield
    statuses = ", ".join(CONTACT_STATUSES)
    sums = ", ".join(f"coalesce(sum(status = '{s}'), 0)" for s in CONTACT_STATUSES)
    await ctx.session.execute(
        text(
            f"INSERT INTO contact_counts (workspace_id, {statuses}) "
            f"SELECT :ws, {sums} FROM contacts WHERE workspace_id = :ws "
            "ON CONFLICT (workspace_id) DO UPDATE SET "
            + ", ".join(f"{s} = excluded.{s}" for s in CONTACT_STATUSES)
        ),
        {"ws": ctx.workspace_id},
    )
    for _name, sql in triggers:
        await ctx.session.execute(text(sql))


async def subscribed_count(ctx: Context) -> int:
    """Subscribed (so non-archived) contacts across every workspace of the account."""
    return int(
        await ctx.session.scalar(
            select(func.coalesce(func.sum(ContactCounts.subscribed), 0))
            .join(Workspace, Workspace.id == ContactCounts.workspace_id)
            .where(Workspace.account_id == ctx.principal.account_id)
        )
        or 0
    )


async def ensure_capacity(ctx: Context, adding: int = 1) -> None:
    """403 when `adding` more subscribed contacts would pass the plan's pooled cap."""
    if adding <= 0:
        return
    # Cap checks one at a time per account: two creates cannot both take the last slot.
    await serialise(ctx.session, f"contact-cap:{ctx.principal.account_id}")
    plan = ctx.principal.plan
    if await subscribed_count(ctx) + adding > plan.contacts:
        raise ApiError(
            403,
            f"Contact limit reached ({plan.contacts} on the {plan.label} plan). Upgrade to add more.",
        )


# ---------------------------------------------------------------- creating


async def find_by_email(ctx: Context, email: str) -> Contact | None:
    found: Contact | None = await ctx.session.scalar(
        select(Contact).where(Contact.workspace_id == ctx.workspace_id, Contact.email == email)
    )
    return found


async def create_contact(
    ctx: Context,
    body: dict[str, Any],
    *,
    form_id: str | None = None,
    consent: dict[str, str] | None = None,
    looked_up: bool = False,
) -> Contact:
    """POST /contacts, and a signup form's new contact (`form_id`: the events carry the form
    dimension; `consent`: the consent values stored beside the custom fields, unregistered,
    as the import stores them; `looked_up`: the caller has just found no contact and no
    suppression for the address in this transaction)."""
    email = check.clean_email(body.get("email"))
    first_name = check.clean_name("first_name", body.get("first_name"))
    last_name = check.clean_name("last_name", body.get("last_name"))
    source = check.clean_source(body.get("source"))
    language = check.clean_language(body.get("language"))
    resubscribe = bool(body.get("resubscribe", False))
    raw_fields = body.get("custom_fields")

    existing = None if looked_up else await find_by_email(ctx, email)
    if existing is not None:
        if resubscribe:
            raise ApiError(
                409,
                f"{DUPLICATE}. To resubscribe it, send PATCH /api/v1/contacts/{existing.id} "
                "with resubscribe: true.",
            )
        raise ApiError(409, DUPLICATE)
    digest = ctx.hash_email(email)
    suppression = None if looked_up else await suppressions.find(ctx, digest)
    if suppression is not None and not (resubscribe and suppression.reason == "unsubscribed"):
        raise suppressions.refusal(suppression.reason)
    await ensure_capacity(ctx)
    values = (
        await custom_fields.apply_values(ctx, {}, raw_fields, replace=True, nulls_remove=False)
        if raw_fields is not None
        else {}
    )
    now = utcnow()
    contact = Contact(
        workspace_id=ctx.workspace_id,
        email=email,
        email_hash=digest,
        first_name=first_name,
        last_name=last_name,
        status="subscribed",
        custom_fields={**values, **(consent or {})},
        source=source,
        language=language,
        subscribed_at=now,
        created_at=now,
        updated_at=now,
    )
    ctx.session.add(contact)
    try:
        await ctx.session.flush()
    except IntegrityError:  # the same address created by a concurrent request
        raise ApiError(409, DUPLICATE) from None
    if suppression is not None:
        await suppressions.remove(ctx, suppression)
    await customers.link(ctx, [digest])  # the address's orders and carts name it from now on
    await events.emit_contact_event(ctx, "contact.created", contact, tags=[], form_id=form_id)
    await automations.enrol(ctx, "contact_created", [contact.id])
    return contact


# ---------------------------------------------------------------- updating


UPDATABLE = ("email", "first_name", "last_name", "status", "source", "language", "custom_fields")


@dataclass
class UpdateResult:
    contact: Contact
    suppressed: bool | None  # only when `suppress: true` was sent


def _check_flags(body: dict[str, Any]) -> None:
    status = body.get("status")
    resubscribe = body.get("resubscribe") is True
    suppress = body.get("suppress") is True
    if suppress and resubscribe:
        raise ApiError(400, "suppress: true cannot be combined with resubscribe: true")
    if suppress and status != "unsubscribed":
        raise ApiError(400, "suppress: true requires status: unsubscribed")
    if resubscribe and status not in (None, "subscribed"):
        raise ApiError(400, f"resubscribe: true cannot be combined with status {status}")
    if body.get("replace_custom_fields") is True and "custom_fields" not in body:
        raise ApiError(400, "replace_custom_fields: true requires custom_fields")
    if not any(key in body for key in UPDATABLE) and not resubscribe:
        raise ApiError(400, "No updatable fields provided")
    if "status" in body:
        check.clean_patch_status(status)


async def update_contact(
    ctx: Context,
    contact_id: str,
    body: dict[str, Any],
    *,
    form_id: str | None = None,
    consent: dict[str, str] | None = None,
) -> UpdateResult:
    """PATCH: field changes plus the status machine (spec, States: Contact status). A signup
    form's update passes `form_id` and `consent` as `create_contact` does."""
    try:
        return await _update_contact(ctx, contact_id, body, form_id, consent)
    except StaleDataError:
        # The row was deleted after we read it (a concurrent delete or bulk delete committed
        # first): for this request it is gone, as if the delete had come before the read.
        raise ApiError(404, "Contact not found") from None


async def _update_contact(
    ctx: Context,
    contact_id: str,
    body: dict[str, Any],
    form_id: str | None,
    consent: dict[str, str] | None,
) -> UpdateResult:
    _check_flags(body)
    contact = await get_contact(ctx, contact_id)
    resubscribe = body.get("resubscribe") is True
    target = "subscribed" if resubscribe else body.get("status")

    changed = False
    new_email = contact.email
    if "email" in body:
        new_email = check.clean_email(body["email"])
    updates: dict[str, Any] = {}
    if "first_name" in body:
        updates["first_name"] = check.clean_name("first_name", body["first_name"])
    if "last_name" in body:
        updates["last_name"] = check.clean_name("last_name", body["last_name"])
    if "source" in body:
        updates["source"] = check.clean_source(body["source"], default=contact.source)
    if "language" in body:
        updates["language"] = check.clean_language(body["language"])
    if "custom_fields" in body:
        if body["custom_fields"] is None:
            raise ApiError(400, "custom_fields must be an object")
        replace = body.get("replace_custom_fields") is True
        updates["custom_fields"] = await custom_fields.apply_values(
            ctx,
            contact.custom_fields or {},
            body["custom_fields"],
            replace=replace,
            nulls_remove=not replace,
        )
    if consent:
        updates["custom_fields"] = {
            **updates.get("custom_fields", contact.custom_fields or {}),
            **consent,
        }

    renamed = new_email != contact.email
    if renamed and await find_by_email(ctx, new_email) is not None:
        raise ApiError(409, DUPLICATE)
    new_hash = ctx.hash_email(new_email) if renamed else contact.email_hash
    final_status = target or contact.status
    becoming_subscriber = final_status == "subscribed" and contact.status != "subscribed"
    lift_after = None
    if final_status == "subscribed" and (becoming_subscriber or renamed or resubscribe):
        suppression = await suppressions.find(ctx, new_hash)
        if suppression is not None:
            if resubscribe and suppression.reason == "unsubscribed":
                lift_after = suppression
            else:
                raise suppressions.refusal(suppression.reason)
    if becoming_subscriber:
        await ensure_capacity(ctx)

    for name, value in updates.items():
        if getattr(contact, name) != value:
            setattr(contact, name, value)
            changed = True
    if renamed:
        contact.email, contact.email_hash = new_email, new_hash
        changed = True

    status_event, suppressed = await _change_status(ctx, contact, target, body, resubscribe)
    if lift_after is not None:
        await suppressions.remove(ctx, lift_after)
    if status_event == "contact.updated":
        changed, status_event = True, None
    if changed or status_event:
        contact.updated_at = utcnow()
        await ctx.session.flush()
    if renamed:
        await customers.link(ctx, [new_hash])
    names = await events.tag_names(ctx, contact.id) if (changed or status_event) else []
    if status_event:
        await events.emit_contact_event(ctx, status_event, contact, tags=names, form_id=form_id)
    if changed:
        await events.emit_contact_event(
            ctx, "contact.updated", contact, tags=names, form_id=form_id
        )
    return UpdateResult(contact, suppressed if body.get("suppress") is True else None)


async def _change_status(
    ctx: Context, contact: Contact, target: str | None, body: dict[str, Any], resubscribe: bool
) -> tuple[str | None, bool | None]:
    """Apply a status change; returns the event it emits and, with `suppress`, whether the
    suppression list gained or strengthened a row."""
    suppressed: bool | None = None
    if target is None or (target == contact.status and not resubscribe):
        if target == "unsubscribed" and body.get("suppress") is True:
            outcome = await suppressions.suppress(
                ctx, email=contact.email, reason="unsubscribed", source="api"
            )
            suppressed = outcome != "unchanged"
        return None, suppressed
    previous = contact.status
    # An archived contact is judged by the status it had before archiving.
    effective_previous = contact.previous_status if previous == "archived" else previous
    now = utcnow()
    if target == "archived":
        contact.previous_status = previous
        contact.status = "archived"
        return "contact.updated", None
    contact.previous_status = None
    if target == "subscribed":
        if previous == "subscribed":
            return None, None
        contact.status = "subscribed"
        contact.subscribed_at = now
        contact.unsubscribed_at = None
        opted_out = effective_previous in ("unsubscribed", "bounced", "complained")
        return ("contact.resubscribed" if opted_out else "contact.updated"), None
    contact.status = target
    contact.unsubscribed_at = now
    if target == "unsubscribed":
        if body.get("suppress") is True:
            outcome = await suppressions.suppress(
                ctx, email=contact.email, reason="unsubscribed", source="api"
            )
            suppressed = outcome != "unchanged"
        return "contact.unsubscribed", suppressed
    # bounced / complained: the address is suppressed with that reason (never downgraded).
    await suppressions.suppress(ctx, email=contact.email, reason=target, source="api")
    return f"contact.{target}", None


# ---------------------------------------------------------------- deleting


async def delete_contact(ctx: Context, contact_id: str, mode: str) -> None:
    """Delete (suppressed as `deleted`, masked form kept, liftable) or erase (hash only, never
    liftable); memberships go with the row."""
    if mode not in ("delete", "erase"):
        raise ApiError(400, "mode must be delete or erase")
    contact = await get_contact(ctx, contact_id)
    erase = mode == "erase"
    names = await events.tag_names(ctx, contact.id)
    snapshot = events.contact_snapshot(contact, names)
    if erase:
        snapshot = {**dict.fromkeys(snapshot), "id": contact.id, "status": "erased", "tags": []}
    await suppressions.suppress(
        ctx,
        email=contact.email,
        reason="deleted",
        source="contact_erase" if erase else "contact_delete",
        erase=erase,
        email_hash=contact.email_hash,
    )
    one = await selection.select_contacts(ctx, [contact.id], None)
    if await memberships.removal_wanted(ctx):
        await memberships.drop_all_memberships(ctx, one, erased=erase)
    else:
        await ctx.session.execute(delete(ContactTag).where(ContactTag.contact_id == contact.id))
        await ctx.session.execute(delete(ListMember).where(ListMember.contact_id == contact.id))
    await send_history.anonymise(ctx, one, erase=erase)
    await customers.forget(ctx, one, erase=erase)
    if erase:
        await submissions.erase(ctx, one)
    await selection.release(ctx, one)
    await ctx.session.execute(delete(Contact).where(Contact.id == contact.id))
    await events.emit(ctx, "contact.deleted", {"contact": snapshot, "mode": mode})
