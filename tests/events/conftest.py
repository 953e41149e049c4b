"""Webhook endpoints registered by these tests point at 127.0.0.1 (nothing is delivered)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def settings(settings: Any) -> Any:
    settings.webhook_allow_networks = ["127.0.0.0/8"]
    return settings
