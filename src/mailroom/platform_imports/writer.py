"""Writing a prepared platform export into a workspace: `set_up` once, then `write_chunk` for
each slice of contacts, each in a transaction of its own (runner.py commits each with the job's
progress, so a restarted job resumes at the first chunk not yet written).

The rules are the CSV import's (contacts/importer.py), through its set-based writes
(contacts/import_writes.py): an address suppressed here imports as unsubscribed at least; an
existing contact keeps its status unless the platform says it left (a subscribed contact then
takes the platform's unsubscribed / bounced / complained, never the reverse) and keeps its names
unless they are empty; the platform's fields are merged in (the platform wins), its tags added;
addresses the platform says left go on the suppression list (a stronger reason replaces a
weaker, never the reverse). Only the contacts that end up subscribed join lists: a platform
membership keeps its confirmed / unconfirmed state; with `list_id`, every such contact joins
that list, confirmed unless all its platform memberships were unconfirmed. Nothing here
enrols automations or sends a confirmation email. `dry_run` computes the same counts with
reads alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from sqlalchemy import select

from mailroom.contacts import import_writes as writes
from mailroom.contacts import service as contacts
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.ids import new_id
from mailroom.core.text import fold
from mailroom.custom_fields import service as custom_fields
from mailroom.custom_fields import values as cf
from mailroom.db import AMONG, among, chunks
from mailroom.ecommerce import customers
from mailroom.lists import service as lists_service
from mailroom.models import Contact, ListMember, MailingList, Suppression, Tag, search_text
from mailroom.platform_imports.entries import CONSENT_FIELDS, Incoming, Prepared
from mailroom.tags import service as tags_service

MAX_DISTINCT_TAGS = 200  # as the CSV import
LEFT = ("unsubscribed", "bounced", "complained")

TAGS_CUT = "More than 200 distinct tags: only the first 200 were imported"
FIELD_TYPE_KEPT = (
    "Field {key} already exists as {type}: its values were kept only where they fit that type"
)
FIELDS_FULL = "Custom field limit reached ({limit}): fields {keys} were left out"
NO_LISTS = (
    "The export names no lists: its contacts were put on none (give list_id to put them on one)"
)
NAME_REFUSED = '{what} "{name}" was not made ({why}): its contacts were imported without it'
VALUES_DROPPED = "{count} value(s) of field {key} did not fit its type and were left out"


def totals() -> dict[str, Any]:
    """A job's running counts (runner.py keeps them in the job's state between chunks)."""
    return {
        "created": 0,
        "updated": 0,
        "unchanged": 0,
        "suppressed": {"unsubscribed": 0, "bounced": 0, "complained": 0},
        "tags_created": 0,
        "fields_created": [],
        "lists_created": 0,
        "memberships": {"confirmed": 0, "unconfirmed": 0},
        "dropped_values": {},
        "warnings": [],
    }


# --- set up: fields, tags, lists, the contact cap ----------------------------------------


async def set_up(
    ctx: Context, ready: Prepared, list_id: str | None, dry_run: bool, into: dict[str, Any]
) -> dict[str, Any]:
    """Fields, tags and lists the export needs (created unless `dry_run`; counted in `into`),
    and the contact cap checked for the whole import (403, nothing written). Returns what the
    chunks need: `{list_id}` or `{lists: {name: id}}` (a dry run's missing lists map to None),
    and `tags`: the folded tag names kept."""
    if list_id:
        await lists_service.get_list(ctx, list_id)  # 404 List not found
    await _check_cap(ctx, ready)
    planned = await _fields(ctx, ready, dry_run, into)
    tag_names = await _tags(ctx, ready, dry_run, into)
    state: dict[str, Any] = {"tags": tag_names, "planned_fields": planned}
    if list_id:
        state["list_id"] = list_id
    else:
        state["lists"] = await _lists(ctx, ready, dry_run, into)
        if not ready.lists:
            into["warnings"].append(NO_LISTS)
    return state


async def _check_cap(ctx: Context, ready: Prepared) -> None:
    """403 when the contacts this import would make subscribed pass the plan's cap."""
    subscribed = [e for e in ready.entries if e.row.status == "subscribed"]
    if not subscribed:
        return
    present: set[str] = set()
    emails = [e.row.email for e in subscribed]
    for chunk in chunks(ctx.session, emails):
        present.update(
            (
                await ctx.session.scalars(
                    select(Contact.email).where(
                        Contact.workspace_id == ctx.workspace_id, among(ctx.session, Contact.email)
                    ),
                    {AMONG: chunk},
                )
            ).all()
        )
    blocked: set[str] = set()
    hashes = [e.hash for e in subscribed if e.row.email not in present]
    for chunk in chunks(ctx.session, hashes):
        blocked.update(
            (
                await ctx.session.scalars(
                    select(Suppression.email_hash).where(
                        Suppression.workspace_id == ctx.workspace_id,
                        among(ctx.session, Suppression.email_hash),
                    ),
                    {AMONG: chunk},
                )
            ).all()
        )
    await contacts.ensure_capacity(ctx, len(hashes) - len(blocked))


async def _fields(
    ctx: Context, ready: Prepared, dry_run: bool, into: dict[str, Any]
) -> dict[str, str]:
    """Register the platform's fields (and the consent fields) the registry lacks, within its
    limit; returns a dry run's fields still to make, by key, with their types."""
    planned: dict[str, str] = {}
    registry = await custom_fields.registry(ctx)
    if not dry_run:
        await custom_fields.serialise_registry(ctx)
        registry = await custom_fields.registry(ctx)
    room = custom_fields.MAX_FIELDS - len(registry)
    left_out: list[str] = []
    wanted = [(spec.key, spec.label, spec.type) for spec in ready.fields]
    used = {k for e in ready.entries for k in e.row.custom if k in CONSENT_FIELDS}
    # Consent lands where the CSV import puts it: text fields, not counted as the platform's.
    wanted += [(key, "", "text") for key in CONSENT_FIELDS if key in used]
    for key, label, field_type in wanted:
        current = registry.get(key)
        if current is not None:
            if current.type != field_type and field_type != "text":
                into["warnings"].append(FIELD_TYPE_KEPT.format(key=key, type=current.type))
            continue
        if room <= 0:
            left_out.append(key)
            continue
        room -= 1
        if key not in CONSENT_FIELDS:
            into["fields_created"].append({"key": key, "type": field_type})
        if dry_run:
            planned[key] = field_type
            continue
        label = (label or cf.default_label(key))[: custom_fields.MAX_LABEL]
        try:
            registry[key] = await custom_fields.create_field(
                ctx, key=key, label=label, field_type=field_type
            )
        except ApiError as exc:
            if exc.status != 409 or field_type == "text":
                raise
            # Contacts already hold values of another kind under this key: text keeps them.
            registry[key] = await custom_fields.create_field(
                ctx, key=key, label=label, field_type="text"
            )
            into["fields_created"][-1]["type"] = "text"
    if left_out:
        limit = custom_fields.MAX_FIELDS
        into["warnings"].append(FIELDS_FULL.format(limit=limit, keys=", ".join(left_out)))
    return planned


async def _tags(ctx: Context, ready: Prepared, dry_run: bool, into: dict[str, Any]) -> list[str]:
    names: dict[str, str] = {}
    for entry in ready.entries:
        for name in entry.row.tags:
            names.setdefault(fold(name), name)
    if len(names) > MAX_DISTINCT_TAGS:
        into["warnings"].append(TAGS_CUT)
        names = dict(list(names.items())[:MAX_DISTINCT_TAGS])
    present = (
        set(
            (
                await ctx.session.scalars(
                    select(Tag.name_key).where(
                        Tag.workspace_id == ctx.workspace_id, Tag.name_key.in_(list(names))
                    )
                )
            ).all()
        )
        if names
        else set()
    )
    for key, name in list(names.items()):
        if key in present:
            continue
        if not dry_run:
            try:
                async with ctx.session.begin_nested():  # a refusal undoes only this tag
                    await tags_service.create_tag(ctx, name)
            except ApiError as exc:
                if exc.status != 409:  # 409: another request made it meanwhile
                    into["warnings"].append(
                        NAME_REFUSED.format(what="Tag", name=name, why=exc.message)
                    )
                    del names[key]
                continue
        into["tags_created"] += 1
    return list(names)


async def _lists(
    ctx: Context, ready: Prepared, dry_run: bool, into: dict[str, Any]
) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    planned: dict[str, str] = {}  # a dry run's lists to make, by folded name
    for name in ready.lists:
        clean = name[: lists_service.MAX_NAME].strip() or "Imported"
        existing = await lists_service.LISTS.find_by_name(ctx, clean)
        if existing is not None:
            found[name] = existing.id
            continue
        if dry_run:
            if fold(clean) not in planned:
                planned[fold(clean)] = name
                into["lists_created"] += 1
            found[name] = None
            continue
        try:
            async with ctx.session.begin_nested():  # a refusal undoes only this list
                created = await lists_service.create_list(ctx, {"name": clean})
        except ApiError as exc:
            into["warnings"].append(NAME_REFUSED.format(what="List", name=clean, why=exc.message))
            continue
        found[name] = created.id
        into["lists_created"] += 1
    return found


# --- a chunk of contacts ------------------------------------------------------------------


async def write_chunk(
    ctx: Context,
    entries: list[Incoming],
    state: dict[str, Any],
    dry_run: bool,
    into: dict[str, Any],
    now: datetime,
) -> None:
    """Write (or, `dry_run`, count) one slice of contacts; counts are added to `into`."""
    found = {e.row.email: e.row for e in entries}
    by_email = {e.row.email: e for e in entries}
    hashes = {e.row.email: e.hash for e in entries}
    suppressed = await writes.suppression_rows(ctx, list(hashes.values()))
    existing = await writes.existing_contacts(ctx, list(found))
    await _type_values(ctx, found, state.get("planned_fields", {}), into)
    for email, row in found.items():
        if hashes[email] in suppressed and row.status == "subscribed" and email not in existing:
            row.status = "unsubscribed"  # suppressed here stays so, whatever the platform says
    new_emails = [e for e in found if e not in existing]
    _count_suppressions(found, hashes, suppressed, into)
    ids: dict[str, str] = {email: current.id for email, current in existing.items()}
    for email in new_emails:
        ids[email] = new_id()
    escalated: dict[str, list[str]] = {status: [] for status in LEFT}
    staged = list(_changes(found, existing, escalated, ids, now))
    refreshed = [change["contact_id"] for change in staged if change.pop("refreshed")]
    tag_ids = await _tag_ids(ctx, state, dry_run)
    membership = await _memberships(ctx, state, by_email, existing, escalated, ids, dry_run)
    changed = set(refreshed) | {cid for moved in escalated.values() for cid in moved}
    if dry_run:
        pairs = await writes.missing_tag_pairs(ctx, found, ids, tag_ids, set(existing))
        changed |= {contact_id for contact_id, _ in pairs}
        changed |= {contact_id for _, contact_id, _ in membership}
        _count(into, new_emails, existing, changed, membership)
        return
    await contacts.ensure_capacity(ctx, sum(found[e].status == "subscribed" for e in new_emails))
    async with contacts.counting_once(ctx):
        await writes.insert(ctx, Contact, _new_rows(ctx, by_email, new_emails, ids, now))
        await customers.link(ctx, [hashes[e] for e in new_emails])
        run = new_id()
        await writes.apply_staged(ctx, run, ({"run_id": run, **change} for change in staged))
        tagged = await writes.attach_tags(ctx, found, ids, tag_ids, set(existing))
        await writes.suppress_file_statuses(ctx, found, hashes, suppressed, now)
        joined = await _join(ctx, membership, now)
    changed |= {cid for contact_ids in tagged.values() for cid in contact_ids}
    changed |= {contact_id for _, contact_id, _ in membership}
    _count(into, new_emails, existing, changed, membership)
    await _emit(ctx, [ids[e] for e in new_emails], refreshed, escalated, tagged, joined)


def _count(
    into: dict[str, Any],
    new_emails: list[str],
    existing: dict[str, writes.Existing],
    changed: set[str],
    membership: list[tuple[str, str, str]],
) -> None:
    updated = sum(1 for current in existing.values() if current.id in changed)
    into["created"] += len(new_emails)
    into["updated"] += updated
    into["unchanged"] += len(existing) - updated
    for _, _, state in membership:
        into["memberships"][state] += 1


def _count_suppressions(
    found: dict[str, Any],
    hashes: dict[str, str],
    current: dict[str, Suppression],
    into: dict[str, Any],
) -> None:
    """Addresses added to the suppression list, by reason (a stronger reason replacing a weaker
    one changes an entry, it adds none)."""
    for email, row in found.items():
        if row.status in LEFT and hashes[email] not in current:
            into["suppressed"][row.status] += 1


async def _type_values(
    ctx: Context, found: dict[str, Any], planned: dict[str, str], into: dict[str, Any]
) -> None:
    """Values typed by the registry as it stands (a value that does not fit is left out and
    counted; a dry run also types by the fields it would make); keys the registry does not
    know (past the field limit) are left out."""
    registry = await custom_fields.registry(ctx)
    typed: dict[str, tuple[str, Any]] = {key: (kind, None) for key, kind in planned.items()}
    typed.update({key: (d.type, d.options) for key, d in registry.items()})
    dropped: dict[str, int] = into["dropped_values"]

    def coerce() -> None:  # per-value CPU: off the loop
        for row in found.values():
            for key in list(row.custom):
                kind = typed.get(key)
                value = cf.coerce(kind[0], kind[1], row.custom[key]) if kind else None
                if value is None or value is cf.CLEAR:
                    del row.custom[key]
                    if kind is not None:
                        dropped[key] = dropped.get(key, 0) + 1
                else:
                    row.custom[key] = value

    await asyncio.to_thread(coerce)


def _changes(
    found: dict[str, Any],
    existing: dict[str, writes.Existing],
    escalated: dict[str, list[str]],
    ids: dict[str, str],
    now: datetime,
) -> Iterator[dict[str, Any]]:
    """Staged updates of existing contacts whose names (empty ones filled), fields or status
    change; `refreshed` says whether anything but the status did."""
    for email, current in existing.items():
        row = found[email]
        status = current.status
        if current.status == "subscribed" and row.status in LEFT:
            status = row.status
            escalated[status].append(current.id)
        first = current.first_name or row.first_name
        last = current.last_name or row.last_name
        stored = current.custom_fields()
        fields = {**stored, **row.custom}
        refreshed = (first, last, fields) != (current.first_name, current.last_name, stored)
        if not refreshed and status == current.status:
            continue
        yield {
            "contact_id": ids[email],
            "first_name": first,
            "last_name": last,
            "source": current.source,
            "status": status,
            "unsubscribed_at": now if status != current.status else None,
            "custom_fields": fields,
            "search_text": search_text(email, first, last),
            "refreshed": refreshed,
        }


def _new_rows(
    ctx: Context,
    by_email: dict[str, Incoming],
    new_emails: list[str],
    ids: dict[str, str],
    now: datetime,
) -> Iterator[dict[str, Any]]:
    for email in new_emails:
        entry = by_email[email]
        row = entry.row
        archived = row.status == "archived"
        yield {
            "id": ids[email],
            "workspace_id": ctx.workspace_id,
            "email": email,
            "email_hash": entry.hash,
            "first_name": row.first_name,
            "last_name": row.last_name,
            "status": row.status,
            # Disabled on the platform, not unsubscribed: restoring makes them subscribed.
            "previous_status": "subscribed" if archived else None,
            "custom_fields": row.custom,
            "source": row.source,
            "language": entry.language,
            "search_text": search_text(email, row.first_name, row.last_name),
            "subscribed_at": row.subscribed_at or now,
            "unsubscribed_at": now if row.status in LEFT else None,
            "created_at": now,
            "updated_at": now,
        }


async def _tag_ids(ctx: Context, state: dict[str, Any], dry_run: bool) -> dict[str, str]:
    """Folded name -> tag id for the import's tags as they are now (a tag deleted since the
    set-up is simply not attached); a dry run's tags still to make get a stand-in id."""
    keys: list[str] = state["tags"]
    if not keys:
        return {}
    rows = await ctx.session.execute(
        select(Tag.name_key, Tag.id).where(
            Tag.workspace_id == ctx.workspace_id, Tag.name_key.in_(keys)
        )
    )
    found = {key: tag_id for key, tag_id in rows.all()}
    if dry_run:
        found.update({key: f"new:{key}" for key in keys if key not in found})
    return found


async def _memberships(
    ctx: Context,
    state: dict[str, Any],
    by_email: dict[str, Incoming],
    existing: dict[str, writes.Existing],
    escalated: dict[str, list[str]],
    ids: dict[str, str],
    dry_run: bool,
) -> list[tuple[str, str, str]]:
    """(list id, contact id, confirmed | unconfirmed) to add: for contacts subscribed after
    this chunk, memberships they do not have yet."""
    left = {cid for moved in escalated.values() for cid in moved}
    target: str | None = state.get("list_id")
    list_ids: dict[str, str | None] = state.get("lists", {})
    wanted: list[tuple[str, str, str]] = []
    for email, entry in by_email.items():
        current = existing.get(email)
        status = current.status if current else entry.row.status
        if status != "subscribed" or ids[email] in left:
            continue
        if target is not None:
            confirmed = not entry.lists or any(s == "confirmed" for _, s in entry.lists)
            wanted.append((target, ids[email], "confirmed" if confirmed else "unconfirmed"))
            continue
        for name, membership in entry.lists:
            list_id = list_ids.get(name) or (f"new:{name}" if dry_run else None)
            if list_id is not None:
                wanted.append((list_id, ids[email], membership))
    members_of = [ids[e] for e in existing if e in by_email]
    present: set[tuple[str, str]] = set()
    for chunk in chunks(ctx.session, members_of):
        rows = await ctx.session.execute(
            select(ListMember.list_id, ListMember.contact_id).where(
                ListMember.workspace_id == ctx.workspace_id,
                among(ctx.session, ListMember.contact_id),
            ),
            {AMONG: chunk},
        )
        present.update((list_id, contact_id) for list_id, contact_id in rows.all())
    if not dry_run:
        live = (
            set(
                (
                    await ctx.session.scalars(
                        select(MailingList.id).where(
                            MailingList.workspace_id == ctx.workspace_id,
                            MailingList.id.in_({w[0] for w in wanted}),
                        )
                    )
                ).all()
            )
            if wanted
            else set()
        )
        wanted = [w for w in wanted if w[0] in live]  # a list deleted since the set-up
    return [w for w in dict.fromkeys(wanted) if (w[0], w[1]) not in present]


async def _join(
    ctx: Context, membership: list[tuple[str, str, str]], now: datetime
) -> dict[str, list[str]]:
    """Insert the memberships; returns, per list, the contacts that joined confirmed."""
    await writes.insert(
        ctx,
        ListMember,
        (
            {
                "list_id": list_id,
                "contact_id": contact_id,
                "workspace_id": ctx.workspace_id,
                "status": state,
                "created_at": now,
                "confirmed_at": now if state == "confirmed" else None,
            }
            for list_id, contact_id, state in membership
        ),
    )
    joined: dict[str, list[str]] = {}
    for list_id, contact_id, state in membership:
        if state == "confirmed":
            joined.setdefault(list_id, []).append(contact_id)
    return joined


async def _emit(
    ctx: Context,
    created: list[str],
    refreshed: list[str],
    escalated: dict[str, list[str]],
    tagged: dict[str, list[str]],
    joined: dict[str, list[str]],
) -> None:
    """Each change's catalog event, as the CSV import writes them."""
    await writes.emit(ctx, "contact.created", created)
    await writes.emit(ctx, "contact.updated", refreshed)
    for status, moved in escalated.items():
        await writes.emit(ctx, f"contact.{status}", moved)
    if tagged:
        names = dict(
            (
                await ctx.session.execute(
                    select(Tag.id, Tag.name).where(
                        Tag.workspace_id == ctx.workspace_id, Tag.id.in_(list(tagged))
                    )
                )
            ).all()
        )
        for tag_id, contact_ids in tagged.items():
            await writes.emit(
                ctx,
                "contact.tag_added",
                contact_ids,
                extra={"tag": {"id": tag_id, "name": names.get(tag_id, "")}},
                tag_id=tag_id,
            )
    if joined:
        names = dict(
            (
                await ctx.session.execute(
                    select(MailingList.id, MailingList.name).where(
                        MailingList.workspace_id == ctx.workspace_id,
                        MailingList.id.in_(list(joined)),
                    )
                )
            ).all()
        )
        for list_id, contact_ids in joined.items():
            await writes.emit(
                ctx,
                "contact.list_joined",
                contact_ids,
                extra={"list": {"id": list_id, "name": names.get(list_id, "")}},
                list_id=list_id,
            )
