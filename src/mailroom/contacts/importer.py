"""POST /contacts/import (and `mailroom import`): a CSV of up to 5 MB into contacts.

The file is read and merged in Python (import_rows), then written set-based in the request's
one transaction: COPY/executemany for new rows, a staging table and one UPDATE ... FROM for
existing ones, and events built by the database. The import is atomic: a failure anywhere
leaves nothing of the file behind.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import orjson
from sqlalchemy import select

from mailroom.automations import enrol as automations
from mailroom.contacts import domains
from mailroom.contacts import import_columns as columns
from mailroom.contacts import import_rows as rows_
from mailroom.contacts import import_writes as writes
from mailroom.contacts import service as contacts
from mailroom.contacts.bulk_ids import new_ids
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.emails import email_domain
from mailroom.core.errors import ApiError
from mailroom.core.ids import new_id
from mailroom.core.text import fold
from mailroom.custom_fields import service as custom_fields
from mailroom.custom_fields import values as cf
from mailroom.ecommerce import customers
from mailroom.lists import service as lists
from mailroom.models import (
    Contact,
    Tag,
    search_text,
)
from mailroom.tags import service as tags_service

log = logging.getLogger("mailroom.import")

MAX_BYTES = 5 * 1024 * 1024
TOO_LARGE = "File too large: CSV uploads are limited to 5 MB (about 50,000 rows)"
MAX_DISTINCT_TAGS = 200
NO_ROWS = rows_.NO_ROWS
TOO_MANY_ROWS = rows_.TOO_MANY_ROWS
Progress = Callable[[str, int, int], None]
# What a new contact's row is written with (previous_status and language stay NULL).
NEW_CONTACT_COLUMNS = (
    "id",
    "workspace_id",
    "email",
    "email_hash",
    "first_name",
    "last_name",
    "status",
    "custom_fields",
    "source",
    "search_text",
    "subscribed_at",
    "unsubscribed_at",
    "created_at",
    "updated_at",
)


def flag(fields: dict[str, str], name: str, default: bool) -> bool:
    raw = fields.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise ApiError(400, f"{name} must be true or false")


@dataclass(frozen=True)
class ImportOptions:
    default_status: str = "subscribed"
    source: str = "import"
    skip_duplicates: bool = True
    run_automations: bool = False
    check_domains: bool = False
    tags: tuple[str, ...] = ()
    list_id: str | None = None
    mapping: str | None = None
    new_fields: str | None = None


def parse_options(fields: dict[str, str]) -> ImportOptions:
    default_status = (fields.get("default_status") or "subscribed").strip().lower()
    if default_status not in ("subscribed", "unsubscribed"):
        raise ApiError(400, "default_status must be subscribed or unsubscribed")
    source = (fields.get("source") or "").strip() or "import"
    if len(source) > 40:
        raise ApiError(400, "source must be 40 characters or fewer")
    return ImportOptions(
        default_status=default_status,
        source=source,
        skip_duplicates=flag(fields, "skip_duplicates", True),
        run_automations=flag(fields, "run_automations", False),
        check_domains=flag(fields, "check_domains", False),
        tags=tuple(rows_.split_tags(fields.get("tags") or "")),
        list_id=(fields.get("list_id") or "").strip() or None,
        mapping=fields.get("mapping") or None,
        new_fields=fields.get("new_fields") or None,
    )


@dataclass
class Report:
    imported: int = 0
    updated: int = 0
    skipped: int = 0
    skipped_duplicates: int = 0
    suppressed: int = 0
    skipped_unconfirmed: int = 0
    invalid: int = 0
    skipped_undeliverable: int = 0
    undeliverable_domains: list[dict[str, Any]] = field(default_factory=list)
    skipped_placeholder: int = 0
    placeholder_addresses: list[dict[str, str]] = field(default_factory=list)
    tags_created: int = 0
    tags_attached: int = 0
    custom_field_keys: list[str] = field(default_factory=list)
    dropped_columns: list[str] = field(default_factory=list)
    list_added: int = 0
    list_pending_confirmation: int = 0
    truncated: bool = False
    automations_enrolled: int | None = None

    def as_dict(self) -> dict[str, Any]:
        body = dict(self.__dict__)
        if body["automations_enrolled"] is None:
            del body["automations_enrolled"]
        return body


async def run_import(
    ctx: Context, content: bytes, options: ImportOptions, progress: Progress | None = None
) -> Report:
    """The whole import in the caller's transaction: on an unexpected failure the caller rolls
    back, so nothing of the file is kept (500 with `details`)."""
    try:
        return await import_csv(ctx, content, options, progress)
    except ApiError:
        raise
    except Exception as exc:
        log.exception("import failed")
        raise ApiError(
            500,
            "Import failed; nothing was imported",
            details={"error": type(exc).__name__, "message": str(exc)[:500]},
        ) from exc


async def import_csv(
    ctx: Context, content: bytes, options: ImportOptions, progress: Progress | None = None
) -> Report:
    def step(name: str, done: int = 0, total: int = 0) -> None:
        if progress:
            progress(name, done, total)

    now = utcnow()
    report = Report()
    step("reading rows")
    # 1. The file alone, in a worker thread (no database): the event loop keeps serving.
    prepared = await asyncio.to_thread(
        rows_.prepare,
        content,
        mapping=options.mapping,
        new_fields=options.new_fields,
        default_status=options.default_status,
        now=now,
        key=ctx.settings.resolved_secret_key.encode(),
    )
    parsed, hashes = prepared.parsed, prepared.hashes
    report.dropped_columns = prepared.plan.dropped
    report.invalid = parsed.invalid
    report.skipped_duplicates = parsed.duplicates
    report.placeholder_addresses = parsed.placeholders[:1000]
    report.skipped_placeholder = len(parsed.placeholders)
    report.truncated = parsed.tags_cut
    report.skipped_unconfirmed = prepared.pending
    found = parsed.rows

    # 2. DNS before the first statement: the session has no connection yet, so a slow
    # nameserver holds no write transaction (SQLite's one writer) and no pooled connection.
    if options.check_domains and found:
        step("checking domains")
        await _check_domains(ctx, found, report)

    # 3. The database, in the request's one transaction.
    mailing_list = await lists.get_list(ctx, options.list_id) if options.list_id else None
    for new_field in prepared.declared:
        await _declare(ctx, new_field)
    if not found:
        # Beyond the spec's two counts, what else was skipped, so a person can be told why.
        raise ApiError(
            422,
            NO_ROWS,
            invalid=report.invalid,
            skipped_unconfirmed=report.skipped_unconfirmed,
            skipped_placeholder=report.skipped_placeholder,
            placeholder_addresses=report.placeholder_addresses[:20],
            skipped_undeliverable=report.skipped_undeliverable,
            undeliverable_domains=report.undeliverable_domains[:20],
        )

    step("matching existing contacts", 0, len(found))
    suppressed = await writes.suppression_rows(ctx, list(hashes[e] for e in found))
    existing = await writes.existing_contacts(ctx, list(found))

    # Rule 5: an address already on the suppression list imports as (at least) unsubscribed.
    for email, row in found.items():
        if hashes[email] in suppressed:
            report.suppressed += 1
            if row.status == "subscribed":
                row.status = "unsubscribed"

    new_emails = [e for e in found if e not in existing]
    new_subscribed = sum(1 for e in new_emails if found[e].status == "subscribed")
    await contacts.ensure_capacity(ctx, new_subscribed)

    registry = await custom_fields.registry(ctx)
    typed_keys = await _type_values(ctx, found, registry)
    report.custom_field_keys = typed_keys

    tag_ids, tag_names = await _resolve_tags(ctx, found, options.tags, report)

    async with contacts.counting_once(ctx):
        step("writing contacts", 0, len(found))
        ids: dict[str, str] = {}
        escalated: dict[str, list[str]] = {"unsubscribed": [], "bounced": [], "complained": []}
        refreshed: list[str] = []  # existing contacts whose fields changed: contact.updated

        at = writes.time_value(ctx)
        stamp = at(now)
        make_id = new_ids()

        def new_rows() -> Iterator[tuple[Any, ...]]:  # generated as COPY consumes them
            # Tuples in NEW_CONTACT_COLUMNS' order, already in the driver's form.
            workspace_id, default_source = ctx.workspace_id, options.source
            for email in new_emails:
                row = found[email]
                ids[email] = contact_id = next(make_id)
                first, last, status = row.first_name, row.last_name, row.status
                yield (
                    contact_id,
                    workspace_id,
                    email,
                    hashes[email],
                    first,
                    last,
                    status,
                    orjson.dumps(row.custom).decode(),
                    row.source or default_source,
                    search_text(email, first, last),
                    at(row.subscribed_at) if row.subscribed_at else stamp,
                    (at(row.unsubscribed_at) if row.unsubscribed_at else stamp)
                    if status != "subscribed"
                    else None,
                    stamp,
                    stamp,
                )

        report.imported = await writes.insert_records(ctx, Contact, NEW_CONTACT_COLUMNS, new_rows())
        # Orders and carts already stored for these addresses name their new contacts (one
        # cheap probe first: most workspaces have no order or cart waiting for a contact).
        if new_emails and await writes.unlinked_purchases(ctx):
            await customers.link(ctx, [hashes[e] for e in new_emails])

        run = new_id()

        def staged_rows() -> Iterator[dict[str, Any]]:  # consumed in chunks by COPY
            for email, current in existing.items():
                row = found[email]
                ids[email] = current.id
                status = current.status
                if current.status == "subscribed" and row.status in escalated:
                    status = row.status
                    escalated[status].append(current.id)
                first, last, source = current.first_name, current.last_name, current.source
                if not options.skip_duplicates:
                    first, last = row.first_name or first, row.last_name or last
                    source = row.source or options.source
                stored_fields = current.custom_fields()
                fields = {**stored_fields, **row.custom}
                if (first, last, source, fields) != (
                    current.first_name,
                    current.last_name,
                    current.source,
                    stored_fields,
                ):
                    refreshed.append(current.id)
                elif status == current.status:
                    continue  # nothing to write: no new row version, no index churn
                yield (
                    {
                        "run_id": run,
                        "contact_id": current.id,
                        "first_name": first,
                        "last_name": last,
                        "source": source,
                        "status": status,
                        "unsubscribed_at": now if status != current.status else None,
                        "custom_fields": fields,
                        "search_text": search_text(email, first, last),
                    }
                )

        await writes.apply_staged(ctx, run, staged_rows())
        report.updated = len(existing)

        step("tags, lists and suppressions", 0, len(found))
        tagged = await writes.attach_tags(ctx, found, ids, tag_ids, set(existing))
        report.tags_attached = sum(len(contact_ids) for contact_ids in tagged.values())
        await writes.suppress_file_statuses(ctx, found, hashes, suppressed, now)
        joined: list[str] = []
        if mailing_list is not None:
            joining, confirmed = await writes.join_list(
                ctx, mailing_list, found, ids, existing, escalated
            )
            if confirmed:
                report.list_added, joined = len(joining), joining
            else:
                report.list_pending_confirmation = len(joining)

    # Every change above has its catalog event, as the single-contact routes write them: a
    # field change is contact.updated, a status change its own event, each new tag a
    # contact.tag_added (tag dimension), each confirmed join a contact.list_joined.
    step("events", 0, len(found))
    await writes.emit(ctx, "contact.created", [ids[e] for e in new_emails])
    await writes.emit(ctx, "contact.updated", refreshed)
    for status, changed in escalated.items():
        await writes.emit(ctx, f"contact.{status}", changed)
    for tag_id, contact_ids in tagged.items():
        await writes.emit(
            ctx,
            "contact.tag_added",
            contact_ids,
            extra={"tag": {"id": tag_id, "name": tag_names[tag_id]}},
            tag_id=tag_id,
        )
    if mailing_list is not None and joined:
        await writes.emit(
            ctx,
            "contact.list_joined",
            joined,
            extra={"list": {"id": mailing_list.id, "name": mailing_list.name}},
            list_id=mailing_list.id,
        )
    if options.run_automations:
        # As the spec says: new subscribed contacts enter contact_created automations, and
        # those confirmed onto the list enter its list_joined ones.
        report.automations_enrolled = await automations.enrol(
            ctx, "contact_created", [ids[e] for e in new_emails]
        )
        if mailing_list is not None and joined:
            report.automations_enrolled += await automations.enrol(
                ctx, "list_joined", joined, list_id=mailing_list.id
            )
    report.skipped = (
        report.invalid
        + report.skipped_unconfirmed
        + report.skipped_placeholder
        + report.skipped_undeliverable
        + report.skipped_duplicates
    )
    return report


async def _declare(ctx: Context, new_field: columns.NewField) -> None:
    """new_fields: create (or retype) registry fields before values are typed; stored values
    that do not fit are the usual 409 with `violations`."""
    fields = await custom_fields.registry(ctx)
    current = fields.get(new_field.key)
    if current is None:
        await custom_fields.create_field(
            ctx,
            key=new_field.key,
            label=new_field.label,
            field_type=new_field.type,
            options=new_field.options,
        )
    elif current.type != new_field.type or (
        new_field.options and new_field.options != current.options
    ):
        changes: dict[str, Any] = {"type": new_field.type}
        if new_field.options is not None:
            changes["options"] = new_field.options
        await custom_fields.update_field(ctx, new_field.key, changes)


async def _check_domains(ctx: Context, found: dict[str, rows_.Row], report: Report) -> None:
    by_domain: dict[str, list[str]] = {}
    for email in found:
        by_domain.setdefault(email_domain(email), []).append(email)
    verdicts, cut = await domains.undeliverable(list(by_domain), ctx.settings.dns_nameservers)
    report.truncated = report.truncated or cut
    for domain, verdict in verdicts.items():
        emails = by_domain[domain]
        for email in emails:
            del found[email]
        report.skipped_undeliverable += len(emails)
        report.undeliverable_domains.append(
            {"domain": domain, "rows": len(emails), "reason": verdict.reason}
        )


async def _type_values(
    ctx: Context, found: dict[str, rows_.Row], registry: dict[str, Any]
) -> list[str]:
    """Type each value by the registry (a value that does not fit is dropped), and register
    keys no field names yet as text. Returns the keys written."""
    typed = {
        key: (definition.type, definition.options)
        for key, definition in registry.items()
        if definition.type != "text"
    }
    keys = await asyncio.to_thread(_coerce_rows, found, typed)  # per-value CPU: off the loop
    await custom_fields.register_text_fields(ctx, [k for k in keys if k not in registry], registry)
    return keys


def _coerce_rows(found: dict[str, rows_.Row], typed: dict[str, Any]) -> list[str]:
    if not typed or not any(typed.keys() & row.custom.keys() for row in found.values()):
        # Nothing to type (text fields only): just the keys, in first-seen order, gathered
        # without a Python step per value.
        return list(dict.fromkeys(chain.from_iterable(row.custom for row in found.values())))
    keys: dict[str, None] = {}
    for row in found.values():
        for key in list(row.custom):
            kind = typed.get(key)
            if kind is not None:
                value = cf.coerce(kind[0], kind[1], row.custom[key])
                if value is None or value is cf.CLEAR:
                    del row.custom[key]
                    continue
                row.custom[key] = value
            keys[key] = None
    return list(keys)


async def _resolve_tags(
    ctx: Context, found: dict[str, rows_.Row], request_tags: tuple[str, ...], report: Report
) -> tuple[dict[str, str], dict[str, str]]:
    """Folded tag name -> tag id, and tag id -> name, creating missing tags (at most 200
    distinct per import)."""
    names: dict[str, str] = {}
    for name in request_tags:
        names.setdefault(fold(name), name)
    for row in found.values():
        for name in row.tags:
            names.setdefault(fold(name), name)
    if len(names) > MAX_DISTINCT_TAGS:
        report.truncated = True
        names = dict(list(names.items())[:MAX_DISTINCT_TAGS])
    if request_tags:
        for row in found.values():
            row.tags = list(dict.fromkeys([*row.tags, *request_tags]))
    if not names:
        return {}, {}
    existing: dict[str, str] = {}
    stored_names: dict[str, str] = {}
    rows = await ctx.session.execute(
        select(Tag.name_key, Tag.id, Tag.name).where(
            Tag.workspace_id == ctx.workspace_id, Tag.name_key.in_(list(names))
        )
    )
    for key, tag_id, name in rows.all():
        existing[key], stored_names[tag_id] = tag_id, name
    for key, name in names.items():
        if key not in existing and len(name) <= rows_.MAX_TAG_LENGTH:
            tag = await tags_service.create_tag(ctx, name)
            existing[key], stored_names[tag.id] = tag.id, tag.name
            report.tags_created += 1
    return existing, stored_names
