"""The automation drill: 2,000 contacts imported with `run_automations=true` into a 3-step
automation (a 1-second wait, an email, a tag), worked by two `mailroom worker` processes,
one of them killed with SIGKILL mid-way. Every contact is enrolled exactly once and goes to
the end exactly once: one run each, one email queued each, tagged, and each step once in the
run's history. The dead worker's claimed runs come back through its stale heartbeat."""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter

from sqlalchemy import func, select

from mailroom.models import AutomationRun, ContactTag, SendLog
from tests.conftest import BACKEND
from tests.reliability.campaign_run import start_worker, stop_worker
from tests.sending.helpers import ok

# Enough that the kill, at the first committed batch (200 runs), always lands mid-way.
CONTACTS = 2_000
RECOVERY_LIMIT = 180.0


async def _states(db, automation_id: str) -> Counter:
    async with db.session(write=False) as session:
        rows = await session.execute(
            select(AutomationRun.state, func.count())
            .where(AutomationRun.automation_id == automation_id)
            .group_by(AutomationRun.state)
        )
        return Counter({state: int(n) for state, n in rows.all()})


async def test_two_workers_and_a_sigkill_take_everyone_through_once(client, db, ws, cli_env):
    h = ws.headers
    await ok(
        await client.patch("/api/v1/sending", json={"from_email": "hi@shop.example"}, headers=h)
    )
    template = await ok(
        await client.post(
            "/api/v1/templates",
            json={"name": "Hi", "subject": "Hi {{ first_name }}", "html_content": "<p>Hi</p>"},
            headers=h,
        ),
        201,
    )
    tag = await ok(await client.post("/api/v1/tags", json={"name": "Welcomed"}, headers=h), 201)
    flow = await ok(
        await client.post(
            "/api/v1/automations",
            json={
                "name": "Welcome",
                "trigger": {"type": "contact_created"},
                "steps": [
                    {"id": "wait", "type": "wait", "seconds": 1},
                    {"id": "mail", "type": "send_email", "template_id": template["template"]["id"]},
                    {"id": "tag", "type": "add_tag", "tag_id": tag["tag"]["id"]},
                ],
            },
            headers=h,
        ),
        201,
    )
    automation_id = flow["automation"]["id"]
    await ok(await client.post(f"/api/v1/automations/{automation_id}/activate", headers=h))
    lines = ["email"] + [f"p{i:04d}@mailtest.io" for i in range(CONTACTS)]
    imported = await ok(
        await client.post(
            "/api/v1/contacts/import",
            files={"file": ("people.csv", "\n".join(lines).encode(), "text/csv")},
            data={"run_automations": "true", "check_domains": "false"},
            headers=h,
        )
    )
    assert (imported["imported"], imported["automations_enrolled"]) == (CONTACTS, CONTACTS)

    first, second = (start_worker(cli_env, "") for _ in range(2))
    try:
        deadline = time.monotonic() + 120
        while (await _states(db, automation_id))["completed"] == 0:
            assert time.monotonic() < deadline, "the workers never got going"
            await asyncio.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        killed_at = time.monotonic()
        at_kill = await _states(db, automation_id)
        assert at_kill["completed"] < CONTACTS, "everyone finished before the kill"
        while (await _states(db, automation_id))["completed"] < CONTACTS:
            assert time.monotonic() - killed_at < RECOVERY_LIMIT, await _states(db, automation_id)
            await asyncio.sleep(0.2)
        recovery = time.monotonic() - killed_at
    finally:
        for worker in (first, second):
            stop_worker(worker)
    print(
        f"\n[{BACKEND}] SIGKILL with {at_kill['completed']} of {CONTACTS} runs completed: all "
        f"done {recovery:.1f} s later"
    )

    assert await _states(db, automation_id) == Counter({"completed": CONTACTS})
    async with db.session(write=False) as session:
        runs = (
            await session.execute(
                select(AutomationRun.contact_id, AutomationRun.history).where(
                    AutomationRun.automation_id == automation_id
                )
            )
        ).all()
        queued = Counter(
            (
                await session.scalars(
                    select(SendLog.contact_id).where(
                        SendLog.workspace_id == ws.workspace_id, SendLog.kind == "automation"
                    )
                )
            ).all()
        )
        tagged = await session.scalar(
            select(func.count()).where(ContactTag.tag_id == tag["tag"]["id"])
        )
    assert len(runs) == CONTACTS and len({contact for contact, _ in runs}) == CONTACTS
    assert len(queued) == CONTACTS and set(queued.values()) == {1}  # one email each
    assert tagged == CONTACTS
    for _contact, history in runs:
        steps = [(entry["step_id"], entry["outcome"].split(" (")[0]) for entry in history]
        assert steps == [
            ("wait", "waiting"),
            ("wait", "waited"),
            ("mail", "email queued"),
            ("tag", "done"),
            (None, "completed"),
        ], steps
