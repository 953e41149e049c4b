"""When a feed runs: a digest at a time of day (daily, weekly on a weekday, monthly on a day
of the month) in the feed's time zone, or a check every N minutes that mails each new item.

Stored as given after cleaning:
`{mode: "digest", frequency: "daily"|"weekly"|"monthly", time: "HH:MM", weekday?, day_of_month?,
timezone}` or `{mode: "each_item", check_every_minutes}`.
"""

from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mailroom.core.errors import ApiError

MODES = ("digest", "each_item")
FREQUENCIES = ("daily", "weekly", "monthly")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
MIN_CHECK, MAX_CHECK = 5, 1440
DEFAULT = {"mode": "digest", "frequency": "daily", "time": "09:00", "timezone": "UTC"}
# A digest whose fetch failed tries again this soon, not at its next regular time.
RETRY_AFTER = timedelta(minutes=30)


def _int(value: Any, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, f"{field} must be an integer")
    if not low <= value <= high:
        raise ApiError(400, f"{field} must be between {low:,} and {high:,}")
    return value


def clean(raw: Any) -> dict[str, Any]:
    """The schedule as stored, or 400 naming the field."""
    if raw is None:
        return dict(DEFAULT)
    if not isinstance(raw, dict):
        raise ApiError(400, "schedule must be an object")
    mode = raw.get("mode")
    if mode not in MODES:
        raise ApiError(400, f"schedule.mode must be one of: {', '.join(MODES)}")
    if mode == "each_item":
        minutes = raw.get("check_every_minutes", 60)
        minutes = _int(minutes, "schedule.check_every_minutes", MIN_CHECK, MAX_CHECK)
        return {"mode": mode, "check_every_minutes": minutes}
    frequency = raw.get("frequency", "daily")
    if frequency not in FREQUENCIES:
        raise ApiError(400, f"schedule.frequency must be one of: {', '.join(FREQUENCIES)}")
    moment = raw.get("time", "09:00")
    if not isinstance(moment, str) or not TIME.match(moment):
        raise ApiError(400, "schedule.time must be HH:MM (24-hour)")
    zone = raw.get("timezone", "UTC")
    try:
        if not isinstance(zone, str) or not zone:
            raise ValueError
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ApiError(
            400, "schedule.timezone must be an IANA time zone like Europe/Paris"
        ) from None
    schedule: dict[str, Any] = {
        "mode": mode,
        "frequency": frequency,
        "time": moment,
        "timezone": zone,
    }
    if frequency == "weekly":
        weekday = raw.get("weekday", "monday")
        if not isinstance(weekday, str) or weekday.lower() not in WEEKDAYS:
            raise ApiError(400, f"schedule.weekday must be one of: {', '.join(WEEKDAYS)}")
        schedule["weekday"] = weekday.lower()
    if frequency == "monthly":
        schedule["day_of_month"] = _int(raw.get("day_of_month", 1), "schedule.day_of_month", 1, 31)
    return schedule


def next_run(schedule: dict[str, Any], after: datetime) -> datetime:
    """The first run strictly after `after` (an aware UTC time). A monthly day past the
    month's end is its last day; a time skipped by a clock change is the next valid one."""
    if schedule.get("mode") == "each_item":
        return after + timedelta(minutes=int(schedule["check_every_minutes"]))
    zone = ZoneInfo(schedule.get("timezone") or "UTC")
    hour, minute = (int(part) for part in schedule["time"].split(":"))
    local = after.astimezone(zone)
    day = local.date()
    for _ in range(400):  # at most a year and a month of days to look through
        if _runs_on(schedule, day):
            moment = datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone)
            # Wall times a spring-forward skips fold back to the real instant after it.
            moment = moment.astimezone(after.tzinfo).astimezone(zone)
            if moment > local:
                return moment.astimezone(after.tzinfo)
        day += timedelta(days=1)
    raise ValueError(f"no run found for {schedule}")  # unreachable for a cleaned schedule


def _runs_on(schedule: dict[str, Any], day: Any) -> bool:
    frequency = schedule.get("frequency", "daily")
    if frequency == "weekly":
        return WEEKDAYS[day.weekday()] == schedule.get("weekday", "monday")
    if frequency == "monthly":
        last = calendar.monthrange(day.year, day.month)[1]
        return day.day == min(int(schedule.get("day_of_month", 1)), last)
    return True


def describe(schedule: dict[str, Any]) -> str:
    """The schedule in words, for pages."""
    if schedule.get("mode") == "each_item":
        return f"each new item, checked every {schedule['check_every_minutes']} minutes"
    at = f"{schedule['time']} ({schedule['timezone']})"
    if schedule.get("frequency") == "weekly":
        return f"a digest every {schedule['weekday'].capitalize()} at {at}"
    if schedule.get("frequency") == "monthly":
        return f"a digest on day {schedule['day_of_month']} of each month at {at}"
    return f"a daily digest at {at}"
