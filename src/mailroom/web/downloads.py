"""CSV downloads that stream from their own read session (the request's unit of work has
closed by the time the body is sent), so memory stays flat however many rows there are."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from fastapi import Request
from fastapi.responses import StreamingResponse

from mailroom.core.auth import Principal
from mailroom.core.context import Context
from mailroom.web.deps import get_db, get_settings_dep


def csv_download(
    request: Request,
    principal: Principal,
    filename: str,
    produce: Callable[[Context], AsyncIterator[str]],
) -> StreamingResponse:
    db = get_db(request)
    settings = get_settings_dep(request)

    async def body() -> AsyncIterator[bytes]:
        async with db.session(write=False) as session:
            ctx = Context(session, principal, settings)
            async for chunk in produce(ctx):
                yield chunk.encode()

    return StreamingResponse(
        body(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
