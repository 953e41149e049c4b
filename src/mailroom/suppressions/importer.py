"""Importing addresses onto the suppression list (JSON entries or a CSV file).

Work is done in batches of 200 addresses, each committed on its own: a failure part-way keeps
the batches before it, and because every write is an idempotent "never downgrade" upsert,
repeating the whole request converges to the same list.
"""

from __future__ import annotations

import asyncio
import csv
import io
import logging
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, insert, select, text

from mailroom.contacts.addresses import AddressCheck
from mailroom.contacts.import_rows import MAX_ROWS, TOO_MANY_ROWS
from mailroom.contacts.selection import IN_SELECTION, Selection, execute, release
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.dbtypes import UTCDateTime
from mailroom.core.emails import email_domain, mask_email, normalize_email
from mailroom.core.errors import ApiError
from mailroom.core.ids import new_id
from mailroom.events import bulk as bulk_events
from mailroom.models import Suppression
from mailroom.suppressions.service import IMPORTABLE_REASONS, importable_reason, stronger

log = logging.getLogger("mailroom.suppressions")

BATCH = 200
MAX_ENTRIES = 5000
MAX_CSV_BYTES = 5 * 1024 * 1024
CSV_TOO_LARGE = "File too large: CSV uploads are limited to 5 MB"
REASON_ERROR = "reason must be unsubscribed, bounced or complained"
MAX_CSV_ROWS = MAX_ROWS  # as contact imports: 5 MB of tiny rows is refused, not worked


@dataclass
class ImportCounts:
    received: int = 0
    added: int = 0
    upgraded: int = 0
    unchanged: int = 0
    invalid: int = 0
    contacts_updated: int = 0
    by_reason: dict[str, int] = field(default_factory=lambda: dict.fromkeys(IMPORTABLE_REASONS, 0))

    def as_dict(self) -> dict[str, Any]:
        return {
            "received": self.received,
            "added": self.added,
            "upgraded": self.upgraded,
            "unchanged": self.unchanged,
            "invalid": self.invalid,
            "contacts_updated": self.contacts_updated,
            "by_reason": self.by_reason,
        }


def default_reason(value: Any) -> str:
    if value is None or value == "":
        return "unsubscribed"
    reason = importable_reason(value)
    if reason is None:
        raise ApiError(400, REASON_ERROR)
    return reason


def entries_from_json(body: Any) -> tuple[list[tuple[Any, Any]], str]:
    """(address, reason) pairs from `{reason?, entries}`; objects may name the address
    `email`, `address` or `email_address`."""
    if not isinstance(body, dict):
        raise ApiError(400, "entries array is required")
    entries = body.get("entries")
    if not isinstance(entries, list):
        raise ApiError(400, "entries array is required")
    if not entries:
        raise ApiError(400, "entries must not be empty")
    if len(entries) > MAX_ENTRIES:
        raise ApiError(400, f"entries may have at most {MAX_ENTRIES} items")
    fallback = default_reason(body.get("reason"))
    pairs: list[tuple[Any, Any]] = []
    for entry in entries:
        if isinstance(entry, dict):
            address = next(
                (entry[k] for k in ("email", "address", "email_address") if k in entry), None
            )
            pairs.append((address, entry.get("reason")))
        else:
            pairs.append((entry, None))
    return pairs, fallback


def entries_from_csv(content: bytes) -> list[tuple[Any, Any]]:
    """Header `email` (optional `reason`), or one bare address per line."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ApiError(400, "CSV must be UTF-8 encoded") from None
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ApiError(422, "No data rows found in the CSV", invalid=0)
    if len(lines) > MAX_CSV_ROWS + 1:  # the data rows and a header line
        raise ApiError(413, TOO_MANY_ROWS)
    first = lines[0]
    delimiter = max((",", ";", "\t"), key=first.count) if any(d in first for d in ",;\t") else ","
    rows = list(csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter))
    header = [cell.strip().lower().replace(" ", "_") for cell in rows[0]]
    if "@" in first and "email" not in header:
        return [(row[0] if row else "", None) for row in rows]
    if "email" not in header and "email_address" not in header:
        raise ApiError(
            422, "The CSV needs an email column (or one address per line)", invalid=len(rows) - 1
        )
    email_at = header.index("email") if "email" in header else header.index("email_address")
    reason_at = header.index("reason") if "reason" in header else None
    data = rows[1:]
    if not data:
        raise ApiError(422, "No data rows found in the CSV", invalid=0)
    return [
        (
            row[email_at] if email_at < len(row) else "",
            row[reason_at] if reason_at is not None and reason_at < len(row) else None,
        )
        for row in data
    ]


def _fold(
    pairs: list[tuple[Any, Any]], fallback: str, counts: ImportCounts, what: str
) -> dict[str, str]:
    """Address -> strongest reason asked for; invalid entries and repeats counted. Pure CPU
    (address checks bounded per request), run in a worker thread."""
    check = AddressCheck(what)
    wanted: dict[str, str] = {}
    for raw_email, raw_reason in pairs:
        email = normalize_email(raw_email) if isinstance(raw_email, str) else ""
        reason = importable_reason(raw_reason) if raw_reason not in (None, "") else fallback
        if not email or reason is None or not check(email):
            counts.invalid += 1
            continue
        if email in wanted:
            counts.unchanged += 1  # a repeat in the same request folds into the first
            if stronger(reason, wanted[email]):
                wanted[email] = reason
            continue
        wanted[email] = reason
    return wanted


async def import_entries(
    ctx: Context,
    pairs: list[tuple[Any, Any]],
    fallback: str,
    *,
    source: str = "import",
    what: str = "request",
) -> ImportCounts:
    counts = ImportCounts(received=len(pairs))
    wanted = await asyncio.to_thread(_fold, pairs, fallback, counts, what)
    items = list(wanted.items())
    done = 0
    try:
        for start in range(0, len(items), BATCH):
            batch = items[start : start + BATCH]
            await _import_batch(ctx, batch, counts, source)
            await ctx.session.commit()
            done += len(batch)
    except ApiError:
        raise
    except Exception as exc:
        await ctx.session.rollback()
        log.exception("suppression import failed after %d addresses", done)
        raise ApiError(
            500,
            "Suppression import failed part-way; earlier batches were saved and repeating the "
            "request is safe",
            details={"saved": done, "failed_batch_start": done, "error": type(exc).__name__},
        ) from exc
    for reason in wanted.values():
        counts.by_reason[reason] += 1
    return counts


async def _import_batch(
    ctx: Context, batch: list[tuple[str, str]], counts: ImportCounts, source: str
) -> None:
    now = utcnow()
    hashed = {ctx.hash_email(email): (email, reason) for email, reason in batch}
    existing = {
        row.email_hash: row
        for row in (
            await ctx.session.scalars(
                select(Suppression).where(
                    Suppression.workspace_id == ctx.workspace_id,
                    Suppression.email_hash.in_(list(hashed)),
                )
            )
        ).all()
    }
    new_rows = []
    for digest, (email, reason) in hashed.items():
        row = existing.get(digest)
        if row is None:
            new_rows.append(
                {
                    "id": new_id(),
                    "workspace_id": ctx.workspace_id,
                    "email_hash": digest,
                    "reason": reason,
                    "source": source,
                    "email_masked": mask_email(email),
                    "email_domain": email_domain(email),
                    "erased": False,
                    "created_at": now,
                    "updated_at": now,
                }
            )
            counts.added += 1
        elif stronger(reason, row.reason):
            row.reason, row.source, row.updated_at = reason, source, now
            if row.email_masked is None and not row.erased:
                row.email_masked, row.email_domain = mask_email(email), email_domain(email)
            counts.upgraded += 1
        else:
            counts.unchanged += 1
    if new_rows:
        await ctx.session.execute(insert(Suppression), new_rows)
    await ctx.session.flush()

    # Subscribed contacts carrying these addresses take the imported status, each with its
    # contact.unsubscribed / .bounced / .complained (as PATCH `status` writes it: the status
    # event alone, no contact.updated beside it).
    for reason in IMPORTABLE_REASONS:
        digests = [digest for digest, (_email, r) in hashed.items() if r == reason]
        if digests:
            counts.contacts_updated += await _switch_contacts(ctx, reason, digests)


_SUBSCRIBED_AMONG = "workspace_id = :ws AND status = 'subscribed' AND email_hash IN :hashes"


async def _switch_contacts(ctx: Context, reason: str, digests: list[str]) -> int:
    """Set-based: one UPDATE (plus, when an endpoint listens, one listing for the events)."""
    event = f"contact.{reason}"
    assignments = "status = :reason, unsubscribed_at = :now, updated_at = :now"
    if not await bulk_events.wanted(ctx, event):
        return await _execute(
            ctx, f"UPDATE contacts SET {assignments} WHERE {_SUBSCRIBED_AMONG}", digests, reason
        )
    run = new_id()
    size = await _execute(
        ctx,
        "INSERT INTO bulk_selection (run_id, contact_id) "
        f"SELECT :run, id FROM contacts WHERE {_SUBSCRIBED_AMONG}",
        digests,
        run=run,
    )
    await execute(
        ctx,
        f"UPDATE contacts SET {assignments} WHERE workspace_id = :ws AND {IN_SELECTION}",
        run=run,
        reason=reason,
    )
    await bulk_events.emit_for_selection(ctx, event, run)
    await release(ctx, Selection(run, size, size))
    return size


async def _execute(
    ctx: Context, sql: str, digests: list[str], reason: str | None = None, **params: Any
) -> int:
    statement = text(sql).bindparams(bindparam("hashes", expanding=True))
    values = {"ws": ctx.workspace_id, "hashes": digests, **params}
    if ":now" in sql:
        statement = statement.bindparams(bindparam("now", type_=UTCDateTime()))
        values["now"] = utcnow()
    if reason is not None:
        values["reason"] = reason
    result = await ctx.session.execute(statement, values)
    return int(getattr(result, "rowcount", 0) or 0)
