"""Issue 31, running it for real: a `/metrics` scrape (the processes' figures plus the queue
and job counts read from the database at scrape time) on a workspace of 100,000 contacts and a
20,000-row send log, p50/p99 over 100 scrapes; then `mailroom backup` of that installation and
`mailroom restore` of the archive into an empty target, each as a user runs it (its own
process), in seconds and MB/s of archive.

Env: BENCH_OPS_CONTACTS (100000), BENCH_OPS_SCRAPES (100).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import text

from bench.bench_contacts_list import seed
from bench.common import BenchContext, Timer, ensure_database, percentiles, report

CONTACTS = int(os.environ.get("BENCH_OPS_CONTACTS", "100000"))
SCRAPES = int(os.environ.get("BENCH_OPS_SCRAPES", "100"))
SEND_ROWS = 20_000


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("MAILROOM_")}
    done = subprocess.run(
        [sys.executable, "-m", "mailroom", *args],
        env={**inherited, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )
    if done.returncode != 0:
        raise SystemExit(f"mailroom {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done


async def _send_log(db, workspace_id: str, dialect: str) -> None:
    """A campaign's worth of pending send rows, for the queue figures to count."""
    uuid = "gen_random_uuid()::text" if dialect == "postgresql" else "lower(hex(randomblob(16)))"
    async with db.transaction() as session:
        await session.execute(
            text(
                f"INSERT INTO send_log (id, workspace_id, kind, contact_id, email, priority, "
                f"attempts, open_count, click_count, status, run_at, created_at, updated_at) "
                f"SELECT {uuid}, workspace_id, 'campaign', id, email, 5, 0, 0, 0, 'pending', "
                f"created_at, created_at, created_at FROM contacts WHERE workspace_id = :ws "
                f"LIMIT {SEND_ROWS}"
            ),
            {"ws": workspace_id},
        )


async def run(ctx: BenchContext) -> None:
    async with ctx.fresh_app() as bench:
        db = bench.app.state.db
        with Timer() as seeding:
            await seed(db, bench.workspace_id, CONTACTS)
            await _send_log(db, bench.workspace_id, ctx.backend)
        report(
            f"seed {CONTACTS:,} contacts, {SEND_ROWS:,} send rows",
            ctx.backend,
            **{"seconds": seeding.seconds},
        )
        samples = []
        for _ in range(SCRAPES):
            start = time.perf_counter()
            answer = await bench.client.get("/metrics")
            samples.append((time.perf_counter() - start) * 1000)
            assert answer.status_code == 200, answer.text
        assert 'mailroom_queue_pending{queue="send"} 20000.0' in answer.text, answer.text[-2000:]
        figures = percentiles(samples)
        report(
            "GET /metrics",
            ctx.backend,
            scrapes=SCRAPES,
            p50_ms=figures["p50"],
            p99_ms=figures["p99"],
            bytes=len(answer.content),
        )

        source = Path(bench.tmp) / "var"
        env = {
            "MAILROOM_DATA_DIR": str(source),
            "MAILROOM_DATABASE_URL": bench.settings.resolved_database_url,
            "MAILROOM_SECRET_KEY": "bench",
        }
        archive = Path(bench.tmp) / "mailroom-backup.tar.gz"
        with Timer() as backing_up:
            _cli(["backup", str(archive)], env)
        size_mb = archive.stat().st_size / 1e6
        report(
            "mailroom backup",
            ctx.backend,
            seconds=backing_up.seconds,
            archive_mb=size_mb,
            mb_per_s=size_mb / backing_up.seconds,
        )

        target = Path(bench.tmp) / "restored"
        target_env = {"MAILROOM_DATA_DIR": str(target), "MAILROOM_SECRET_KEY": "bench"}
        if ctx.backend == "postgresql":
            restore_url = ctx.pg_url.rsplit("/", 1)[0] + "/mailroom_bench_restore"
            await ensure_database(restore_url)
            target_env["MAILROOM_DATABASE_URL"] = restore_url
        with Timer() as restoring:
            _cli(["restore", str(archive), "--force"], target_env)
        report(
            "mailroom restore (empty target)",
            ctx.backend,
            seconds=restoring.seconds,
            mb_per_s=size_mb / restoring.seconds,
        )
