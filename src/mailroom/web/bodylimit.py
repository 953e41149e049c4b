"""413 before more than the limit of a request body is read.

A JSON body is parsed whole, so an unbounded one is memory any client can take. Every request
body is capped (`MAILROOM_MAX_JSON_BODY_BYTES`, 2 MB): refused at once when its declared length
is over, and cut off the moment what arrives passes the cap (chunked bodies, false lengths).
Upload routes (multipart) are left to their own, larger caps in `web.uploads`.
"""

from __future__ import annotations

from typing import Any

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mailroom.web.permissions import route_for


def too_large_message(max_bytes: int) -> str:
    size = f"{max_bytes / (1024 * 1024):g} MB" if max_bytes >= 1024 * 1024 else f"{max_bytes} bytes"
    return f"Request body too large: JSON bodies are limited to {size}"


def _takes_upload(route: Any) -> bool:
    body = (getattr(route, "openapi_extra", None) or {}).get("requestBody", {})
    return "multipart/form-data" in body.get("content", {})


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.message = too_large_message(max_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if headers.get("content-type", "").lower().startswith("multipart/form-data"):
            target = route_for(scope["app"], scope["method"], scope["path"])
            if target is not None and _takes_upload(target.route):
                await self.app(scope, receive, send)
                return
        declared = headers.get("content-length", "")
        if declared.isdecimal() and int(declared) > self.max_bytes:
            await JSONResponse({"error": self.message}, status_code=413)(scope, receive, send)
            return
        received = 0

        async def capped_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_bytes:
                # An HTTPException passes through FastAPI's body reading untouched and is
                # rendered in the one error shape (web.errors).
                raise HTTPException(413, self.message)
            return message

        await self.app(scope, capped_receive, send)
