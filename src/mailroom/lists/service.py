"""Lists and their members. A member is `confirmed`, or `unconfirmed` on a double opt-in list
(every list of a Free-plan workspace behaves as double opt-in) until the person confirms."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select

from mailroom.contacts import memberships
from mailroom.contacts import service as contacts
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.custom_fields import service as custom_fields
from mailroom.db import insert_ignoring_conflicts
from mailroom.models import Contact, ListMember, MailingList
from mailroom.named import Named

MAX_NAME = 100
MAX_DESCRIPTION = 500
MAX_IDS = 1000
LISTS = Named(MailingList, "list", MAX_NAME)


def _description(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ApiError(400, "description must be a string")
    if len(value) > MAX_DESCRIPTION:
        raise ApiError(400, f"description must be {MAX_DESCRIPTION} characters or fewer")
    return value.strip()


def effective_double_opt_in(ctx: Context, mailing_list: MailingList) -> bool:
    return mailing_list.double_opt_in or ctx.principal.plan.double_opt_in_everywhere


async def get_list(ctx: Context, list_id: str) -> MailingList:
    return await LISTS.get(ctx, list_id)


async def create_list(ctx: Context, body: dict[str, Any]) -> MailingList:
    name = await LISTS.claim_name(ctx, body.get("name"))
    return await LISTS.create(
        ctx,
        name,
        description=_description(body.get("description")),
        double_opt_in=bool(body.get("double_opt_in") or False),
    )


async def update_list(ctx: Context, list_id: str, body: dict[str, Any]) -> MailingList:
    mailing_list = await get_list(ctx, list_id)
    if not body:
        raise ApiError(400, "No updatable fields provided")
    if "name" in body:
        await LISTS.rename(ctx, mailing_list, body["name"])
    if "description" in body:
        mailing_list.description = _description(body["description"])
    if "double_opt_in" in body:
        if not isinstance(body["double_opt_in"], bool):
            raise ApiError(400, "double_opt_in must be true or false")
        mailing_list.double_opt_in = body["double_opt_in"]
    LISTS.touch(mailing_list)
    return mailing_list


async def delete_list(ctx: Context, list_id: str) -> int:
    mailing_list = await get_list(ctx, list_id)
    removed = await memberships.drop_group(ctx, "list", mailing_list)  # contact.list_left each
    await LISTS.delete(ctx, mailing_list)
    return removed


async def member_counts(ctx: Context, list_ids: list[str]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {
        lid: {"confirmed": 0, "unconfirmed": 0} for lid in list_ids
    }
    if not list_ids:
        return counts
    rows = await ctx.session.execute(
        select(ListMember.list_id, ListMember.status, func.count())
        .where(ListMember.workspace_id == ctx.workspace_id, ListMember.list_id.in_(list_ids))
        .group_by(ListMember.list_id, ListMember.status)
    )
    for list_id, status, count in rows.all():
        counts[list_id][status] = int(count)
    return counts


def as_dict(ctx: Context, mailing_list: MailingList, counts: dict[str, int]) -> dict[str, Any]:
    return {
        "id": mailing_list.id,
        "name": mailing_list.name,
        "description": mailing_list.description,
        "double_opt_in": mailing_list.double_opt_in,
        "effective_double_opt_in": effective_double_opt_in(ctx, mailing_list),
        "member_count": counts.get("confirmed", 0) + counts.get("unconfirmed", 0),
        "confirmed_count": counts.get("confirmed", 0),
        "unconfirmed_count": counts.get("unconfirmed", 0),
        "created_at": mailing_list.created_at,
        "updated_at": mailing_list.updated_at,
    }


async def list_lists(ctx: Context, page: PageParams) -> tuple[list[MailingList], int]:
    return await LISTS.page(ctx, page)


# ---------------------------------------------------------------- members


def clean_ids(raw: Any, field: str = "contact_ids") -> list[str]:
    """Ids as given: non-strings dropped, duplicates folded."""
    if raw is None:
        raise ApiError(400, f"{field} array is required")
    if not isinstance(raw, list):
        raise ApiError(400, f"{field} must be an array")
    return list(dict.fromkeys(i.strip() for i in raw if isinstance(i, str) and i.strip()))


@dataclass
class MembershipChange:
    added: int = 0
    already_member: int = 0
    skipped_not_subscribed: int = 0
    membership: str = "confirmed"
    not_found: int = 0


async def add_members(ctx: Context, list_id: str, raw_ids: Any) -> MembershipChange:
    """Subscribed contacts join: confirmed on a single opt-in list (fires
    `contact.list_joined`), unconfirmed on a double opt-in one. No email is sent here."""
    contact_ids = clean_ids(raw_ids)
    if not contact_ids:
        raise ApiError(400, "No valid contact IDs provided")
    mailing_list = await get_list(ctx, list_id)
    if len(contact_ids) > MAX_IDS:
        raise ApiError(400, f"contact_ids may have at most {MAX_IDS} ids")
    found = list(
        (
            await ctx.session.scalars(
                select(Contact).where(
                    Contact.workspace_id == ctx.workspace_id, Contact.id.in_(contact_ids)
                )
            )
        ).all()
    )
    if not found:
        raise ApiError(404, "Contact not found")
    confirmed = not effective_double_opt_in(ctx, mailing_list)
    result = MembershipChange(
        membership="confirmed" if confirmed else "unconfirmed",
        not_found=len(contact_ids) - len(found),
    )
    now = utcnow()
    existing = set(
        (
            await ctx.session.scalars(
                select(ListMember.contact_id).where(
                    ListMember.list_id == mailing_list.id,
                    ListMember.contact_id.in_([c.id for c in found]),
                )
            )
        ).all()
    )
    for contact in found:
        # As bulk add_to_list: whoever is not subscribed is skipped, member or not.
        if contact.status != "subscribed":
            result.skipped_not_subscribed += 1
            continue
        if contact.id in existing:
            result.already_member += 1
            continue
        inserted = await ctx.session.scalar(
            insert_ignoring_conflicts(ctx.session, ListMember)
            .values(
                list_id=mailing_list.id,
                contact_id=contact.id,
                workspace_id=ctx.workspace_id,
                status="confirmed" if confirmed else "unconfirmed",
                created_at=now,
                confirmed_at=now if confirmed else None,
            )
            .returning(ListMember.contact_id)
        )
        if inserted is None:  # joined meanwhile by a concurrent request
            result.already_member += 1
            continue
        result.added += 1
        if confirmed:
            await memberships.list_event(
                ctx, "contact.list_joined", contact, mailing_list.id, mailing_list.name
            )
    await ctx.session.flush()
    return result


async def remove_member(ctx: Context, list_id: str, contact_id: str) -> None:
    mailing_list = await get_list(ctx, list_id)
    contact = await contacts.get_contact(ctx, contact_id)
    removed = await ctx.session.scalar(
        delete(ListMember)
        .where(ListMember.list_id == mailing_list.id, ListMember.contact_id == contact.id)
        .returning(ListMember.contact_id)
    )
    if removed is None:  # not a member, or removed by a concurrent request
        raise ApiError(404, "This contact is not on the list")
    await memberships.list_event(
        ctx, "contact.list_left", contact, mailing_list.id, mailing_list.name
    )


async def list_members(
    ctx: Context, list_id: str, page: PageParams, status: str | None
) -> tuple[list[dict[str, Any]], int]:
    mailing_list = await get_list(ctx, list_id)
    if status not in (None, "confirmed", "unconfirmed"):  # "" too, as the published enum
        raise ApiError(400, "status must be one of confirmed, unconfirmed")
    where = [ListMember.list_id == mailing_list.id]
    if status:
        where.append(ListMember.status == status)
    total = int(
        await ctx.session.scalar(select(func.count()).select_from(ListMember).where(*where)) or 0
    )
    rows = await ctx.session.execute(
        select(Contact, ListMember)
        .join(ListMember, ListMember.contact_id == Contact.id)
        .where(*where)
        .order_by(ListMember.created_at.desc(), Contact.id.desc())
        .offset(page.offset)
        .limit(page.limit)
    )
    fields = await custom_fields.registry(ctx)
    members = [
        {
            **contacts.to_dict(contact, fields),
            "membership": {
                "status": member.status,
                "joined_at": member.created_at,
                "confirmed_at": member.confirmed_at,
            },
        }
        for contact, member in rows.all()
    ]
    return members, total
