"""What the sending drills share: a campaign to many imported contacts from a verified domain,
a `mailroom worker` process sending to a sink, and the send log's count by status."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from sqlalchemy import func, select, update

from mailroom.core.clock import utcnow
from mailroom.models import SendingDomain, SendLog
from tests.sending.helpers import campaign_body, make_list, ok


def start_worker(cli_env: dict[str, str], smtp_url: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        **cli_env,
        "MAILROOM_SMTP_URL": smtp_url,
        "MAILROOM_SEND_PROCESSES": "1",
        "MAILROOM_WORKER_POLL_INTERVAL": "0.1",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "mailroom", "worker"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop_worker(worker: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the worker hands back its claims), SIGKILL if it has not gone in 30 s."""
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()


async def send_status(db, campaign_id: str) -> dict[str, int]:
    async with db.session() as session:
        rows = await session.execute(
            select(SendLog.status, func.count())
            .where(SendLog.campaign_id == campaign_id)
            .group_by(SendLog.status)
        )
        return {status: int(n) for status, n in rows.all()}


async def verified_campaign(client, db, ws, recipients: int) -> dict:
    """A campaign to `recipients` imported contacts, from a verified sending domain."""
    news = await make_list(client, ws)
    lines = ["email"] + [f"r{i:05d}@mailtest.io" for i in range(recipients)]
    imported = await client.post(
        "/api/v1/contacts/import",
        files={"file": ("people.csv", "\n".join(lines).encode(), "text/csv")},
        data={"list_id": news, "check_domains": "false"},
        headers=ws.headers,
    )
    assert (await ok(imported))["imported"] == recipients
    created = await client.post("/api/v1/campaigns", json=campaign_body(news), headers=ws.headers)
    campaign = (await ok(created, 201))["campaign"]
    domain = await ok(
        await client.post("/api/v1/domains", json={"domain": "shop.example"}, headers=ws.headers),
        201,
    )
    # Verified, with warm-up skipped (an established domain): these drills are about crashes,
    # not the daily allowance, which tests/sending/test_warmup.py covers.
    async with db.transaction() as session:
        await session.execute(
            update(SendingDomain)
            .where(SendingDomain.id == domain["domain"]["id"])
            .values(
                status="verified",
                verified_at=utcnow(),
                last_checked_at=utcnow(),
                warmup_skipped=True,
            )
        )
    return campaign


def children_of(pid: int) -> set[int]:
    """The live processes whose parent is `pid` (Linux /proc)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(entry))
    return found


def alive(pids: set[int]) -> set[int]:
    return {p for p in pids if os.path.exists(f"/proc/{p}")}
