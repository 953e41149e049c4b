"""`Idempotency-Key` on every POST under `/api/v1`: the same key within 24 hours answers the
first response again (same status, identical body, `Idempotent-Replayed: true`) without doing
the work twice; the same key with a different request is 409. Keys are per workspace.

Exactly once, by where the key is written: the request's own unit of work (web.deps) adds the
key's row in the same transaction as the change, so the work and the key commit together or
not at all. The answer is stored just after; if the process dies in between, a retry learns
the work was done (409) rather than doing it again.

Identical requests at once: within one server process they queue on the key, so the second
waits for the first and answers its response again (and work outside the database, such as a
campaign test's SMTP hand-off, happens once). Across processes the key's row decides: the
second's commit fails on it and takes its work back with it (409, still being processed).

Refusals (4xx) and server errors leave no key: their transaction rolled back, so nothing was
done and a retry, corrected or not, is judged afresh. Stripe keeps no result either for a
request that never began its work (a validation failure); it replays the failures of requests
that did (a declined charge leaves a charge object), which have no counterpart here: a refusal
changes nothing. Only JSON answers are kept; a CSV download (bulk `export`) is a read and is
simply run again. Keys older than 24 hours are forgotten.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, select, update
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mailroom.core.auth import Principal
from mailroom.core.clock import utcnow
from mailroom.db import Database
from mailroom.models import IdempotencyKey

log = logging.getLogger("mailroom.idempotency")

HEADER = "idempotency-key"
MAX_KEY = 255
MAX_STORED_BODY = 1024 * 1024
TTL = timedelta(hours=24)
REUSED = "Idempotency-Key reused with a different request"
IN_PROGRESS = (
    "A request with this Idempotency-Key is still being processed or its answer was lost; "
    "its work was done once"
)
BAD_KEY = "Idempotency-Key must be 1-255 printable ASCII characters"
STATE = "idempotency"  # scope["state"] entry the unit of work reads
RESERVED = "idempotency_reserved"  # set by the unit of work once the key committed


def fingerprint(scope: Scope, body: bytes) -> str:
    digest = hashlib.sha256()
    for part in (scope["method"], scope["path"], scope.get("query_string", b"").decode()):
        digest.update(part.encode() + b"\0")
    digest.update(body)
    return digest.hexdigest()


def reservation(state: dict[str, Any], principal: Principal) -> IdempotencyKey | None:
    """The row the unit of work adds beside the change, when the request carries a key."""
    claim = state.get(STATE)
    if claim is None:
        return None
    key, print_ = claim
    return IdempotencyKey(
        workspace_id=principal.workspace_id, key=key, fingerprint=print_, created_at=utcnow()
    )


def _valid(key: str) -> bool:
    return 0 < len(key) <= MAX_KEY and key.isascii() and key.isprintable()


class _KeyQueue:
    """One asyncio lock per (workspace, key) in use in this process; forgotten when idle."""

    def __init__(self) -> None:
        self._locks: dict[tuple[str, str], tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, ident: tuple[str, str]) -> AsyncIterator[None]:
        lock, users = self._locks.get(ident) or (asyncio.Lock(), 0)
        self._locks[ident] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[ident]
            if users <= 1:
                del self._locks[ident]
            else:
                self._locks[ident] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)


class IdempotencyMiddleware:
    def __init__(self, app: ASGIApp, prefix: str = "/api/v1") -> None:
        self.app = app
        self.prefix = prefix
        self.queue = _KeyQueue()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or not scope["path"].startswith(self.prefix)
        ):
            await self.app(scope, receive, send)
            return
        key = Headers(scope=scope).get(HEADER)
        principal = scope.get("state", {}).get("principal")
        if key is None or not isinstance(principal, Principal):
            await self.app(scope, receive, send)
            return
        if not _valid(key):
            await JSONResponse({"error": BAD_KEY}, 400)(scope, receive, send)
            return
        # The body is read once here (already capped by web.bodylimit and the upload limits)
        # to fingerprint the request, then handed to the app as it came.
        messages: list[Message] = []
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
        print_ = fingerprint(scope, body)
        async with self.queue.hold((principal.workspace_id, key)):
            await self._once(scope, receive, send, principal, key, print_, messages)

    async def _once(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        principal: Principal,
        key: str,
        print_: str,
        messages: list[Message],
    ) -> None:
        db: Database = scope["app"].state.db
        stored = await self._find(db, principal.workspace_id, key)
        if stored is not None:
            await self._replay(stored, print_, scope, receive, send)
            return

        pending = list(messages)

        async def replay_receive() -> Message:
            return pending.pop(0) if pending else await receive()

        scope.setdefault("state", {})[STATE] = (key, print_)
        status = 0
        content_type = ""
        chunks: list[bytes] = []
        size = 0

        async def capture(message: Message) -> None:
            nonlocal status, content_type, size
            if message["type"] == "http.response.start":
                status = message["status"]
                content_type = Headers(raw=message.get("headers", [])).get("content-type", "")
            elif message["type"] == "http.response.body" and size <= MAX_STORED_BODY:
                chunk = message.get("body", b"")
                size += len(chunk)
                chunks.append(chunk)
            await send(message)

        await self.app(scope, replay_receive, capture)
        if not scope["state"].get(RESERVED):
            return  # refused or failed: nothing was done, nothing to keep
        if not content_type.startswith("application/json"):
            await self._record(db, principal.workspace_id, key, None)  # a read: run it again
        elif size > MAX_STORED_BODY:
            # Too large to keep, but done: a retry is told so (409) rather than doing it again.
            log.warning("answer of idempotency key %s is too large to keep", key)
        else:
            answer = (status, content_type, b"".join(chunks))
            await self._record(db, principal.workspace_id, key, answer)

    async def _find(self, db: Database, workspace_id: str, key: str) -> IdempotencyKey | None:
        where = (IdempotencyKey.workspace_id == workspace_id, IdempotencyKey.key == key)
        async with db.session(write=False) as session:
            found: IdempotencyKey | None = await session.scalar(
                select(IdempotencyKey).where(*where)
            )
        cutoff = utcnow() - TTL
        if found is None or found.created_at >= cutoff:
            return found
        # Past 24 hours the key is forgotten (the worker prunes hourly; this does not wait).
        async with db.transaction() as session:
            await session.execute(
                delete(IdempotencyKey).where(*where, IdempotencyKey.created_at < cutoff)
            )
        return None

    async def _replay(
        self, stored: IdempotencyKey, print_: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        if stored.fingerprint != print_:
            await JSONResponse({"error": REUSED}, 409)(scope, receive, send)
        elif stored.status_code is None or stored.body is None:
            await JSONResponse({"error": IN_PROGRESS}, 409)(scope, receive, send)
        else:
            await Response(
                stored.body,
                status_code=stored.status_code,
                media_type=stored.content_type,
                headers={"Idempotent-Replayed": "true"},
            )(scope, receive, send)

    async def _record(
        self, db: Database, workspace_id: str, key: str, answer: tuple[int, str, bytes] | None
    ) -> None:
        """Keep the answer beside the key, or (None) forget the key."""
        where = (IdempotencyKey.workspace_id == workspace_id, IdempotencyKey.key == key)
        try:
            async with db.transaction() as session:
                if answer is None:
                    await session.execute(delete(IdempotencyKey).where(*where))
                else:
                    status, content_type, body = answer
                    await session.execute(
                        update(IdempotencyKey)
                        .where(*where)
                        .values(status_code=status, content_type=content_type, body=body)
                    )
        except Exception:  # the answer was sent; a retry will be told the work was done
            log.exception("could not store the answer of idempotency key %s", key)


async def prune(session: Any) -> int:
    """Keys older than a day are forgotten."""
    result = await session.execute(
        delete(IdempotencyKey).where(IdempotencyKey.created_at < utcnow() - TTL)
    )
    return int(getattr(result, "rowcount", 0) or 0)
