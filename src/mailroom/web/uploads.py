"""Reading a multipart upload with a hard size limit, without trusting the client's numbers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fastapi import Request
from starlette.datastructures import UploadFile
from starlette.types import Message, Receive

from mailroom.core.errors import ApiError

MULTIPART_OVERHEAD = 64 * 1024


@dataclass
class Upload:
    content: bytes
    filename: str
    content_type: str
    fields: dict[str, str]


class BodyTooLarge(Exception):
    """An upload's body passed its cap while it was read (`capped_receive`)."""


def capped_receive(receive: Receive, cap: int) -> Callable[[], Awaitable[Message]]:
    """`receive` counting what actually arrives, raising BodyTooLarge past `cap` bytes (the
    declared length may be absent or false): pages that read a form themselves use it."""
    received = 0

    async def capped() -> Message:
        nonlocal received
        message = await receive()
        received += len(message.get("body", b""))
        if received > cap:
            raise BodyTooLarge()
        return message

    return capped


def is_multipart(request: Request) -> bool:
    return request.headers.get("content-type", "").lower().startswith("multipart/form-data")


async def read_upload(
    request: Request, *, max_bytes: int, too_large: str, field: str = "file"
) -> Upload:
    """The uploaded file's bytes and the form's text fields.

    413 `too_large` when the body or the file is over `max_bytes` (checked on the declared
    length first, then on what was actually read); 400 when it is not multipart or has no file.
    """
    if not is_multipart(request):
        raise ApiError(400, f"Expected multipart/form-data with a `{field}` field")
    declared = request.headers.get("content-length")
    cap = max_bytes + MULTIPART_OVERHEAD
    if declared and declared.isdecimal() and int(declared) > cap:
        raise ApiError(413, too_large)
    # The declared length may be absent or false: count what actually arrives, and stop
    # reading (413) past the cap instead of spooling an endless body to disk.
    received = 0
    receive = request.receive

    async def capped_receive() -> Message:
        nonlocal received
        message = await receive()
        received += len(message.get("body", b""))
        if received > cap:
            raise ApiError(413, too_large)
        return message

    capped = Request(request.scope, capped_receive)
    try:
        form = await capped.form(max_files=2, max_fields=50, max_part_size=1024 * 1024)
    except ApiError:
        raise
    except Exception:
        raise ApiError(400, "Could not parse the multipart form") from None
    upload = form.get(field)
    if not isinstance(upload, UploadFile):
        raise ApiError(400, f"{field} is required")
    content = await upload.read(max_bytes + 1)
    if len(content) > max_bytes:
        raise ApiError(413, too_large)
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    return Upload(content, upload.filename or "", upload.content_type or "", fields)
