"""Which contacts a list query, a bulk filter or an export means: one filter, three users.

A filter naming a `segment` is resolved before use (`segments.service.narrow`): the segment's
rule, compiled, rides along as `segment_where`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, exists, select

from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.text import contains_pattern
from mailroom.models import CONTACT_STATUSES, Contact, ContactTag, ListMember

SORTS = ("created", "name", "email", "status")
FILTER_KEYS = ("q", "status", "tag", "list", "source", "from", "to", "segment")


@dataclass(frozen=True)
class ContactFilter:
    q: str | None = None
    status: str | None = None
    tag: str | None = None
    list_id: str | None = None
    source: str | None = None
    date_from: date | None = None
    date_to: date | None = None
    segment: str | None = None  # a segment id
    # The segment's rule as a condition on contacts (segments.service.narrow); not compared.
    segment_where: Any = field(default=None, compare=False)


def _text(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ApiError(400, f"{name} must be a string")
    return value.strip() or None


def _day(value: Any, name: str) -> date | None:
    """`YYYY-MM-DD`; any other string (an impossible date, an empty one) is ignored."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ApiError(400, f"{name} must be a string")
    try:
        return date.fromisoformat(value.strip()) if len(value.strip()) == 10 else None
    except ValueError:
        return None


def parse_filter(raw: Mapping[str, Any]) -> ContactFilter:
    status = _text(raw.get("status"), "status")
    # Exactly one of the statuses when given, as the published enum says: an empty or padded
    # value is refused, not read as "any status".
    if raw.get("status") is not None and raw["status"] not in CONTACT_STATUSES:
        raise ApiError(400, f"status must be one of {', '.join(CONTACT_STATUSES)}")
    return ContactFilter(
        q=_text(raw.get("q"), "q"),
        status=status,
        tag=_text(raw.get("tag"), "tag"),
        list_id=_text(raw.get("list"), "list"),
        source=_text(raw.get("source"), "source"),
        date_from=_day(raw.get("from"), "from"),
        date_to=_day(raw.get("to"), "to"),
        segment=_text(raw.get("segment"), "segment"),
    )


def with_segment(f: ContactFilter, matching: ColumnElement[bool]) -> ContactFilter:
    """`f` with its segment resolved to `matching`. Its tag and list join that condition:
    contacts.service counts a lone tag or list filter straight from the membership table,
    which would leave the segment out of the total."""
    extra: list[ColumnElement[bool]] = []
    if f.tag:
        extra.append(
            Contact.id.in_(select(ContactTag.contact_id).where(ContactTag.tag_id == f.tag))
        )
    if f.list_id:
        extra.append(
            Contact.id.in_(select(ListMember.contact_id).where(ListMember.list_id == f.list_id))
        )
    return replace(f, tag=None, list_id=None, segment_where=and_(matching, *extra))


def conditions(
    ctx: Context, f: ContactFilter, *, for_count: bool = False
) -> list[ColumnElement[bool]]:
    """The WHERE of a filter. Memberships are written for the query's job: a page walks
    contacts newest first and probes membership (EXISTS); a count starts from the membership
    index (IN), which SQLite would otherwise probe once per contact."""
    clauses: list[ColumnElement[bool]] = [Contact.workspace_id == ctx.workspace_id]
    if f.status:
        clauses.append(Contact.status == f.status)
    elif not f.segment:  # a segment's own rule says which statuses it takes
        clauses.append(Contact.status != "archived")
    if f.segment:
        if f.segment_where is None:
            raise RuntimeError("resolve the filter's segment first (segments.service.narrow)")
        clauses.append(f.segment_where)
    if f.q:
        # One casefolded column (see models.contacts.search_text); on PostgreSQL its trigram
        # index serves the LIKE.
        clauses.append(Contact.search_text.like(contains_pattern(f.q), escape="\\"))
    if f.tag:
        clauses.append(
            Contact.id.in_(select(ContactTag.contact_id).where(ContactTag.tag_id == f.tag))
            if for_count
            else exists().where(ContactTag.contact_id == Contact.id, ContactTag.tag_id == f.tag)
        )
    if f.list_id:
        clauses.append(
            Contact.id.in_(select(ListMember.contact_id).where(ListMember.list_id == f.list_id))
            if for_count
            else exists().where(
                ListMember.contact_id == Contact.id, ListMember.list_id == f.list_id
            )
        )
    if f.source:
        clauses.append(Contact.source == f.source)
    if f.date_from:
        start = datetime.combine(f.date_from, datetime.min.time(), tzinfo=UTC)
        clauses.append(Contact.created_at >= start)
    if f.date_to:
        end = datetime.combine(f.date_to + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
        clauses.append(Contact.created_at < end)
    return clauses


def order_by(sort: str | None, direction: str | None) -> list[Any]:
    # Absent means the default; an empty value is refused, as the published enums say.
    if sort is not None and sort not in SORTS:
        raise ApiError(400, f"sort must be one of {', '.join(SORTS)}")
    if direction not in (None, "asc", "desc"):
        raise ApiError(400, "dir must be one of asc, desc")
    sort = sort or "created"
    descending = (direction or ("desc" if sort == "created" else "asc")) == "desc"
    ties = [Contact.created_at.desc(), Contact.id.desc()]
    if sort == "created":
        return ties if descending else [Contact.created_at.asc(), Contact.id.asc()]
    columns = {
        "name": [Contact.first_name, Contact.last_name],
        "email": [Contact.email],
        "status": [Contact.status],
    }[sort]
    return [c.desc() if descending else c.asc() for c in columns] + ties


def counts_suffice(f: ContactFilter) -> bool:
    """True when the total is a per-status count (no filter but status)."""
    return not (f.q or f.tag or f.list_id or f.source or f.date_from or f.date_to or f.segment)


def select_ids(ctx: Context, f: ContactFilter) -> Select[Any]:
    return select(Contact.id).where(and_(*conditions(ctx, f)))
