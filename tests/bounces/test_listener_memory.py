"""`mailroom bounces` as deployed, fed 20 transfers that never end (a security review saw 20
unfinished transfers add 190 MB to the process and keep it): the process's memory stays
about where it was, since a message is spooled (64 KiB in memory, the rest on disk up to the
size limit, nothing past it) rather than kept as a list of its lines. Each transfer is then
ended and answered 552 (past the size limit), so the listener read every byte sent."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.bounces.test_listener_limits import Client
from tests.bounces.test_listener_process import _free_port, _greeting, _running

TRANSFERS = 20
SENT_EACH = 4 * 1024 * 1024  # 80 MB in all: the old listener kept all of it
GROWTH_BOUND = 40 * 1024 * 1024  # generous: the spooled transfers take a few MB
LINE = b"y" * 998 + b"\r\n"


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _unread(port: int) -> int:
    """Bytes sent on the listener's connections not yet read by the listener (the kernel's
    send and receive queues of every connection to or from `port`)."""
    waiting = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, queues = fields[1], fields[2], fields[4]
        if int(local.rsplit(":", 1)[1], 16) == port or int(remote.rsplit(":", 1)[1], 16) == port:
            sending, receiving = queues.split(":")
            waiting += int(sending, 16) + int(receiving, 16)
    return waiting


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc")
async def test_unfinished_transfers_keep_the_memory_bounded(cli_env, tmp_path):
    port = _free_port()
    log = tmp_path / "bounces.log"
    env = {
        **cli_env,
        "MAILROOM_BOUNCE_MAX_CONNECTIONS_PER_CLIENT": str(TRANSFERS),
        "MAILROOM_BOUNCE_IDLE_TIMEOUT": "300",
    }
    async with _running("bounces", env, port, log) as process:
        assert (await _greeting(port, process, log)).startswith("220 ")
        clients = [await Client.connect(port) for _ in range(TRANSFERS)]
        try:
            for smtp in clients:
                assert (await smtp.line()).startswith("220 ")
                assert (await smtp.say("EHLO mta.example")).startswith("250 ")
                assert (await smtp.say("MAIL FROM:<>")).startswith("250 ")
                assert (await smtp.say("RCPT TO:<bounces@shop.example>")).startswith("250 ")
                assert (await smtp.say("DATA")).startswith("354 ")
            before = _rss(process.pid)

            async def send(smtp: Client) -> None:
                chunk = LINE * 64
                for _ in range(SENT_EACH // len(chunk)):
                    smtp.writer.write(chunk)
                    await smtp.writer.drain()

            await asyncio.gather(*(send(smtp) for smtp in clients))
            deadline = time.monotonic() + 120
            while (waiting := _unread(port)) > 0:
                assert time.monotonic() < deadline, f"{waiting} bytes still unread"
                await asyncio.sleep(0.05)
            grown = _rss(process.pid) - before
            assert grown < GROWTH_BOUND, f"{grown / 2**20:.0f} MB for {TRANSFERS} transfers"

            for smtp in clients:
                smtp.writer.write(b".\r\n")
            for smtp in clients:
                assert (await smtp.line()).startswith("552 ")
        finally:
            for smtp in clients:
                smtp.close()
    assert process.returncode == 0, log.read_text()[-2000:]
