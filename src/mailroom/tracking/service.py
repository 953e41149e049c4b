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

from sqlalchemy import bindparam, select, update

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


_TABLE: Any = SendLog.__table__
_COUNT = (
    update(_TABLE)
    .where(_TABLE.c.id == bindparam("r_id"))
    .values(
        open_count=_TABLE.c.open_count + bindparam("r_opens"),
        click_count=_TABLE.c.click_count + bindparam("r_clicks"),
    )
)


async def store(db: Database, settings: Settings, hits: list[Hit]) -> None:
    if not hits:
        return
    async with db.transaction() as session:
        ids = sorted({h.row_id for h in hits})
        rows = {
            r.id: r
            for r in (
                await session.execute(
                    select(
                        SendLog.id,
                        SendLog.workspace_id,
                        SendLog.campaign_id,
                        SendLog.contact_id,
                        SendLog.email,
                        SendLog.kind,
                        SendLog.message_id,
                    ).where(SendLog.id.in_(ids), SendLog.sent_at.is_not(None))
                )
            ).all()
        }
        kept = [h for h in hits if h.row_id in rows]
        if not kept:
            return
        session.add_all(
            TrackingHit(
                workspace_id=rows[h.row_id].workspace_id,
                send_log_id=h.row_id,
                campaign_id=rows[h.row_id].campaign_id,
                kind=h.kind,
                link_index=h.index,
                url=h.url,
                user_agent=h.user_agent[:MAX_AGENT],
                automated=h.automated,
                hour=hour_of(h.at),
                created_at=h.at,
            )
            for h in kept
        )
        people = [h for h in kept if not h.automated]
        if not people:
            return
        opens = Counter(h.row_id for h in people if h.kind == "open")
        clicks = Counter(h.row_id for h in people if h.kind == "click")
        connection = await session.connection()
        await connection.execute(
            _COUNT,
            [
                {"r_id": rid, "r_opens": opens.get(rid, 0), "r_clicks": clicks.get(rid, 0)}
                for rid in sorted(set(opens) | set(clicks))
            ],
        )
        first_click: dict[str, Hit] = {}
        for h in people:
            if h.kind == "click":
                first_click.setdefault(h.row_id, h)
        at = min(h.at for h in people)
        opened = await _first(session, SendLog.first_opened_at, {h.row_id for h in people}, at)
        clicked = await _first(session, SendLog.first_clicked_at, set(first_click), at)
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


async def _first(session: Any, column: Any, ids: set[str], at: datetime) -> set[str]:
    """Set `column` where it is unset; the rows this batch set it on (their first time)."""
    if not ids:
        return set()
    done = await session.execute(
        update(SendLog)
        .where(SendLog.id.in_(sorted(ids)), column.is_(None))
        .values({column.key: at})
        .returning(SendLog.id)
    )
    return {str(rid) for rid in done.scalars().all()}
