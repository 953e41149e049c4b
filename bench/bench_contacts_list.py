"""GET /api/v1/contacts on a workspace of 100,000 contacts: plain first page, and with q, tag
and status filters; p50/p99 over 200 requests each."""

from __future__ import annotations

import random
import time
from datetime import timedelta

from sqlalchemy import insert, text

from bench.common import BenchContext, Timer, percentiles, report
from mailroom.core.clock import utcnow
from mailroom.core.emails import email_hash
from mailroom.core.ids import new_id
from mailroom.models import Contact, ContactTag, Tag, search_text

CONTACTS = 100_000
REQUESTS = 200
FIRST = ["anna", "bob", "carla", "dmitri", "eve", "farid", "gina", "hugo", "ines", "jonas"]
LAST = ["smith", "garcia", "müller", "rossi", "dubois", "kowalski", "silva", "jensen"]


async def seed(db, workspace_id: str, contacts: int = CONTACTS) -> str:
    rng = random.Random(7)
    now = utcnow()
    tag_id = new_id()
    async with db.transaction() as session:
        await session.execute(
            insert(Tag).values(
                id=tag_id,
                workspace_id=workspace_id,
                name="vip",
                name_key="vip",
                color="#2563eb",
                created_at=now,
                updated_at=now,
            )
        )
    batch: list[dict] = []
    tags: list[dict] = []
    for i in range(contacts):
        created = now - timedelta(seconds=contacts - i)
        status = "subscribed" if i % 20 else rng.choice(["unsubscribed", "bounced"])
        email = f"{rng.choice(FIRST)}.{rng.choice(LAST)}{i}@example{i % 50}.com"
        contact_id = new_id()
        batch.append(
            {
                "id": contact_id,
                "workspace_id": workspace_id,
                "email": email,
                "email_hash": email_hash("bench", email),
                "first_name": (first := rng.choice(FIRST).title()),
                "last_name": (last := rng.choice(LAST).title()),
                "search_text": search_text(email, first, last),
                "status": status,
                "custom_fields": {"plan": rng.choice(["free", "pro"]), "score": i % 100},
                "source": "import",
                "subscribed_at": created,
                "created_at": created,
                "updated_at": created,
            }
        )
        if i % 10 == 0:
            tags.append(
                {
                    "contact_id": contact_id,
                    "tag_id": tag_id,
                    "workspace_id": workspace_id,
                    "created_at": now,
                }
            )
        if len(batch) == 10_000:
            async with db.transaction() as session:
                await session.execute(insert(Contact), batch)
            batch = []
    async with db.transaction() as session:
        if batch:
            await session.execute(insert(Contact), batch)
        await session.execute(insert(ContactTag), tags)
    await vacuum_analyze(db)
    return tag_id


async def vacuum_analyze(db) -> None:
    """Fresh statistics and visibility map, as autovacuum would leave a live database."""
    if db.is_sqlite:  # ANALYZE writes: the write engine (the read one is read-only)
        async with db.write_engine.connect() as conn:
            await conn.execute(text("ANALYZE"))
            await conn.commit()
        return
    async with db.engine.connect() as conn:
        autocommit = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await autocommit.execute(text("VACUUM ANALYZE"))


async def run(ctx: BenchContext) -> None:
    async with ctx.fresh_app() as bench:
        db = bench.app.state.db
        with Timer() as seeding:
            tag_id = await seed(db, bench.workspace_id)
        report("seed 100k contacts", ctx.backend, seconds=seeding.seconds)
        cases = {
            "first page": {},
            "q=smith": {"q": "smith"},
            "q=ines.ro (rare)": {"q": "ines.ro"},
            "tag filter": {"tag": tag_id},
            "status=unsubscribed": {"status": "unsubscribed"},
            "page 50": {"page": 50},
        }
        for name, params in cases.items():
            samples = []
            for _ in range(REQUESTS):
                start = time.perf_counter()
                response = await bench.client.get(
                    "/api/v1/contacts", params=params, headers=bench.headers
                )
                samples.append((time.perf_counter() - start) * 1000)
                assert response.status_code == 200, response.text
            figures = percentiles(samples)
            report(
                f"GET /contacts {name}",
                ctx.backend,
                total=response.json()["pagination"]["total"],
                p50_ms=figures["p50"],
                p99_ms=figures["p99"],
            )
