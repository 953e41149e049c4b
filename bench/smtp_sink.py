"""An SMTP sink for the sending benchmark, in its own process: `python -m bench.smtp_sink PORT`.

It accepts every message and keeps nothing but counts. It prints `count <n> <unique>` twice a
second and `tx <recipient> <unix time>` when a message for a `tx...` recipient arrives (the
benchmark's transactional probes), so the benchmark can time request -> arrival."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session


class Counter:
    def __init__(self) -> None:
        self.count = 0
        self.ids: set[bytes] = set()

    async def handle_DATA(self, server: Any, session: Session, envelope: Envelope) -> str:
        self.count += 1
        data = envelope.original_content or b""
        head = data[: data.find(b"\r\n\r\n")]
        for line in head.split(b"\r\n"):
            if line[:11].lower() == b"message-id:":
                self.ids.add(line[11:].strip())
                break
        for recipient in envelope.rcpt_tos:
            if recipient.startswith("tx"):
                print(f"tx {recipient} {time.time():.6f}", flush=True)
        return "250 2.0.0 Queued"


async def main(port: int) -> None:
    counter = Counter()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: SMTP(counter, hostname="sink", decode_data=False, data_size_limit=None),
        "127.0.0.1",
        port,
    )
    print("ready", flush=True)
    async with server:
        while True:
            print(f"count {counter.count} {len(counter.ids)}", flush=True)
            await asyncio.sleep(0.5)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
