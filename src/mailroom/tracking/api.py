"""Open pixel `GET /o/{token}` and click redirect `GET /l/{token}` (no key).

The pixel is always answered (an altered token gets the same GIF and records nothing); a click
token that does not verify is a 404 page, never a redirect: the only places `/l/` sends anyone
are URLs signed into a message.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from mailroom.pages.api import not_found_page
from mailroom.tracking import service
from mailroom.web.deps import get_db, get_settings_dep

router = APIRouter(include_in_schema=False)

# A transparent 1x1 GIF (43 bytes).
PIXEL = bytes.fromhex(
    "47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b"
)
NO_STORE = {
    "Cache-Control": "no-store, no-cache, must-revalidate, private, max-age=0",
    "Pragma": "no-cache",
    "Expires": "0",
    "Referrer-Policy": "no-referrer",
}


@router.get("/o/{token}")
async def open_pixel(token: str, request: Request) -> Response:
    await service.record_open(
        get_db(request),
        get_settings_dep(request),
        token,
        request.headers.get("user-agent", ""),
    )
    return Response(PIXEL, media_type="image/gif", headers=NO_STORE)


@router.get("/l/{token}", response_model=None)
async def click_redirect(token: str, request: Request) -> Response:
    url = await service.record_click(
        get_db(request),
        get_settings_dep(request),
        token,
        request.headers.get("user-agent", ""),
    )
    if url is None:
        return not_found_page(request)
    return RedirectResponse(url, status_code=302, headers=NO_STORE)
