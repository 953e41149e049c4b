"""Tags (unique per workspace whatever the case) and tagging contacts."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import delete, func, select

from mailroom.automations import enrol as automations
from mailroom.contacts import memberships
from mailroom.contacts import service as contacts
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.db import insert_ignoring_conflicts
from mailroom.events import service as events
from mailroom.models import Contact, ContactTag, Tag
from mailroom.named import Named

MAX_NAME = 60
COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")
PALETTE = ("#2563eb", "#16a34a", "#d97706", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#4b5563")
TAGS = Named(Tag, "tag", MAX_NAME)


def clean_color(value: Any) -> str:
    if value is not None and not isinstance(value, str):
        raise ApiError(400, "color must be a string")
    if value is None or not COLOR.match(value.strip()):
        raise ApiError(400, "color must be a hex colour like #2563eb")
    return value.strip().lower()


async def get_tag(ctx: Context, tag_id: str) -> Tag:
    return await TAGS.get(ctx, tag_id)


async def create_tag(ctx: Context, name: Any, color: Any = None) -> Tag:
    clean = await TAGS.claim_name(ctx, name)  # the name's 400 and 409 before the colour's
    if color is None:
        count = await ctx.session.scalar(
            select(func.count()).where(Tag.workspace_id == ctx.workspace_id)
        )
        chosen = PALETTE[int(count or 0) % len(PALETTE)]
    else:
        chosen = clean_color(color)
    return await TAGS.create(ctx, clean, color=chosen)


async def update_tag(ctx: Context, tag_id: str, changes: dict[str, Any]) -> Tag:
    tag = await get_tag(ctx, tag_id)
    if not changes:
        raise ApiError(400, "No updatable fields provided")
    if "name" in changes:
        await TAGS.rename(ctx, tag, changes["name"])
    if "color" in changes:
        tag.color = clean_color(changes["color"])
    TAGS.touch(tag)
    return tag


async def delete_tag(ctx: Context, tag_id: str) -> int:
    """Removes the tag from every contact; returns how many contacts carried it."""
    tag = await get_tag(ctx, tag_id)
    untagged = await memberships.drop_group(ctx, "tag", tag)  # contact.tag_removed each
    await TAGS.delete(ctx, tag)
    return untagged


async def contact_counts(ctx: Context, tag_ids: list[str]) -> dict[str, int]:
    if not tag_ids:
        return {}
    rows = await ctx.session.execute(
        select(ContactTag.tag_id, func.count())
        .where(ContactTag.workspace_id == ctx.workspace_id, ContactTag.tag_id.in_(tag_ids))
        .group_by(ContactTag.tag_id)
    )
    return {tag_id: int(count) for tag_id, count in rows.all()}


async def list_tags(ctx: Context, page: PageParams, q: str | None) -> tuple[list[Tag], int]:
    return await TAGS.page(ctx, page, q=q)


def as_dict(tag: Tag, contact_count: int) -> dict[str, Any]:
    return {
        "id": tag.id,
        "name": tag.name,
        "color": tag.color,
        "contact_count": contact_count,
        "created_at": tag.created_at,
        "updated_at": tag.updated_at,
    }


# ---------------------------------------------------------------- tags on one contact


async def attach(
    ctx: Context, contact_id: str, tag_id: Any, *, loaded: tuple[Contact, Tag] | None = None
) -> ContactTag:
    """`loaded`: the contact and tag, already read in this unit of work (an automation
    batch)."""
    if tag_id is None or tag_id == "":
        raise ApiError(400, "tag_id is required")
    if not isinstance(tag_id, str):
        raise ApiError(400, "tag_id must be a string")
    if loaded is not None:
        contact, tag = loaded
    else:
        contact = await contacts.get_contact(ctx, contact_id)
        tag = await get_tag(ctx, tag_id)
    now = utcnow()
    inserted = await ctx.session.scalar(
        insert_ignoring_conflicts(ctx.session, ContactTag)
        .values(contact_id=contact.id, tag_id=tag.id, workspace_id=ctx.workspace_id, created_at=now)
        .returning(ContactTag.contact_id)
    )
    if inserted is None:  # already there (perhaps added by a concurrent request)
        raise ApiError(409, "Contact already has this tag")
    link = ContactTag(
        contact_id=contact.id, tag_id=tag.id, workspace_id=ctx.workspace_id, created_at=now
    )
    await _tagged(ctx, tag, [contact])
    return link


async def _tagged(ctx: Context, tag: Tag, added: list[Contact]) -> None:
    """What follows new tags: each its `contact.tag_added` event, and the tag's
    automations enrol the contacts in one go."""
    for contact in added:
        await events.emit_contact_event(
            ctx,
            "contact.tag_added",
            contact,
            extra={"tag": {"id": tag.id, "name": tag.name}},
            tag_id=tag.id,
        )
    if added:
        await automations.enrol(ctx, "tag_added", [c.id for c in added], tag_id=tag.id)


async def attach_many(ctx: Context, tag: Tag, tagged: list[Contact]) -> None:
    """`attach` for many contacts read in this unit of work (an automation batch's add_tag
    step): one INSERT; a contact that has the tag already is left as it is; each new pair
    has its `contact.tag_added` event, and the tag's automations enrol them in one go."""
    if not tagged:
        return
    now = utcnow()
    inserted = set(
        (
            await ctx.session.scalars(
                insert_ignoring_conflicts(ctx.session, ContactTag)
                .values(
                    [
                        {
                            "contact_id": contact.id,
                            "tag_id": tag.id,
                            "workspace_id": ctx.workspace_id,
                            "created_at": now,
                        }
                        for contact in {c.id: c for c in tagged}.values()
                    ]
                )
                .returning(ContactTag.contact_id)
            )
        ).all()
    )
    await _tagged(ctx, tag, [contact for contact in tagged if contact.id in inserted])


async def detach(ctx: Context, contact_id: str, tag_id: str) -> None:
    contact = await contacts.get_contact(ctx, contact_id)
    tag = await get_tag(ctx, tag_id)
    removed = await ctx.session.scalar(
        delete(ContactTag)
        .where(ContactTag.contact_id == contact.id, ContactTag.tag_id == tag.id)
        .returning(ContactTag.contact_id)
    )
    if removed is None:  # never there, or removed by a concurrent request
        raise ApiError(404, "This tag is not associated with the contact")
    await events.emit_contact_event(
        ctx,
        "contact.tag_removed",
        contact,
        extra={"tag": {"id": tag.id, "name": tag.name}},
        tag_id=tag.id,
    )


async def tags_of_contact(ctx: Context, contact_id: str) -> list[dict[str, Any]]:
    contact = await contacts.get_contact(ctx, contact_id)
    return await contacts.contact_tags(ctx, contact.id)
