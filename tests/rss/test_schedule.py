"""When a feed runs next: digests at a wall-clock time in the feed's zone (daily, weekly on a
weekday, monthly on a day clamped to the month's end, across clock changes), each-item checks
every N minutes. Pure: the moment is passed in."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mailroom.core.errors import ApiError
from mailroom.rss.schedule import clean, describe, next_run


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


@pytest.mark.parametrize(
    ("schedule", "after", "expected"),
    [
        # Daily at 09:00 Paris (UTC+1 in November): later today, else tomorrow.
        (
            {"frequency": "daily", "time": "09:00", "timezone": "Europe/Paris"},
            "2026-11-27T07:59:00+00:00",
            "2026-11-27T08:00:00+00:00",
        ),
        (
            {"frequency": "daily", "time": "09:00", "timezone": "Europe/Paris"},
            "2026-11-27T08:00:00+00:00",
            "2026-11-28T08:00:00+00:00",
        ),
        # Weekly on Friday 08:00 New York; 2026-11-27 is a Friday.
        (
            {
                "frequency": "weekly",
                "weekday": "friday",
                "time": "08:00",
                "timezone": "America/New_York",
            },
            "2026-11-27T14:00:00+00:00",
            "2026-12-04T13:00:00+00:00",
        ),
        # Monthly on the 31st: November has 30 days, so its last day.
        (
            {"frequency": "monthly", "day_of_month": 31, "time": "06:30", "timezone": "UTC"},
            "2026-11-15T00:00:00+00:00",
            "2026-11-30T06:30:00+00:00",
        ),
        (
            {"frequency": "monthly", "day_of_month": 31, "time": "06:30", "timezone": "UTC"},
            "2026-11-30T06:30:00+00:00",
            "2026-12-31T06:30:00+00:00",
        ),
        # Spring forward in Paris (2027-03-28, 02:00 -> 03:00): 02:30 does not exist that day.
        (
            {"frequency": "daily", "time": "02:30", "timezone": "Europe/Paris"},
            "2027-03-27T12:00:00+00:00",
            "2027-03-28T01:30:00+00:00",
        ),
        # Each item: the interval from now.
        (
            {"mode": "each_item", "check_every_minutes": 15},
            "2026-11-27T10:00:00+00:00",
            "2026-11-27T10:15:00+00:00",
        ),
    ],
)
def test_next_run(schedule, after, expected):
    cleaned = clean({"mode": "digest", **schedule} if "mode" not in schedule else schedule)
    assert next_run(cleaned, _at(after)) == _at(expected)


def test_defaults_and_words():
    assert clean(None) == {
        "mode": "digest",
        "frequency": "daily",
        "time": "09:00",
        "timezone": "UTC",
    }
    weekly = clean({"mode": "digest", "frequency": "weekly", "weekday": "Friday"})
    assert weekly["weekday"] == "friday"
    assert describe(weekly) == "a digest every Friday at 09:00 (UTC)"
    assert describe(clean({"mode": "each_item", "check_every_minutes": 30})) == (
        "each new item, checked every 30 minutes"
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("daily", "schedule must be an object"),
        ({"mode": "digest", "frequency": "yearly"}, "schedule.frequency must be one of"),
        ({"mode": "digest", "frequency": "monthly", "day_of_month": 0}, "schedule.day_of_month"),
        ({"mode": "each_item", "check_every_minutes": 1441}, "schedule.check_every_minutes"),
        ({"mode": "each_item", "check_every_minutes": "5"}, "must be an integer"),
    ],
)
def test_refusals(raw, message):
    with pytest.raises(ApiError) as refused:
        clean(raw)
    assert refused.value.status == 400 and message in refused.value.message
