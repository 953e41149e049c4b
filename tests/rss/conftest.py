"""Fixtures of the RSS feed tests: a blog on 127.0.0.1 the URL guard lets through, and a
workspace ready to send (verified domain, sender, a list of subscribers, a template)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.rss.feed_server import Blog


@pytest.fixture
def feed_settings(settings: Any) -> Any:
    settings.webhook_allow_networks = ["127.0.0.0/8"]
    return settings


@pytest.fixture
async def blog(feed_settings: Any) -> AsyncIterator[Blog]:
    async with Blog() as served:
        yield served
