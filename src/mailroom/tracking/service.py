"""Storing opens and clicks, a batch at a time.

A request to `/o/` or `/l/` only checks its token and hands a `Hit` to the process's
`recorder.HitRecorder`, which writes what gathered every few tens of milliseconds in one
transaction (`store`): that keeps a redirect off the database's write path (p99 of a few
milliseconds at hundreds of clicks a second, even on SQLite's single writer). A process that
dies loses at most the hits of that moment, never a redirect.

Every hit is stored as a `TrackingHit`. A person's (see `agents`) also counts on the send log
(`open_count` / `click_count`); the first sets `first_opened_at` / `first_clicked_at` with a
guarded UPDATE, so `email.opened` / `email.clicked` fire once however many requests race. A
click also counts as an open (a reader who clicked saw the message, images or not). A hit on a
row that no longer exists records nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, update

from mailroom.core.ids import new_id
from mailroom.db import Database
from mailroom.events import service as events
from mailroom.models import SendLog, TrackingHit
from mailroom.sending.outcomes import Contexts, message_data_of
from mailroom.settings import Settings

MAX_AGENT = 300


@dataclass(frozen=True)
class Hit:
    row_id: str
    kind: str  # open | click
    user_agent: str
    automated: bool
    at: datetime
    index: int | None = None
    url: str | None = None


def hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


_LOG: Any = SendLog.__table__
_HITS: Any = TrackingHit.__table__
_ROWS = select(
    _LOG.c.id,
    _LOG.c.workspace_id,
    _LOG.c.campaign_id,
    _LOG.c.contact_id,
    _LOG.c.email,
    _LOG.c.kind,
    _LOG.c.message_id,
    _LOG.c.first_opened_at,
    _LOG.c.first_clicked_at,
).where(_LOG.c.id.in_(bindparam("ids", expanding=True)), _LOG.c.sent_at.is_not(None))
_COUNT = (
    update(_LOG)
    .where(_LOG.c.id == bindparam("r_id"))
    .values(
        open_count=_LOG.c.open_count + bindparam("r_opens"),
        click_count=_LOG.c.click_count + bindparam("r_clicks"),
    )
)


async def store(db: Database, settings: Settings, hits: list[Hit]) -> None:
    """Write a batch of hits in one transaction. Core statements with executemany, not ORM
    objects: this runs on the same event loop that answers redirects, and its CPU time is
    their latency."""
    if not hits:
        return
    async with db.transaction() as session:
        connection = await session.connection()
        found = await connection.execute(_ROWS, {"ids": sorted({h.row_id for h in hits})})
        rows = {r.id: r for r in found.all()}
        kept = [h for h in hits if h.row_id in rows]
        if not kept:
            return
        await connection.execute(
            insert(_HITS),
            [
                {
                    "id": new_id(),
                    "workspace_id": rows[h.row_id].workspace_id,
                    "send_log_id": h.row_id,
                    "campaign_id": rows[h.row_id].campaign_id,
                    "kind": h.kind,
                    "link_index": h.index,
                    "url": h.url,
                    "user_agent": h.user_agent[:MAX_AGENT],
                    "automated": h.automated,
                    "hour": hour_of(h.at),
                    "created_at": h.at,
                }
                for h in kept
            ],
        )
        people = [h for h in kept if not h.automated]
        if not people:
            return
        opens = Counter(h.row_id for h in people if h.kind == "open")
        clicks = Counter(h.row_id for h in people if h.kind == "click")
        await connection.execute(
            _COUNT,
            [
                {"r_id": rid, "r_opens": opens.get(rid, 0), "r_clicks": clicks.get(rid, 0)}
                for rid in sorted(set(opens) | set(clicks))
            ],
        )
        # Only rows not yet opened / clicked when read need the guarded UPDATE (a repeat
        # reader's hits cost nothing more); the guard settles a race with another process.
        first_click: dict[str, Hit] = {}
        for h in people:
            if h.kind == "click" and rows[h.row_id].first_clicked_at is None:
                first_click.setdefault(h.row_id, h)
        unopened = {h.row_id for h in people if rows[h.row_id].first_opened_at is None}
        at = min(h.at for h in people)
        opened = await _first(connection, _LOG.c.first_opened_at, unopened, at)
        clicked = await _first(connection, _LOG.c.first_clicked_at, set(first_click), at)
        if not opened and not clicked:
            return
        contexts = Contexts(session, settings)
        for rid in sorted(opened):
            row = rows[rid]
            ctx = await contexts(row.workspace_id)
            await events.emit(
                ctx, "email.opened", message_data_of(row), campaign_id=row.campaign_id
            )
        for rid in sorted(clicked):
            row, hit = rows[rid], first_click[rid]
            ctx = await contexts(row.workspace_id)
            data = {**message_data_of(row), "link": {"url": hit.url, "index": hit.index}}
            await events.emit(ctx, "email.clicked", data, campaign_id=row.campaign_id)


async def _first(connection: Any, column: Any, ids: set[str], at: datetime) -> set[str]:
    """Set `column` where it is unset; the rows this batch set it on (their first time)."""
    if not ids:
        return set()
    done = await connection.execute(
        update(_LOG)
        .where(_LOG.c.id.in_(sorted(ids)), column.is_(None))
        .values({column.key: at})
        .returning(_LOG.c.id)
    )
    return {str(rid) for rid in done.scalars().all()}
