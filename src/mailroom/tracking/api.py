"""Open pixel `GET /o/{token}` and click redirect `GET /l/{token}` (no key).

The pixel is always answered (an altered token gets the same GIF and records nothing); a click
token that does not verify is a 404 page, never a redirect: the only places `/l/` sends anyone
are URLs signed into a message. The hit is handed to the process's recorder and written a
moment later with others (see `tracking.recorder`), so answering never waits on a write.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from mailroom.core.clock import utcnow
from mailroom.pages.render import not_found_page
from mailroom.tracking import links
from mailroom.tracking.agents import is_automated
from mailroom.tracking.service import Hit
from mailroom.web.deps import get_settings_dep

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


def _hit(request: Request, row_id: str, kind: str, **link: object) -> None:
    agent = request.headers.get("user-agent", "")
    hit = Hit(row_id, kind, agent, is_automated(agent), utcnow(), **link)  # type: ignore[arg-type]
    request.app.state.hits.add(hit)


@router.get("/o/{token}")
async def open_pixel(token: str, request: Request) -> Response:
    row_id = links.read_open(get_settings_dep(request).resolved_secret_key, token)
    if row_id is not None:
        _hit(request, row_id, "open")
    return Response(PIXEL, media_type="image/gif", headers=NO_STORE)


@router.get("/l/{token}", response_model=None)
async def click_redirect(token: str, request: Request) -> Response:
    found = links.read_click(get_settings_dep(request).resolved_secret_key, token)
    if found is None:
        return not_found_page(request)
    row_id, index, url = found
    _hit(request, row_id, "click", index=index, url=url)
    return RedirectResponse(url, status_code=302, headers=NO_STORE)
