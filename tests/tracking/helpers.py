"""Sending a tracked campaign and reading the links out of what the sink received."""

from __future__ import annotations

import re
from email import policy
from email.parser import BytesParser
from typing import Any

from tests.sending.conftest import verified_domain
from tests.sending.helpers import make_campaign, make_contacts, make_list, send_campaign

CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36"
)
SCANNER = "Mozilla/5.0 (compatible; Barracuda Sentinel (EE))"
HTML = (
    "<html><body><p>Hi {{ first_name | default('there') }}</p>"
    '<p><a href="https://shop.example/sale?utm=mail&amp;x=1">Sale</a> and '
    "<a href='http://shop.example/blog'>blog</a> "
    '<a href="mailto:help@shop.example">mail us</a> <a href="#top">top</a></p>'
    '<p><a href="{{ unsubscribe_url }}">Unsubscribe</a> '
    '<a href="{{ preferences_url }}">Preferences</a> '
    '<a href="{{ webview_url }}">View online</a></p></body></html>'
)


def html_of(data: bytes) -> str:
    message = BytesParser(policy=policy.default).parsebytes(data)
    return str(message.get_body(("html",)).get_content())


def text_of(data: bytes) -> str:
    message = BytesParser(policy=policy.default).parsebytes(data)
    return str(message.get_body(("plain",)).get_content())


def hrefs(html: str) -> list[str]:
    return [h.replace("&amp;", "&") for h in re.findall(r"""href=["']([^"']*)["']""", html)]


def pixel(html: str) -> str | None:
    found = re.search(r'<img src="([^"]*/o/[^"]*)"', html)
    return found.group(1) if found else None


def path_of(url: str) -> str:
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


async def sent_campaign(
    client: Any, db: Any, ws: Any, driver: Any, sink: Any, emails: list[str], **overrides: Any
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """A campaign with HTML (tracking on unless overridden) sent to `emails`; what each got."""
    await verified_domain(client, db, ws)
    news = await make_list(client, ws)
    await make_contacts(client, ws, emails, news)
    campaign = await make_campaign(client, ws, news, html_content=HTML, **overrides)
    await send_campaign(client, ws, campaign["id"])
    await driver.drain()
    return campaign, {r.recipients[0]: r.data for r in sink.received}
