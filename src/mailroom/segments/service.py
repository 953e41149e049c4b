"""Segments: a named rule over contacts, evaluated live at every use (no stored membership,
no rebuild job).

Everything that selects contacts by segment goes through `condition()` / `matching_ids()`:
the contact list and export (`?segment=`), the bulk actions' `filter.segment`, previews, and
campaign audiences (an INSERT ... SELECT over `matching_ids`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Select, and_, func, select

from mailroom.contacts import service as contacts
from mailroom.contacts.query import ContactFilter, with_segment
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.custom_fields import service as custom_fields
from mailroom.models import Contact, MailingList, Segment, Tag
from mailroom.named import Named, known_ids
from mailroom.segments import rules
from mailroom.segments.compile import Compiler

MAX_NAME = 100
PREVIEW_SIZE = 10
# Newest first, as the table's (workspace_id, created_at) index reads them.
SEGMENTS = Named(Segment, "segment", MAX_NAME, newest_first=True)


async def rule_registry(ctx: Context) -> rules.Registry:
    fields = await custom_fields.registry(ctx)
    return {key: (f.type, f.options) for key, f in fields.items()}


async def check_rules(ctx: Context, raw: Any) -> rules.Parsed:
    """A rule as sent, checked: 400 naming the place of the first problem, and for tag and
    list ids that are not this workspace's."""
    if raw is None:
        raise ApiError(400, "rules is required")
    try:
        parsed = rules.parse(raw, await rule_registry(ctx))
    except rules.RuleError as error:
        raise ApiError(400, str(error)) from None
    await known_ids(ctx, Tag, parsed.tag_ids, "Tag not found")
    await known_ids(ctx, MailingList, parsed.list_ids, "List not found")
    return parsed


def _condition(ctx: Context, parsed: rules.Parsed) -> ColumnElement[bool]:
    compiler = Compiler(ctx.dialect, ctx.workspace_id, utcnow())
    return and_(Contact.workspace_id == ctx.workspace_id, compiler.rule(parsed.tree))


# ---------------------------------------------------------------- CRUD


async def get_segment(ctx: Context, segment_id: Any) -> Segment:
    return await SEGMENTS.get(ctx, segment_id)


async def list_segments(ctx: Context, page: PageParams, q: str | None) -> tuple[list[Segment], int]:
    return await SEGMENTS.page(ctx, page, q=q)


async def create_segment(ctx: Context, body: dict[str, Any]) -> Segment:
    name = await SEGMENTS.claim_name(ctx, body.get("name"))
    parsed = await check_rules(ctx, body.get("rules"))
    return await SEGMENTS.create(ctx, name, rules=rules.for_storage(parsed))


async def update_segment(ctx: Context, segment_id: str, body: dict[str, Any]) -> Segment:
    segment = await get_segment(ctx, segment_id)
    if not body:
        raise ApiError(400, "No updatable fields provided")
    if "name" in body:
        await SEGMENTS.rename(ctx, segment, body["name"])
    if "rules" in body:
        segment.rules = rules.for_storage(await check_rules(ctx, body["rules"]))
    SEGMENTS.touch(segment)
    await SEGMENTS.flush(ctx)
    return segment


async def delete_segment(ctx: Context, segment_id: str) -> None:
    await SEGMENTS.delete(ctx, await get_segment(ctx, segment_id))


def as_dict(segment: Segment) -> dict[str, Any]:
    shown, _registered = rules.stored(segment.rules)
    return {
        "id": segment.id,
        "name": segment.name,
        "rules": shown,
        "created_at": segment.created_at,
        "updated_at": segment.updated_at,
    }


# ---------------------------------------------------------------- selecting contacts


async def segment_condition(ctx: Context, segment: Segment) -> ColumnElement[bool]:
    """The contacts of this workspace `segment` matches now, as one condition on `contacts`.
    A saved rule is read leniently: a custom-field condition its field no longer supports
    (deleted, or retyped) matches no contact."""
    return await saved_rule_condition(ctx, segment.rules)


async def saved_rule_condition(ctx: Context, stored: dict[str, Any]) -> ColumnElement[bool]:
    """A rule as stored (`rules.for_storage`) as one condition on `contacts`, read leniently
    (segments, automation conditions)."""
    shown, registered = rules.stored(stored)
    parsed = rules.parse(shown, await rule_registry(ctx), saved_registered=registered, lenient=True)
    return _condition(ctx, parsed)


async def condition(ctx: Context, segment_id: Any) -> ColumnElement[bool]:
    """As `segment_condition`, by id (404 `Segment not found`)."""
    return await segment_condition(ctx, await get_segment(ctx, segment_id))


async def matching_ids(ctx: Context, segment_id: Any) -> Select[Any]:
    """`SELECT contacts.id` of the contacts the segment matches, every status included (a
    campaign keeps the subscribed ones): usable inside INSERT ... SELECT."""
    return select(Contact.id).where(await condition(ctx, segment_id))


async def narrow(ctx: Context, contact_filter: ContactFilter) -> ContactFilter:
    """A contact filter with its `segment` resolved (404 `Segment not found`); unchanged
    without one."""
    if contact_filter.segment is None:
        return contact_filter
    return with_segment(contact_filter, await condition(ctx, contact_filter.segment))


# ---------------------------------------------------------------- previews


async def preview(ctx: Context, where: ColumnElement[bool]) -> dict[str, Any]:
    """How many contacts match, and the first ten, newest first (as the contact list)."""
    count = int(
        await ctx.session.scalar(select(func.count()).select_from(Contact).where(where)) or 0
    )
    shown: list[dict[str, Any]] = []
    if count:
        rows = await ctx.session.scalars(
            select(Contact)
            .where(where)
            .order_by(Contact.created_at.desc(), Contact.id.desc())
            .limit(PREVIEW_SIZE)
        )
        fields = await custom_fields.registry(ctx)
        shown = [contacts.to_dict(c, fields) for c in rows.all()]
    return {"count": count, "contacts": shown}


async def preview_rules(ctx: Context, raw: Any) -> dict[str, Any]:
    """POST /segments/preview: a rule not saved (checked as on save)."""
    return await preview(ctx, _condition(ctx, await check_rules(ctx, raw)))


async def preview_segment(ctx: Context, segment_id: str) -> dict[str, Any]:
    return await preview(ctx, await condition(ctx, segment_id))
