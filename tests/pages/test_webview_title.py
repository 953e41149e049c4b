"""The web view `/v/{token}` is titled with the message's subject as that contact got it: the
message's own `<title>` replaced, one added when it has none, and a text-only message shown
as a page of its own with that title."""

from __future__ import annotations

import re

from tests.sending.conftest import verified_domain
from tests.sending.helpers import make_campaign, make_contacts, make_list, ok, send_campaign
from tests.tracking.helpers import hrefs, html_of, path_of, text_of

JANE = "jane@mail.example"


def titles(page: str) -> list[str]:
    return re.findall(r"<title>(.*?)</title>", page, re.DOTALL)


async def _view_of_campaign(client, db, ws, driver, sink, html: str, subject: str) -> str:
    await verified_domain(client, db, ws)
    news = await make_list(client, ws)
    await make_contacts(client, ws, [JANE], news, first_name="Jane")
    campaign = await make_campaign(
        client, ws, news, html_content=html, subject=subject, track_clicks=False
    )
    await send_campaign(client, ws, campaign["id"])
    await driver.drain()
    [mail] = sink.received
    [view] = [h for h in hrefs(html_of(mail.data)) if "/v/" in h]
    page = await client.get(path_of(view))
    assert page.status_code == 200
    return page.text


async def test_the_web_view_is_titled_with_the_subject(client, db, ws, sink, driver):
    page = await _view_of_campaign(
        client,
        db,
        ws,
        driver,
        sink,
        '<html><head><meta charset="utf-8"></head><body><p>Hi</p>'
        '<a href="{{ webview_url }}">View online</a></body></html>',
        "Spring sale for {{ first_name }} <50% & more>",
    )
    assert titles(page) == ["Spring sale for Jane &lt;50% &amp; more&gt;"]
    assert page.index("<title>") < page.index("</head>")


async def test_the_messages_own_title_gives_way_to_the_subject(client, db, ws, sink, driver):
    page = await _view_of_campaign(
        client,
        db,
        ws,
        driver,
        sink,
        "<html><head><title>Newsletter template v2</title></head><body>"
        '<a href="{{ webview_url }}">View online</a></body></html>',
        "Spring sale, {{ first_name }}",
    )
    assert titles(page) == ["Spring sale, Jane"]


async def test_a_text_only_message_is_a_titled_page(client, db, ws, sink, driver):
    await verified_domain(client, db, ws)
    await ok(
        await client.patch(
            "/api/v1/sending", json={"from_email": "hello@shop.example"}, headers=ws.headers
        )
    )
    await make_contacts(client, ws, [JANE], first_name="Jane")
    await ok(
        await client.post(
            "/api/v1/send",
            json={
                "to": JANE,
                "subject": "Order {{ vars.order }} shipped",
                "text_content": "Hi {{ first_name }} <3\nSee {{ webview_url }}",
                "variables": {"order": "A-7"},
            },
            headers=ws.headers,
        ),
        202,
    )
    await driver.drain()
    [mail] = sink.received
    view = re.search(r"(http://testserver/v/\S+)", text_of(mail.data)).group(1)
    page = await client.get(path_of(view))
    assert page.status_code == 200
    assert titles(page.text) == ["Order A-7 shipped"]
    assert "Hi Jane &lt;3\nSee http://testserver/v/" in page.text
    assert page.text.startswith("<!doctype html>")
