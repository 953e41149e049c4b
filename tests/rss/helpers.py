"""Calls the RSS tests make as a client, and the worker's loop run by hand."""

from __future__ import annotations

from typing import Any

from sqlalchemy import update

from mailroom.core.clock import utcnow
from mailroom.models import RssFeed
from mailroom.rss import issues
from mailroom.worker import WorkerContext, _contexts
from tests.sending.conftest import verified_domain
from tests.sending.helpers import make_contacts, make_list, ok

API = "/api/v1/rss-feeds"
TEMPLATE_HTML = (
    "<h1>{{ feed.title }}</h1>"
    '{% for item in items %}<h2><a href="{{ item.link }}">{{ item.title }}</a></h2>'
    "{{ item.content }}<p>{{ item.summary }}</p>{% endfor %}"
    '<p><a href="{{ unsubscribe_url }}">Unsubscribe</a></p>'
)


async def ready_workspace(client: Any, db: Any, ws: Any, readers: int = 2) -> dict[str, str]:
    """A verified domain, a sender, `readers` subscribers on a list, a feed template."""
    await verified_domain(client, db, ws)
    await ok(
        await client.patch(
            "/api/v1/sending",
            json={"from_email": "news@shop.example", "from_name": "Blog"},
            headers=ws.headers,
        )
    )
    news = await make_list(client, ws, name="Readers")
    await make_contacts(client, ws, [f"reader{n}@mailtest.io" for n in range(readers)], news)
    made = await client.post(
        "/api/v1/templates",
        json={"name": "Digest", "subject": "unused", "html_content": TEMPLATE_HTML},
        headers=ws.headers,
    )
    return {"list_id": news, "template_id": (await ok(made, 201))["template"]["id"]}


async def make_feed(client: Any, ws: Any, url: str, parts: dict[str, str], **body: Any) -> dict:
    payload = {
        "name": "Blog",
        "url": url,
        "template_id": parts["template_id"],
        "audience": {"list_ids": [parts["list_id"]]},
        **body,
    }
    return (await ok(await client.post(API, json=payload, headers=ws.headers), 201))["rss_feed"]


async def due_now(db: Any, feed_id: str) -> None:
    """The feed's next run has come (time travel by editing the row)."""
    async with db.transaction() as session:
        await session.execute(
            update(RssFeed).where(RssFeed.id == feed_id).values(next_run_at=utcnow())
        )


async def worker_tick(db: Any, settings: Any) -> int:
    return await issues.run_due(db, _contexts(WorkerContext(db, settings, "test-worker")))
