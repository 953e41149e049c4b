"""The writing half of an import: lookups and set-based writes, each one or two statements
whatever the number of rows (see importer.py for the order they run in)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from itertools import islice
from typing import Any

import orjson
from sqlalchemy import (
    JSON,
    ColumnElement,
    Text,
    bindparam,
    delete,
    func,
    literal_column,
    select,
    text,
    update,
)

from mailroom.contacts import import_rows as rows_
from mailroom.contacts.selection import Selection, release
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.dbtypes import UTCDateTime
from mailroom.core.emails import email_domain, mask_email
from mailroom.core.ids import new_id
from mailroom.core.text import fold
from mailroom.db import AMONG, ANALYZE_AFTER, among, bulk_insert
from mailroom.events import bulk as bulk_events
from mailroom.lists import service as lists
from mailroom.models import (
    BulkSelection,
    Cart,
    Contact,
    ContactTag,
    ImportStaging,
    ListMember,
    Order,
    Suppression,
)
from mailroom.suppressions.service import stronger
from mailroom.webhooks import fanout

STREAM_BATCH = 5000
# SQLite: rows per executemany. Each slice's Python work (making and converting its rows)
# runs on the event loop between two awaits: small slices keep other requests answered
# (10,000 rows held the loop ~120 ms, 1,000 about 15 ms). PostgreSQL streams one COPY (see db.bulk_insert).
SQLITE_SLICE = 1000


def member_of(ctx: Context, column: Any) -> ColumnElement[bool]:
    """`column IN <values>` for any number of values in one statement, the values passed at
    execution as `values_param(ctx, values)`. PostgreSQL: `db.among`'s array. SQLite: one
    JSON array parameter read by json_each, instead of `db.among`'s chunks of 900 bound
    parameters, each chunk its own round trip and its own 900-name compile (50,000 addresses
    were 56 statements per lookup)."""
    if ctx.dialect == "postgresql":
        return among(ctx.session, column)
    values = func.json_each(bindparam(AMONG)).table_valued("value")
    return column.in_(select(values.c.value))


def values_param(ctx: Context, values: Iterable[str]) -> dict[str, Any]:
    """The execution parameters `member_of` reads."""
    listed = list(values)
    return {AMONG: listed if ctx.dialect == "postgresql" else orjson.dumps(listed).decode()}


async def insert(ctx: Context, model: Any, rows: Iterable[dict[str, Any]]) -> int:
    """`db.bulk_insert`, in slices on SQLite; returns rows inserted."""
    if ctx.dialect == "postgresql":
        return await bulk_insert(ctx.session, model, rows)
    total = 0
    iterator = iter(rows)
    while piece := list(islice(iterator, SQLITE_SLICE)):
        total += await bulk_insert(ctx.session, model, piece)
    return total


def time_value(ctx: Context) -> Callable[[datetime | None], Any]:
    """A timestamp as the driver stores it (what `db.bulk_insert` converts per value)."""
    return (lambda value: value) if ctx.dialect == "postgresql" else _sqlite_time


@lru_cache(maxsize=4096)
def _sqlite_time(value: datetime | None) -> str | None:
    # Memoised: an import mostly repeats one "now".
    return None if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


async def insert_records(
    ctx: Context, model: Any, columns: Sequence[str], records: Iterable[tuple[Any, ...]]
) -> int:
    """`insert` for rows made as tuples already in the driver's form (JSON as text, SQLite
    times as text): no dict per row and no second per-value conversion pass."""
    table = model.__table__
    connection = await ctx.session.connection()
    total = 0
    if ctx.dialect == "postgresql":

        def counted() -> Iterator[tuple[Any, ...]]:
            nonlocal total
            for record in records:
                total += 1
                yield record

        raw = await connection.get_raw_connection()
        copy = raw.driver_connection.copy_records_to_table  # type: ignore[union-attr]
        await copy(table.name, records=counted(), columns=list(columns))
        if total >= ANALYZE_AFTER:
            # As db.bulk_insert: the planner's statistics must describe the loaded table.
            planned = ", ".join(
                c.name for c in table.columns if not isinstance(c.type, JSON | Text)
            )
            await connection.exec_driver_sql(f"ANALYZE {table.name} ({planned})")
        return total
    marks = ", ".join("?" for _ in columns)
    sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({marks})"
    iterator = iter(records)
    while piece := list(islice(iterator, SQLITE_SLICE)):
        total += len(piece)
        await connection.exec_driver_sql(sql, piece)
    return total


async def unlinked_purchases(ctx: Context) -> bool:
    """Whether any order or cart of the workspace still waits for its contact."""
    models: tuple[Any, ...] = (Order, Cart)
    for model in models:
        probe: Any = select(literal_column("1")).where(
            model.workspace_id == ctx.workspace_id, model.contact_id.is_(None)
        )
        if await ctx.session.scalar(probe.limit(1)) is not None:
            return True
    return False


@dataclass(slots=True)
class Existing:
    id: str
    status: str
    first_name: str
    last_name: str
    source: str
    # Kept as the stored JSON text and parsed one row at a time when merging: 50,000 parsed
    # dicts held at once cost ~60 MB.
    custom_json: str | bytes | None

    def custom_fields(self) -> dict[str, Any]:
        raw = self.custom_json
        if not raw:
            return {}
        parsed = orjson.loads(raw) if isinstance(raw, str | bytes) else raw
        return parsed if isinstance(parsed, dict) else {}


async def suppression_rows(ctx: Context, hashes: list[str]) -> dict[str, Suppression]:
    if not hashes:
        return {}
    rows = await ctx.session.scalars(
        select(Suppression).where(
            Suppression.workspace_id == ctx.workspace_id,
            member_of(ctx, Suppression.email_hash),
        ),
        values_param(ctx, hashes),
    )
    return {row.email_hash: row for row in rows.all()}


async def existing_contacts(ctx: Context, emails: list[str]) -> dict[str, Existing]:
    found: dict[str, Existing] = {}
    custom: Any = literal_column(
        "custom_fields::text" if ctx.dialect == "postgresql" else "custom_fields"
    )
    if not emails:
        return found
    # Streamed in batches: 50,000 driver records and result rows at once would be the
    # import's peak memory. Core rows on the connection: no ORM result processing per row.
    connection = await ctx.session.connection()
    result = await connection.stream(
        select(
            Contact.email,
            Contact.id,
            Contact.status,
            Contact.first_name,
            Contact.last_name,
            Contact.source,
            custom,
        )
        .where(Contact.workspace_id == ctx.workspace_id, member_of(ctx, Contact.email))
        .execution_options(yield_per=STREAM_BATCH),
        values_param(ctx, emails),
    )
    async for batch in result.partitions():
        for email, contact_id, status, first, last, source, fields in batch:
            found[email] = Existing(contact_id, status, first, last, source, fields)
    return found


async def apply_staged(ctx: Context, run: str, staged: Iterable[dict[str, Any]]) -> None:
    """Stage the changed rows (a generator is fine: consumed in chunks), then one UPDATE."""
    if not await insert(ctx, ImportStaging, staged):
        return
    unsubscribed = "coalesce(s.unsubscribed_at, contacts.unsubscribed_at)"
    statement = text(
        "UPDATE contacts SET first_name = s.first_name, last_name = s.last_name, "
        "source = s.source, status = s.status, custom_fields = s.custom_fields, "
        f"search_text = s.search_text, unsubscribed_at = {unsubscribed}, updated_at = :now "
        "FROM import_staging s WHERE s.run_id = :run AND contacts.id = s.contact_id"
    ).bindparams(bindparam("now", type_=UTCDateTime()))
    await ctx.session.execute(statement, {"run": run, "now": utcnow()})
    await ctx.session.execute(delete(ImportStaging).where(ImportStaging.run_id == run))


async def missing_tag_pairs(
    ctx: Context,
    found: dict[str, rows_.Row],
    ids: dict[str, str],
    tag_ids: dict[str, str],
    existing_emails: set[str],
) -> set[tuple[str, str]]:
    """(contact id, tag id) for each row's tag (by folded name in `tag_ids`) that its contact
    does not carry yet; only `existing_emails` are looked up (new contacts carry nothing)."""
    if not tag_ids:
        return set()

    def wanted() -> tuple[set[tuple[str, str]], list[str]]:  # pure CPU, 50,000 rows: a thread
        pairs: set[tuple[str, str]] = set()
        add, tag_of = pairs.add, tag_ids.get
        for email, row in found.items():
            if row.tags:
                contact_id = ids[email]
                for name in row.tags:
                    if (tag_id := tag_of(fold(name))) is not None:
                        add((contact_id, tag_id))
        return pairs, [ids[e] for e in existing_emails if found[e].tags]

    pairs, existing_ids = await asyncio.to_thread(wanted)
    if not existing_ids:
        return pairs
    connection = await ctx.session.connection()
    present = await connection.stream(
        select(ContactTag.contact_id, ContactTag.tag_id)
        .where(member_of(ctx, ContactTag.contact_id))
        .execution_options(yield_per=STREAM_BATCH),
        values_param(ctx, existing_ids),
    )
    async for batch in present.partitions():
        pairs.difference_update(tuple(p) for p in batch)
    return pairs


async def attach_tags(
    ctx: Context,
    found: dict[str, rows_.Row],
    ids: dict[str, str],
    tag_ids: dict[str, str],
    existing_emails: set[str],
) -> dict[str, list[str]]:
    """Attach the rows' tags that contacts do not carry yet; returns, per tag id, the
    contacts it was attached to (for their contact.tag_added)."""
    pairs = await missing_tag_pairs(ctx, found, ids, tag_ids, existing_emails)
    workspace_id, now = ctx.workspace_id, time_value(ctx)(utcnow())
    await insert_records(
        ctx,
        ContactTag,
        ("contact_id", "tag_id", "workspace_id", "created_at"),
        ((c, t, workspace_id, now) for c, t in pairs),
    )
    tagged: dict[str, list[str]] = {}
    for contact_id, tag_id in pairs:
        tagged.setdefault(tag_id, []).append(contact_id)
    return tagged


async def suppress_file_statuses(
    ctx: Context,
    found: dict[str, rows_.Row],
    hashes: dict[str, str],
    current: dict[str, Suppression],
    now: Any,
) -> None:
    """Rows marked unsubscribed, bounced or complained go on the suppression list (a stronger
    reason replaces a weaker one, never the reverse)."""
    upgrades: dict[str, list[str]] = {}

    def new_rows() -> Iterator[dict[str, Any]]:  # made as they are inserted
        for email, row in found.items():
            if row.status not in ("unsubscribed", "bounced", "complained"):
                continue
            digest = hashes[email]
            present = current.get(digest)
            if present is None:
                yield {
                    "id": new_id(),
                    "workspace_id": ctx.workspace_id,
                    "email_hash": digest,
                    "reason": row.status,
                    "source": "import",
                    "email_masked": mask_email(email),
                    "email_domain": email_domain(email),
                    "erased": False,
                    "created_at": now,
                    "updated_at": now,
                }
            elif stronger(row.status, present.reason):
                upgrades.setdefault(row.status, []).append(present.id)

    await insert(ctx, Suppression, new_rows())
    for reason, row_ids in upgrades.items():
        await ctx.session.execute(
            update(Suppression)
            .where(member_of(ctx, Suppression.id))
            .values(reason=reason, source="import", updated_at=now),
            values_param(ctx, row_ids),
        )


async def join_list(
    ctx: Context,
    mailing_list: Any,
    found: dict[str, rows_.Row],
    ids: dict[str, str],
    existing: dict[str, Existing],
    escalated: dict[str, list[str]],
) -> tuple[list[str], bool]:
    """Rule 8: subscribed contacts join the list; returns the ids that joined and whether
    they joined confirmed."""
    left_subscribed = {cid for changed in escalated.values() for cid in changed}
    candidates = []
    for email, row in found.items():
        current = existing.get(email)
        status = current.status if current else row.status
        if status == "subscribed" and ids[email] not in left_subscribed:
            candidates.append(ids[email])
    members: set[str] = set()
    if candidates:
        members.update(
            (
                await ctx.session.scalars(
                    select(ListMember.contact_id).where(
                        ListMember.list_id == mailing_list.id,
                        member_of(ctx, ListMember.contact_id),
                    ),
                    values_param(ctx, candidates),
                )
            ).all()
        )
    joining = [cid for cid in candidates if cid not in members]
    confirmed = not lists.effective_double_opt_in(ctx, mailing_list)
    now = utcnow()
    await insert(
        ctx,
        ListMember,
        [
            {
                "list_id": mailing_list.id,
                "contact_id": cid,
                "workspace_id": ctx.workspace_id,
                "status": "confirmed" if confirmed else "unconfirmed",
                "created_at": now,
                "confirmed_at": now if confirmed else None,
            }
            for cid in joining
        ],
    )
    return joining, confirmed


async def emit(ctx: Context, event_type: str, contact_ids: list[str], **options: Any) -> None:
    dims = {"list_id": options.get("list_id"), "tag_id": options.get("tag_id")}
    if not contact_ids or not await fanout.subscribers(ctx, event_type, dims):
        return
    run = new_id()
    await insert(ctx, BulkSelection, ({"run_id": run, "contact_id": cid} for cid in contact_ids))
    await bulk_events.emit_for_selection(ctx, event_type, run, **options)
    await release(ctx, Selection(run, len(contact_ids), len(contact_ids)))
