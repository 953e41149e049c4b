"""The web view `/v/{token}`: the message as that contact got it, without the pixel (viewing
is not an open), under a strict Content-Security-Policy; altered tokens and deleted contacts
are 404 pages."""

from __future__ import annotations

from tests.sending.helpers import get_campaign, ok
from tests.tracking.helpers import CHROME, hrefs, html_of, path_of, pixel, sent_campaign

JANE = "jane@mail.example"


async def _view_link(client, db, ws, driver, sink) -> tuple[dict, str]:
    campaign, got = await sent_campaign(client, db, ws, driver, sink, [JANE])
    [view] = [h for h in hrefs(html_of(got[JANE])) if "/v/" in h]
    return campaign, path_of(view)


async def test_the_web_view_shows_the_message_without_the_pixel(app, client, db, ws, sink, driver):
    campaign, view = await _view_link(client, db, ws, driver, sink)
    page = await client.get(view, headers={"user-agent": CHROME})
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src" not in policy
    assert "<p>Hi there</p>" in page.text
    assert pixel(page.text) is None
    tracked = [h for h in hrefs(page.text) if "/l/" in h]
    assert len(tracked) == 2  # its links work as the email's do
    await app.state.hits.flush()
    stats = (await get_campaign(client, ws, campaign["id"]))["stats"]
    assert stats["opened"] == 0


async def test_altered_or_deleted_is_a_404_page(app, client, db, ws, sink, driver):
    _campaign, view = await _view_link(client, db, ws, driver, sink)
    altered = view[:-2] + ("AA" if not view.endswith("AA") else "BB")
    page = await client.get(altered)
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    [contact] = (await ok(await client.get("/api/v1/contacts", headers=ws.headers)))["contacts"]
    await ok(await client.delete(f"/api/v1/contacts/{contact['id']}", headers=ws.headers))
    assert (await client.get(view)).status_code == 404
