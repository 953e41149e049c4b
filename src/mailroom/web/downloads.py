"""CSV downloads, streamed so that a slow or stalled client costs the others nothing.

- No database connection is held while the client reads: the producer reads in bounded
  batches (contacts/suppressions exporters), and its read session is closed before every chunk
  is handed to the server. A client that never reads holds a socket and one batch of memory.
- At most `EXPORT_READERS` export steps read the database at once in this process, so exports
  never take more than that many pooled connections from everybody else's requests.
- At most `EXPORTS_PER_WORKSPACE` exports run at once per workspace in this process; one more
  is answered 429 with Retry-After (the count is per server process, not shared).
- A chunk the client has not accepted within `SEND_DEADLINE` seconds ends the download (the
  connection is closed), so a stalled client cannot keep its workspace's slot forever.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from fastapi import Request
from fastapi.responses import StreamingResponse
from starlette.types import Message, Receive, Scope, Send

from mailroom.core.auth import Principal
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.db import Database
from mailroom.web.deps import get_db, get_settings_dep

log = logging.getLogger("mailroom.downloads")

EXPORTS_PER_WORKSPACE = 3
EXPORT_RETRY_AFTER = 10  # seconds
EXPORT_READERS = 3
SEND_DEADLINE = 120.0  # seconds for the client to accept one chunk (about 100 KB)


class _Exports:
    """One process's exports over one database: who is running, who may read now."""

    def __init__(self) -> None:
        self.running: Counter[str] = Counter()
        self.readers = asyncio.Semaphore(EXPORT_READERS)


_exports: weakref.WeakKeyDictionary[Database, _Exports] = weakref.WeakKeyDictionary()


class _Slot:
    """A workspace's place among its running exports; released once, whatever happens."""

    def __init__(self, exports: _Exports, workspace_id: str) -> None:
        if exports.running[workspace_id] >= EXPORTS_PER_WORKSPACE:
            raise ApiError(
                429,
                f"Too many exports in progress ({EXPORTS_PER_WORKSPACE} at once per workspace). "
                f"Retry in {EXPORT_RETRY_AFTER} seconds.",
                headers={"Retry-After": str(EXPORT_RETRY_AFTER)},
            )
        exports.running[workspace_id] += 1
        self._exports: _Exports | None = exports
        self._workspace_id = workspace_id

    def release(self) -> None:
        exports, self._exports = self._exports, None
        if exports is not None:
            exports.running[self._workspace_id] -= 1
            if exports.running[self._workspace_id] <= 0:
                del exports.running[self._workspace_id]


class _Stalled(Exception):
    """The client did not accept a chunk within SEND_DEADLINE."""


class CsvResponse(StreamingResponse):
    """A streamed CSV that gives its workspace slot back however it ends (finished, client
    gone, stalled past the deadline, or never sent at all)."""

    def __init__(self, content: AsyncIterator[bytes], slot: _Slot, **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._slot = slot
        # Backstop for a response that is built but never sent (an error after the handler).
        weakref.finalize(self, slot.release)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_in_time(message: Message) -> None:
            try:
                async with asyncio.timeout(SEND_DEADLINE):
                    await send(message)
            except TimeoutError:
                raise _Stalled from None

        try:
            await super().__call__(scope, receive, send_in_time)
        except* _Stalled:
            # Returning without finishing the response makes the server close the connection.
            log.warning("export to a stalled client stopped after %s s", SEND_DEADLINE)
        finally:
            body = self.body_iterator
            if isinstance(body, AsyncIterator) and hasattr(body, "aclose"):
                await body.aclose()
            self._slot.release()


def csv_download(
    request: Request,
    principal: Principal,
    filename: str,
    produce: Callable[[Context], AsyncIterator[str]],
) -> StreamingResponse:
    """Stream `produce(ctx)` as a CSV attachment. `produce` must hold no cursor across the
    chunks it yields: `ctx.session` is closed after every chunk (see the module docstring)."""
    db = get_db(request)
    settings = get_settings_dep(request)
    exports = _exports.get(db)
    if exports is None:
        exports = _exports[db] = _Exports()
    slot = _Slot(exports, principal.workspace_id)

    async def body() -> AsyncIterator[bytes]:
        session = db.session(write=False)
        chunks = produce(Context(session, principal, settings))
        try:
            while True:
                async with exports.readers:
                    try:
                        chunk = await anext(chunks)
                    except StopAsyncIteration:
                        return
                    finally:
                        # Nothing of the database is held while the client reads.
                        await session.close()
                yield chunk.encode()
        finally:
            # Shielded: a client that goes away cancels this task, and the connection must
            # still go back to the pool.
            with anyio.CancelScope(shield=True):
                if hasattr(chunks, "aclose"):
                    await chunks.aclose()
                await session.close()

    return CsvResponse(
        body(),
        slot,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
