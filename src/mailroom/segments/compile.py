"""A segment's rule as one SQL condition on `contacts`, the same for SQLite and PostgreSQL.

Every value is a bound parameter; nothing is filtered in Python. Custom-field values are read
from the JSON column and typed in SQL with guards first (a CASE, whose branches PostgreSQL
evaluates in order), so a stored value that does not fit its field's type (`abc` in a number
field) simply does not match and never makes a cast fail. Values stored before a field was
typed that still fit it (`"42"` in a number field, `15/03/1990` in a date field) match as the
registry reads them.

Text comparisons ignore case: email and names through `search_text` (casefolded in Python
when written, see models.contacts), everything else through SQL `lower()`, which on SQLite
folds ASCII letters only.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Float,
    Integer,
    Numeric,
    String,
    and_,
    case,
    cast,
    exists,
    false,
    func,
    literal,
    or_,
    select,
)

from mailroom.core.dbtypes import UTCDateTime
from mailroom.custom_fields.values import REGISTRY_KEY
from mailroom.models import Contact, ContactTag, ListMember, SendLog
from mailroom.models.contacts import SEARCH_SEPARATOR
from mailroom.segments.commerce_rules import Commerce
from mailroom.segments.rules import Boundary, Condition, Group

# What Python's str.strip() removes from a stored value before reading it as a number, a
# boolean or a date (the ASCII part of it: SQLite's trim() takes an explicit set).
SPACE = " \t\n\r\f\v"
PG_NUMBER = r"^\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,3})?\s*$"
PG_TRUE = r"^\s*(true|yes)\s*$"
PG_FALSE = r"^\s*(false|no)\s*$"
PG_DAY = r"^(?!0000)[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$"
PG_NO_SUCH_DAY = r"-(02-3[01]|(04|06|09|11)-31)$"
YMD_GLOB = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"
DMY_GLOBS = tuple(
    f"{d}/{m}/[0-9][0-9][0-9][0-9]"
    for d in ("[0-9]", "[0-9][0-9]")
    for m in ("[0-9]", "[0-9][0-9]")
)


def like_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class Compiler:
    """Turns a rule tree into a condition on `Contact` (the caller adds the workspace)."""

    def __init__(self, dialect: str, workspace_id: str, now: datetime) -> None:
        self.pg = dialect == "postgresql"
        self.workspace_id = workspace_id
        self.now = now.astimezone(UTC)
        self.today = self.now.date()
        self.commerce = Commerce(self.pg, workspace_id, self.now)

    def rule(self, group: Group) -> ColumnElement[bool]:
        parts = [
            self.rule(item) if isinstance(item, Group) else self.condition(item)
            for item in group.items
        ]
        return and_(*parts) if group.match == "all" else or_(*parts)

    def condition(self, c: Condition) -> ColumnElement[bool]:
        if c.never:
            return false()
        if c.family == "text":
            folded, fold = self._column_text(c.field)
            return _text_op(folded, fold, c.op, c.value)
        if c.family == "timestamp":
            return self._timestamp(getattr(Contact, c.field), c.op, c.value)
        if c.family == "tags":
            return self._tags(c.op, c.value)
        if c.family == "lists":
            return self._lists(c.op, c.value)
        if c.family == "activity":
            return self._activity(c.op, *c.value)
        if c.family == "ecommerce":
            return self.commerce.condition(c)
        return self._custom(c)

    # ------------------------------------------------------------ contact columns

    def _find(self, haystack: Any, needle: str) -> Any:
        """1-based position of `needle` in `haystack`, 0 when absent."""
        if self.pg:
            return func.strpos(haystack, literal(needle))
        return func.instr(haystack, literal(needle))

    def _column_text(self, name: str) -> tuple[Any, Any]:
        """The column's casefolded text ('' when unset) and how to fold a value like it."""
        if name not in ("email", "first_name", "last_name"):
            return func.coalesce(func.lower(getattr(Contact, name)), ""), str.lower
        # search_text is "email\nfirst\nlast", casefolded. An email holds no separator, so
        # the first one ends it; a first name that holds one (rare: a pasted line break)
        # makes the split unknowable, and that contact's names are lowered by SQL instead.
        sep = literal(SEARCH_SEPARATOR)
        text = Contact.search_text
        if self.pg:  # split_part and lengths: never a negative substring length (an error)
            email = func.split_part(text, sep, 1)
            first = func.split_part(text, sep, 2)
            last = func.substr(text, func.length(email) + func.length(first) + 3)
        else:
            email = func.substr(text, 1, func.instr(text, sep) - 1)
            names = func.substr(text, func.instr(text, sep) + 1)
            first = func.substr(names, 1, func.instr(names, sep) - 1)
            last = func.substr(names, func.instr(names, sep) + 1)
        if name == "email":
            return email, str.casefold
        part, plain = (
            (first, Contact.first_name)
            if name == "first_name"
            else (
                last,
                Contact.last_name,
            )
        )
        one_line = self._find(Contact.first_name, SEARCH_SEPARATOR) == 0
        return case((one_line, part), else_=func.lower(plain)), str.casefold

    def _timestamp(self, column: Any, op: str, value: Any) -> ColumnElement[bool]:
        if op in ("within_last", "not_within_last"):
            since = literal(self.now - timedelta(days=value), UTCDateTime())
            if op == "within_last":
                return column >= since
            return or_(column.is_(None), column < since)
        if value is None:  # after the last representable day
            return false()
        assert isinstance(value, Boundary)
        at = literal(value.at, UTCDateTime())
        if op == "before":
            return column < at
        return column >= at if value.inclusive else column > at

    # ------------------------------------------------------------ memberships and activity

    def _tags(self, op: str, ids: tuple[str, ...]) -> ColumnElement[bool]:
        tagged = select(ContactTag.contact_id).where(
            ContactTag.workspace_id == self.workspace_id, ContactTag.tag_id.in_(ids)
        )
        if op == "has_any":
            return Contact.id.in_(tagged)
        if op == "has_all":  # (contact_id, tag_id) is the key: one row per tag held
            return Contact.id.in_(
                tagged.group_by(ContactTag.contact_id).having(func.count() == len(ids))
            )
        return ~exists().where(
            ContactTag.contact_id == Contact.id,
            ContactTag.workspace_id == self.workspace_id,
            ContactTag.tag_id.in_(ids),
        )

    def _lists(self, op: str, list_id: str) -> ColumnElement[bool]:
        if op == "not_member":
            return ~exists().where(
                ListMember.contact_id == Contact.id,
                ListMember.workspace_id == self.workspace_id,
                ListMember.list_id == list_id,
            )
        members = select(ListMember.contact_id).where(
            ListMember.workspace_id == self.workspace_id, ListMember.list_id == list_id
        )
        if op == "confirmed_member":
            members = members.where(ListMember.status == "confirmed")
        return Contact.id.in_(members)

    def _activity(self, op: str, campaign_id: str | None, days: int | None) -> ColumnElement[bool]:
        """Over the messages sent to the contact (of `campaign_id`, sent in the last `days`):
        received = one did not bounce; opened / clicked = one was; not_opened = received one
        and opened none. Probes the send log by contact (ix_send_log_contact_sent)."""
        such = [
            SendLog.contact_id == Contact.id,
            SendLog.workspace_id == self.workspace_id,
            SendLog.sent_at.is_not(None),
        ]
        if campaign_id is not None:
            such.append(SendLog.campaign_id == campaign_id)
        if days is not None:
            such.append(SendLog.sent_at >= literal(self.now - timedelta(days=days), UTCDateTime()))
        received = exists().where(*such, SendLog.bounced_at.is_(None))
        opened = exists().where(*such, SendLog.first_opened_at.is_not(None))
        if op == "received":
            return received
        if op == "opened":
            return opened
        if op == "clicked":
            return exists().where(*such, SendLog.first_clicked_at.is_not(None))
        return and_(received, ~opened)

    # ------------------------------------------------------------ custom fields

    def _custom(self, c: Condition) -> ColumnElement[bool]:
        value = _JsonValue(self.pg, c.field)
        if c.field_type == "text":
            return _text_op(func.coalesce(func.lower(value.text), ""), str.lower, c.op, c.value)
        if c.field_type == "number":
            return _compare(value.number(), c.op, c.value, value.missing)
        if c.field_type == "boolean":
            return value.boolean(c.op == "is_true")
        if c.field_type == "date":
            return self._date(value.day(), c.op, c.value)
        # dropdown: a stored value that is none of the options does not match, not even neq
        folded = func.lower(value.text)
        if c.op == "in":
            return folded.in_(sorted({v.lower() for v in c.value}))
        if c.op == "eq":
            return folded == c.value.lower()
        options = sorted({o.lower() for o in c.options})
        return or_(value.missing, and_(folded.in_(options), folded != c.value.lower()))

    def _date(self, day: Any, op: str, value: Any) -> ColumnElement[bool]:
        """`day` is the stored date as `YYYY-MM-DD` text (NULL when it is none), so dates
        compare as text."""
        if op == "before":
            return day < value.isoformat()
        if op == "after":
            return day > value.isoformat()
        if op == "within_last":
            start = self.today - timedelta(days=value)
            return and_(day >= start.isoformat(), day <= self.today.isoformat())
        month_day = func.substr(day, 6, 5)
        ranges, leap_day = anniversary_window(self.today, value)
        if ranges is None:
            return day.is_not(None)
        parts: list[ColumnElement[bool]] = [month_day.between(lo, hi) for lo, hi in ranges]
        if leap_day:
            parts.append(month_day == "02-29")
        return or_(*parts)


def stored_day(dialect: str, key: str) -> Any:
    """A contact's date custom field `key` as `YYYY-MM-DD` text (NULL when it holds none), as
    segments read it: for SQL over `Contact` elsewhere (anniversary automations)."""
    return _JsonValue(dialect == "postgresql", key).day()


def anniversary_window(today: date, days: int) -> tuple[list[tuple[str, str]] | None, bool]:
    """The `MM-DD` ranges from today to `days` ahead (None: every day), and whether 29
    February falls in it: in a year without one, its anniversary is 1 March."""
    if days >= 365:
        return None, True
    end = today + timedelta(days=days)
    low, high = today.strftime("%m-%d"), end.strftime("%m-%d")
    ranges = [(low, high)] if end.year == today.year else [(low, "12-31"), ("01-01", high)]
    leap_day = any(
        not _leap(year) and today <= date(year, 3, 1) <= end for year in {today.year, end.year}
    )
    return ranges, leap_day


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _text_op(folded: Any, fold: Any, op: str, value: Any) -> ColumnElement[bool]:
    """`folded` is never NULL ('' when unset), so negative operators match contacts without
    the value."""
    if op == "is_set":
        return folded != ""
    if op == "is_not_set":
        return folded == ""
    if op == "in":
        return folded.in_(sorted({fold(v) for v in value}))
    v = fold(value)
    if op == "eq":
        return folded == v
    if op == "neq":
        return folded != v
    pattern = {
        "contains": "%{}%",
        "not_contains": "%{}%",
        "starts_with": "{}%",
        "ends_with": "%{}",
    }[op].format(like_escape(v))
    matched = folded.like(pattern, escape="\\")
    return ~matched if op == "not_contains" else matched


def _compare(number: Any, op: str, value: Any, missing: Any) -> ColumnElement[bool]:
    bound = literal(value, Float() if isinstance(value, float) else BigInteger())
    if op == "neq":  # NULL (no value that fits) never equals or differs
        return or_(missing, number != bound)
    return {
        "eq": number == bound,
        "gt": number > bound,
        "gte": number >= bound,
        "lt": number < bound,
        "lte": number <= bound,
    }[op]


class _JsonValue:
    """One custom field of the contact, read from the JSON column."""

    def __init__(self, pg: bool, key: str) -> None:
        self.pg = pg
        cf = Contact.custom_fields
        raw: Any
        kind: Any
        self.text: Any
        if pg:
            self.json = func.jsonb_extract_path(cf, literal(key, String()))
            self.kind = func.jsonb_typeof(self.json)
            self.text = func.jsonb_extract_path_text(cf, literal(key, String()))
            self.string = case((self.kind == "string", self.text))
        else:
            if REGISTRY_KEY.match(key):
                path = literal(f"$.{key}", String())
                raw, kind = func.json_extract(cf, path), func.json_type(cf, path)
            else:
                # SQLite's paths compare a key as it is written in the JSON text, and
                # non-ASCII keys are written escaped there; json_each reads them decoded.
                each = func.json_each(cf).table_valued("key", "value", "type")
                raw = select(each.c.value).where(each.c.key == key).scalar_subquery()
                kind = select(each.c.type).where(each.c.key == key).scalar_subquery()
            self.kind = kind
            self.raw = raw
            # json_extract gives a boolean as 1 or 0: its text is its JSON text instead.
            self.text = case(
                (kind == "true", "true"), (kind == "false", "false"), else_=cast(raw, String())
            )
            self.string = case((kind == "text", raw))
        self.missing = self.text.is_(None)

    def _trimmed(self) -> Any:
        return func.trim(self.string, literal(SPACE))

    def number(self) -> Any:
        if self.pg:
            return case(
                (self.kind == "number", cast(self.json, Numeric())),
                (self.string.op("~")(PG_NUMBER), cast(self.string, Numeric())),
            )
        u = self._trimmed()
        return case(
            (self.kind.in_(("integer", "real")), self.raw),
            (_sqlite_is_number(u), cast(u, Float())),
        )

    def boolean(self, wanted: bool) -> ColumnElement[bool]:
        word = "true" if wanted else "false"
        if self.pg:
            spelled = func.lower(self.string).op("~")(PG_TRUE if wanted else PG_FALSE)
            return or_(and_(self.kind == "boolean", self.text == word), spelled)
        spellings = ("true", "yes") if wanted else ("false", "no")
        return or_(self.kind == word, func.lower(self._trimmed()).in_(spellings))

    def day(self) -> Any:
        """The stored date as `YYYY-MM-DD` (as the registry reads it: that form, DD/MM/YYYY,
        or an ISO date-time's date part), NULL when there is none."""
        if self.pg:
            s = self.string
            ymd = func.substring(s, r"^\s*([0-9]{4}-[0-9]{2}-[0-9]{2})\s*$")
            stamp = func.substring(s, r"^\s*([0-9]{4}-[0-9]{2}-[0-9]{2})[T ][0-9]{2}")
            parts = [func.substring(s, pattern) for pattern in _pg_dmy_parts()]
            # || gives NULL when a part is NULL (concat() would skip it)
            from_dmy: Any = (
                parts[2]
                .op("||")("-")
                .op("||")(func.lpad(parts[1], 2, "0"))
                .op("||")("-")
                .op("||")(func.lpad(parts[0], 2, "0"))
            )
            candidate: Any = func.coalesce(ymd, from_dmy, stamp)
            real: Any = case(
                (
                    candidate.op("~")(PG_DAY),
                    and_(
                        ~candidate.op("~")(PG_NO_SUCH_DAY),
                        or_(
                            func.substr(candidate, 6, 5) != "02-29",
                            _pg_leap(cast(func.substr(candidate, 1, 4), Integer())),
                        ),
                    ),
                ),
                else_=false(),
            )
            return case((real, candidate))
        u = self._trimmed()
        slash = func.instr(u, "/")
        rest = func.substr(u, slash + 1)
        from_dmy = func.printf(
            "%s-%02d-%02d",
            func.substr(u, -4),
            cast(func.substr(rest, 1, func.instr(rest, "/") - 1), Integer()),
            cast(func.substr(u, 1, slash - 1), Integer()),
        )
        candidate = case(
            (u.op("GLOB")(YMD_GLOB), u),
            (or_(*(u.op("GLOB")(g) for g in DMY_GLOBS)), from_dmy),
            (u.op("GLOB")(YMD_GLOB + "[T ][0-9][0-9]*"), func.substr(u, 1, 10)),
        )
        # date() takes 2023-02-30 as written; adding nothing rolls it to 03-02.
        real = and_(
            func.date(candidate, "+0 days") == candidate,
            func.substr(candidate, 1, 4) != "0000",
        )
        return case((real, candidate))


def _pg_dmy_parts() -> list[str]:
    """Patterns whose one group is the day, the month, the year of `D/M/YYYY`."""
    d, m, y = "[0-9]{1,2}", "[0-9]{1,2}", "[0-9]{4}"
    return [
        rf"^\s*({d})/{m}/{y}\s*$",
        rf"^\s*{d}/({m})/{y}\s*$",
        rf"^\s*{d}/{m}/({y})\s*$",
    ]


def _pg_leap(year: Any) -> ColumnElement[bool]:
    return and_(year % 4 == 0, or_(year % 100 != 0, year % 400 == 0))


def _sqlite_is_number(u: Any) -> ColumnElement[bool]:
    """Whether text `u` reads as a number as Python's parse_number reads it:
    [+-] digits [. digits] [e [+-] digits] (SQLite has no regular expressions)."""
    unsigned = case((func.substr(u, 1, 1).in_(("+", "-")), func.substr(u, 2)), else_=u)
    e = func.instr(func.lower(unsigned), "e")
    mantissa = case((e > 0, func.substr(unsigned, 1, e - 1)), else_=unsigned)
    exponent = func.substr(unsigned, e + 1)
    exponent_digits = case(
        (func.substr(exponent, 1, 1).in_(("+", "-")), func.substr(exponent, 2)), else_=exponent
    )
    return and_(
        mantissa.op("GLOB")("*[0-9]*"),
        ~mantissa.op("GLOB")("*[^0-9.]*"),
        ~mantissa.op("GLOB")("*.*.*"),
        or_(
            e == 0,
            and_(exponent_digits != "", ~exponent_digits.op("GLOB")("*[^0-9]*")),
        ),
    )
