"""Issue 25 item 2: the dashboard and the API keep answering while the worker sends.

A real `mailroom serve` (its worker loops in the same process, as by default) sends a
2,000-recipient campaign through an SMTP sink while people browse the dashboard and a client
reads and writes through the API. Each page visit comes "after a pause" (the session's
last-seen time is set back first), which is when the visit records that time: on SQLite that
once turned a read-only page into a write that failed at once with `database is locked`.
Nothing may answer 5xx, and every session's last-seen time is saved.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import func, select, update

from mailroom.core.clock import utcnow
from mailroom.models import DashboardSession, SendLog
from mailroom.people import sessions
from tests.dashboard.helpers import PASSWORD, csrf_of, make_person
from tests.reliability.campaign_run import send_status, verified_campaign
from tests.sending.helpers import ok
from tests.sending.sink import Sink

RECIPIENTS = 2_000
PEOPLE = 3
PAUSE = timedelta(minutes=5)  # more than sessions.TOUCH_EVERY, less than the idle limit


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _until(check, what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


@pytest.fixture
async def server(cli_env, tmp_path):
    """`mailroom serve` (worker loops in-process) sending to a sink; (base URL, sink, its
    log's path)."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = tmp_path / "serve.log"
    with Sink.threaded() as sink, log_path.open("wb") as log:
        env = {
            **os.environ,
            **cli_env,
            "MAILROOM_PUBLIC_URL": base,
            "MAILROOM_SMTP_URL": sink.url,
            "MAILROOM_SEND_PROCESSES": "1",
            "MAILROOM_WORKER_POLL_INTERVAL": "0.1",
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "mailroom", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:
            async with httpx.AsyncClient(base_url=base) as probe:

                async def up() -> bool:
                    if process.poll() is not None:
                        raise AssertionError(log_path.read_text()[-3000:])
                    try:
                        return (await probe.get("/healthz")).status_code == 200
                    except httpx.TransportError:
                        return False

                await _until(up, "mailroom serve to answer", 60)
            yield base, sink, log_path
        finally:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def _browser(base: str, db, settings, ws, email: str) -> tuple[httpx.AsyncClient, str]:
    """A signed-in browser-like client of the server, and its session row's id."""
    link = await make_person(db, settings, ws, email)
    browser = httpx.AsyncClient(base_url=base, timeout=60)
    form = await browser.get(link)  # as a browser does: the form's page, then its post
    answers = {"password": PASSWORD}
    if 'name="csrf"' in form.text:
        answers["csrf"] = csrf_of(form.text)
    signed = await browser.post(link, data=answers)
    assert signed.status_code == 303, signed.text
    token = browser.cookies[sessions.COOKIE]
    return browser, hashlib.sha256(token.encode()).hexdigest()


async def _set_back(db, row_id: str) -> None:
    async with db.transaction() as session:
        await session.execute(
            update(DashboardSession)
            .where(DashboardSession.id == row_id)
            .values(last_seen_at=utcnow() - PAUSE)
        )


async def _last_seen(db, row_id: str):
    async with db.session(write=False) as session:
        return await session.scalar(
            select(DashboardSession.last_seen_at).where(DashboardSession.id == row_id)
        )


async def test_pages_and_api_answer_while_the_worker_sends_a_campaign(
    server, client, db, settings, ws
):
    base, sink, log_path = server
    campaign = await verified_campaign(client, db, ws, RECIPIENTS)
    campaign_id = campaign["id"]
    browsers = [await _browser(base, db, settings, ws, f"p{n}@shop.example") for n in range(PEOPLE)]
    pages = ["/app", "/app/contacts", "/app/campaigns", f"/app/campaigns/{campaign_id}"]
    answers: Counter[int] = Counter()
    failures: list[str] = []
    sending = asyncio.Event()
    sending.set()

    def count(kind: str, response: httpx.Response) -> None:
        answers[response.status_code] += 1
        if response.status_code >= 500:
            failures.append(f"{kind} {response.request.url.path}: {response.text[:200]}")

    async def visitor(browser: httpx.AsyncClient, row_id: str) -> int:
        visits = 0
        while sending.is_set():
            await _set_back(db, row_id)  # the next page comes "after a pause"
            answer = await browser.get(pages[visits % len(pages)])
            count("page", answer)
            visits += 1
        return visits

    async def api_client(n: int) -> int:
        made = 0
        async with httpx.AsyncClient(base_url=base, headers=ws.headers, timeout=60) as api:
            while sending.is_set():
                count("read", await api.get("/api/v1/contacts", params={"limit": 20}))
                count("read", await api.get(f"/api/v1/campaigns/{campaign_id}"))
                created = await api.post(
                    "/api/v1/contacts", json={"email": f"api{n}-{made}@mailtest.io"}
                )
                count("write", created)
                made += 1
        return made

    async def campaign_sent() -> bool:
        async with db.session(write=False) as session:
            pending = await session.scalar(
                select(func.count())
                .select_from(SendLog)
                .where(SendLog.campaign_id == campaign_id, SendLog.status == "pending")
            )
        return pending == 0

    async with httpx.AsyncClient(base_url=base, headers=ws.headers, timeout=60) as api:
        await ok(await api.post(f"/api/v1/campaigns/{campaign_id}/send"), 202)
    drivers = [asyncio.create_task(visitor(b, row_id)) for b, row_id in browsers]
    drivers += [asyncio.create_task(api_client(n)) for n in range(2)]
    try:
        await _until(campaign_sent, "the campaign to be sent", 240)
    finally:
        sending.clear()
        done = await asyncio.gather(*drivers, return_exceptions=True)
        for browser, _ in browsers:
            await browser.aclose()

    problems = [d for d in done if isinstance(d, BaseException)]
    assert not problems, problems
    assert failures == [], (
        f"{len(failures)} server errors of {sum(answers.values())}: {failures[:5]}\n"
        + log_path.read_text()[-3000:]
    )
    assert sum(done[:PEOPLE]) >= 3 * PEOPLE, f"too few page visits while sending: {done}"
    assert await send_status(db, campaign_id) == {"sent": RECIPIENTS}
    assert len({item.recipients[0] for item in sink.received}) == RECIPIENTS
    # Every visit after a pause recorded the visit: each session was seen just now.
    for _browser_client, row_id in browsers:
        assert utcnow() - await _last_seen(db, row_id) < timedelta(minutes=1)
