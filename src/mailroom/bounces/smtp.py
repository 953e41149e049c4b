"""aiosmtpd's SMTP session with bounded resources, for a port anyone on the internet can reach.

- Connections: at most `bounce_max_connections` at once, and `bounce_max_connections_per_client`
  from one client address; past either the client is answered 421 and disconnected before
  its session starts.
- Time: aiosmtpd's timeout, restarted by each command, so a client that stays silent, or takes
  longer than `bounce_idle_timeout` over one command (DATA and its message included), is
  disconnected.
- Memory: aiosmtpd keeps a message as a list of its lines until the final dot (20
  unfinished 4 MB transfers added 88 MB to the process), and every fragment of a line that
  never ends. Here DATA is spooled: the first 64 KiB in memory, the rest in an unlinked
  temporary file, nothing past `bounce_max_bytes` (the rest is read and dropped, then
  answered 552), so an unfinished transfer holds at most 64 KiB (the same 20: 2 MB). The
  message is read back whole only once its final dot came, for the handler. Lines longer
  than SMTP allows are taken (some report generators write them), counted like the rest.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections import Counter
from typing import IO, Any

from aiosmtpd.smtp import MISSING, SMTP, syntax

log = logging.getLogger("mailroom.bounces")

IN_MEMORY = 64 * 1024  # of a message being received; the rest goes to a temporary file


class Gate:
    """Connections open now, in all and per client address (shared by a listener's sessions;
    one event loop, so plain counters)."""

    def __init__(self, total: int, per_client: int) -> None:
        self.total = total
        self.per_client = per_client
        self.open: Counter[str] = Counter()

    def admit(self, client: str) -> bool:
        if sum(self.open.values()) >= self.total or self.open[client] >= self.per_client:
            return False
        self.open[client] += 1
        return True

    def release(self, client: str) -> None:
        self.open[client] -= 1
        if self.open[client] <= 0:
            del self.open[client]


class BoundedSMTP(SMTP):
    """One SMTP session (aiosmtpd 1.4: `connection_made`, `connection_lost`, `eof_received`
    and `smtp_DATA` follow its own, with the limits above)."""

    def __init__(self, handler: Any, gate: Gate, **options: Any) -> None:
        super().__init__(handler, **options)
        self._gate = gate
        self._client: str | None = None  # admitted through the gate
        self._refused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self._client is None and not self._refused:
            peer = transport.get_extra_info("peername")
            client = str(peer[0]) if peer else ""
            if not self._gate.admit(client):
                self._refused = True
                log.warning("refused a connection from %s: too many connections", client)
                writer: Any = transport
                writer.write(b"421 4.7.0 Too many connections, try again later\r\n")
                transport.close()
                return
            self._client = client
        super().connection_made(transport)

    def connection_lost(self, error: Exception | None) -> None:
        if self._refused:
            return  # its session never started
        if self._client is not None:
            self._gate.release(self._client)
            self._client = None
        super().connection_lost(error)

    def eof_received(self) -> bool | None:
        if self._refused:
            return False
        return super().eof_received()

    @syntax("DATA")
    async def smtp_DATA(self, arg: str) -> None:
        if await self.check_helo_needed():
            return
        if await self.check_auth_needed("DATA"):
            return
        assert self.envelope is not None
        if not self.envelope.rcpt_tos:
            await self.push("503 Error: need RCPT command")
            return
        if arg:
            await self.push("501 Syntax: DATA")
            return
        await self.push("354 End data with <CR><LF>.<CR><LF>")
        with tempfile.SpooledTemporaryFile(max_size=IN_MEMORY) as spool:
            size = await self._receive(spool)
            if size is None:  # the connection ended before the final dot
                return
            if self.data_size_limit and size > self.data_size_limit:
                self._set_post_data_state()
                await self.push("552 5.3.4 Message too big for this listener")
                return
            spool.seek(0)
            content = spool.read()
        self.envelope.content = self.envelope.original_content = content
        del content  # the handler may drop the envelope's copy before it waits
        status = await self._call_handler_hook("DATA")
        self._set_post_data_state()
        await self.push("250 OK" if status is MISSING else status)

    async def _receive(self, spool: IO[bytes]) -> int | None:
        """The message up to its final dot into `spool` (dot-stuffing undone, nothing past the
        size limit kept): its size, or None when the connection ended first."""
        limit = self.data_size_limit or 0
        size = 0
        line_start = True
        while self.transport is not None:
            try:
                line = await self._reader.readuntil(b"\r\n")
            except asyncio.LimitOverrunError as over:
                # A line longer than the reader's limit: taken in pieces (never all kept).
                line = await self._reader.read(over.consumed)
            except asyncio.IncompleteReadError:
                return None
            except asyncio.CancelledError:
                self._writer.close()
                raise
            if line_start and line == b".\r\n":
                return size
            if line_start and line.startswith(b"."):
                line = line[1:]
            size += len(line)
            if not limit or size <= limit:
                spool.write(line)
            line_start = line.endswith(b"\r\n")
        return None
