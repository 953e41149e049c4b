"""The bounce listener as the operator runs it: `mailroom bounces` alone, and `mailroom worker`
with `MAILROOM_BOUNCE_SMTP` set, each a real process listening on a free port of 127.0.0.1;
each greets with 220 and acts on a report delivered over SMTP (the contact is bounced or
complained, seen through the API)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.bounces.fixtures import report
from tests.bounces.test_listener import JANE, _contact, _deliver, _send
from tests.sending.helpers import events_of

DEADLINE = 30.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _greeting(port: int, process: subprocess.Popen[bytes], log: Path) -> str:
    """The first line the listener says, once it answers (polled until the deadline)."""
    deadline = time.monotonic() + DEADLINE
    while True:
        assert process.poll() is None, f"the process exited: {log.read_text()[-2000:]}"
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            assert time.monotonic() < deadline, f"nothing listened: {log.read_text()[-2000:]}"
            await asyncio.sleep(0.05)
            continue
        try:
            line = await asyncio.wait_for(reader.readline(), timeout=10)
            writer.write(b"QUIT\r\n")
            await writer.drain()
        finally:
            writer.close()
        return line.decode()


@asynccontextmanager
async def _running(
    command: str, cli_env: dict[str, str], port: int, log: Path
) -> AsyncIterator[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        **cli_env,
        "MAILROOM_BOUNCE_SMTP": f"127.0.0.1:{port}",
        "MAILROOM_WORKER_POLL_INTERVAL": "0.1",
    }
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "mailroom", command],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


async def _status_becomes(client, ws, email: str, wanted: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while (status := (await _contact(client, ws, email))["status"]) != wanted:
        assert time.monotonic() < deadline, f"{email} is still {status}, not {wanted}"
        await asyncio.sleep(0.05)


async def test_mailroom_bounces_alone_receives_a_report(
    client, db, ws, sink, driver, cli_env, tmp_path
):
    _campaign, sent = await _send(client, db, ws, driver, sink)
    return_path, message_id = sent[JANE]
    port = _free_port()
    log = tmp_path / "bounces.log"
    async with _running("bounces", cli_env, port, log) as process:
        greeting = await _greeting(port, process, log)
        assert greeting.startswith("220 "), greeting
        data = report(
            "postfix_hard", return_path=return_path, recipient=JANE, message_id=message_id
        )
        await _deliver(("127.0.0.1", port), return_path, data)
        await _status_becomes(client, ws, JANE, "bounced")
        [bounced] = await events_of(db, ws.workspace_id, "email.bounced")
        assert bounced.data["recipient"]["email"] == JANE
    assert process.returncode == 0, log.read_text()[-2000:]
    assert f"127.0.0.1:{port}" in log.read_text()


async def test_the_worker_listens_when_mailroom_bounce_smtp_is_set(
    client, db, ws, sink, driver, cli_env, tmp_path
):
    _campaign, sent = await _send(client, db, ws, driver, sink)
    return_path, message_id = sent[JANE]
    port = _free_port()
    log = tmp_path / "worker.log"
    async with _running("worker", cli_env, port, log) as process:
        greeting = await _greeting(port, process, log)
        assert greeting.startswith("220 "), greeting
        data = report("yahoo_arf", return_path=return_path, recipient=JANE, message_id=message_id)
        await _deliver(("127.0.0.1", port), return_path, data)
        await _status_becomes(client, ws, JANE, "complained")
        assert len(await events_of(db, ws.workspace_id, "email.complained")) == 1
    assert process.returncode == 0, log.read_text()[-2000:]
