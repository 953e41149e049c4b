"""Fixtures of the webhook tests: settings that let deliveries reach 127.0.0.1 quickly, a
receiver, a worker driver, and a workspace without the shared catch-all recorder endpoint."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mailroom.webhooks import client as webhook_client
from tests.webhooks.helpers import PUBLIC_IP, Driver, Receiver


@pytest.fixture
def hook_settings(settings: Any) -> Any:
    settings.webhook_allow_networks = ["127.0.0.0/8"]
    settings.webhook_retry_delays = [0, 0, 0, 0]
    # Short, so the receiver's slow paths (5 s and more) time out quickly, but not so short
    # that a loaded CI machine times out an "ok" answer and the retry sends it twice (seen
    # once at 1 s: two requests where the test expects one).
    settings.webhook_timeout = 3.0
    return settings


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with Receiver() as r:
        yield r


@pytest.fixture
async def driver(db: Any, hook_settings: Any) -> AsyncIterator[Driver]:
    d = Driver(db, hook_settings)
    yield d
    await d.close()


@pytest.fixture
async def pro(factory: Any, hook_settings: Any) -> Any:
    """A Pro workspace with no endpoint of its own."""
    return await factory.workspace("pro", listen=False, name="Acme Shop")


class StubResolver:
    """Installed on `mailroom.webhooks.client.resolve_host`: answers from a table."""

    def __init__(self) -> None:
        self.answers: dict[str, list[Any]] = {}
        self.default = [PUBLIC_IP]
        self.calls: list[str] = []

    def set(self, host: str, *addresses: str) -> None:
        self.answers[host] = [ipaddress.ip_address(a) for a in addresses]

    async def __call__(self, host: str, port: int) -> list[Any]:
        self.calls.append(host)
        return list(self.answers.get(host, self.default))


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> StubResolver:
    stub = StubResolver()
    monkeypatch.setattr(webhook_client, "resolve_host", stub)
    return stub
