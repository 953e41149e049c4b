"""The root logger's lines as `MAILROOM_LOG_FORMAT=json` writes them, for tests that read a
run's logs as an operator would."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mailroom.core import logs


@contextmanager
def json_logs(level: int = logging.INFO) -> Iterator[io.StringIO]:
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logs.JsonFormatter())
    root = logging.getLogger()
    before = root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield buffer
    finally:
        root.removeHandler(handler)
        root.setLevel(before)


def lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines() if line.strip()]
