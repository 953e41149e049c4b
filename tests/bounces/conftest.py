"""The bounce listener on a free port of 127.0.0.1, in the test's event loop, plus the sending
fixtures (sink, driver) that make the messages reports come back for."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mailroom.bounces import listener
from tests.sending.conftest import driver, sink  # noqa: F401


@pytest.fixture
async def bounce_listener(db: Any, settings: Any) -> AsyncIterator[tuple[str, int]]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server, _handler = await listener.start(db, settings, f"127.0.0.1:{port}")
    try:
        yield "127.0.0.1", port
    finally:
        server.close()
        await server.wait_closed()
