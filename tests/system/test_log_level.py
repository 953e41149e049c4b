"""`MAILROOM_LOG_LEVEL` sets the least severe line a process writes."""

from __future__ import annotations

import logging

import pytest

from mailroom.core import logs
from mailroom.settings import Settings


@pytest.mark.parametrize(
    ("given", "level"), [("debug", logging.DEBUG), ("warning", logging.WARNING)]
)
def test_the_log_level_setting_reaches_the_root_logger(monkeypatch, tmp_path, given, level):
    monkeypatch.setenv("MAILROOM_LOG_LEVEL", given)
    settings = Settings(data_dir=tmp_path)
    root = logging.getLogger()
    handlers, before = list(root.handlers), root.level
    try:
        logs.configure(settings.log_format, settings.log_level)
        assert logging.getLogger("mailroom.sending").getEffectiveLevel() == level
        # The libraries' own lines stay at INFO and above whatever Mailroom's level.
        assert logging.getLogger("botocore").getEffectiveLevel() == max(level, logging.INFO)
    finally:
        logging.getLogger("mailroom").setLevel(logging.NOTSET)
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(before)


def test_an_unknown_log_level_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("MAILROOM_LOG_LEVEL", "loud")
    with pytest.raises(ValueError, match="log_level"):
        Settings(data_dir=tmp_path)
