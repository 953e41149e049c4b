"""A campaign's audience: checked when saved, and compiled into the one condition on `contacts`
the snapshot selects with (union of the includes minus the excludes; each contact once; only
subscribed and not suppressed; on the Free plan only confirmed list members)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, and_, exists, false, not_, or_, select

from mailroom.campaigns.schemas import AUDIENCE_KEYS, MAX_AUDIENCE_IDS
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.models import Contact, ContactTag, ListMember, MailingList, Segment, Suppression, Tag
from mailroom.segments import service as segments

_OWNERS: dict[str, Any] = {"list": MailingList, "segment": Segment, "tag": Tag}


def empty() -> dict[str, list[str]]:
    return {key: [] for key in AUDIENCE_KEYS}


def _kind(key: str) -> str:
    return key.removeprefix("exclude_").removesuffix("_ids")


async def check(ctx: Context, raw: Any) -> dict[str, list[str]]:
    """The audience as stored: every key present, ids of this workspace (400 naming the ones
    that are not)."""
    if raw is None:
        return empty()
    if not isinstance(raw, dict):
        raise ApiError(400, "audience must be an object")
    unknown = sorted(k for k in raw if k not in AUDIENCE_KEYS)
    if unknown:
        raise ApiError(
            400,
            f"Unknown audience key(s): {', '.join(unknown)}. Allowed: {', '.join(AUDIENCE_KEYS)}",
        )
    audience = empty()
    for key, ids in raw.items():
        if ids is None:
            continue
        if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
            raise ApiError(400, f"audience.{key} must be an array of ids")
        ids = list(dict.fromkeys(ids))
        if len(ids) > MAX_AUDIENCE_IDS:
            raise ApiError(400, f"audience.{key} may have at most {MAX_AUDIENCE_IDS} ids")
        model = _OWNERS[_kind(key)]
        found = set(
            (
                await ctx.session.scalars(
                    select(model.id).where(
                        model.workspace_id == ctx.workspace_id, model.id.in_(ids)
                    )
                )
            ).all()
        )
        missing = [i for i in ids if i not in found]
        if missing:
            raise ApiError(
                400,
                f"audience.{key} has ids that are not in this workspace: {', '.join(missing[:10])}",
            )
        audience[key] = ids
    return audience


def is_empty(audience: dict[str, Any]) -> bool:
    return not any(audience.get(k) for k in ("list_ids", "segment_ids", "tag_ids"))


async def _any_of(ctx: Context, audience: dict[str, Any], prefix: str) -> ColumnElement[bool]:
    """Contacts on any of the lists, in any of the segments, carrying any of the tags."""
    confirmed_only = ctx.principal.plan.double_opt_in_everywhere
    parts: list[ColumnElement[bool]] = []
    list_ids = audience.get(f"{prefix}list_ids") or []
    if list_ids:
        member = [ListMember.contact_id == Contact.id, ListMember.list_id.in_(list_ids)]
        if confirmed_only and not prefix:
            member.append(ListMember.status == "confirmed")
        parts.append(exists().where(*member))
    tag_ids = audience.get(f"{prefix}tag_ids") or []
    if tag_ids:
        parts.append(
            exists().where(ContactTag.contact_id == Contact.id, ContactTag.tag_id.in_(tag_ids))
        )
    for segment_id in audience.get(f"{prefix}segment_ids") or []:
        parts.append(await segments.condition(ctx, segment_id))
    return or_(*parts) if parts else false()


async def condition(ctx: Context, audience: dict[str, Any]) -> ColumnElement[bool]:
    """Who a send to `audience` reaches now: one condition on `contacts`."""
    reachable = [
        Contact.workspace_id == ctx.workspace_id,
        Contact.status == "subscribed",
        ~exists().where(
            Suppression.workspace_id == Contact.workspace_id,
            Suppression.email_hash == Contact.email_hash,
        ),
        await _any_of(ctx, audience, ""),
    ]
    if ctx.principal.plan.double_opt_in_everywhere:
        # Free plan: only people who confirmed a list of this workspace can be mailed.
        reachable.append(
            exists().where(ListMember.contact_id == Contact.id, ListMember.status == "confirmed")
        )
    excluded = await _any_of(ctx, audience, "exclude_")
    return and_(*reachable, not_(excluded))
