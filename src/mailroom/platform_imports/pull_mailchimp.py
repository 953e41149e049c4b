"""Pulling a Mailchimp account's audiences through the Marketing API v3 into a `PlatformExport`.

The API, as Mailchimp documents it (mailchimp.com/developer/marketing/api, and the generated
client github.com/mailchimp/mailchimp-marketing-python, `lists_api.py` / `api_client.py`):

- The key ends with its data centre after a dash (`<hex>-us21`) and the API lives at
  `https://us21.api.mailchimp.com/3.0`; here the server setting MAILROOM_MAILCHIMP_API_URL (the
  base up to and including `/3.0`) replaces that host, and nothing else does. HTTP Basic auth,
  any user name, the key as the password.
- `GET /lists` (`{lists: [{id, name, stats: {member_count, unsubscribe_count, cleaned_count}}],
  total_items}`), `GET /lists/{id}`, `GET /lists/{id}/merge-fields` (`{merge_fields: [{merge_id,
  tag, name, type, options: {date_format}}], total_items}`), `GET /lists/{id}/members`
  (`{members: [{email_address, status, merge_fields: {TAG: value}, tags: [{id, name}], ip_opt,
  timestamp_opt, ip_signup, timestamp_signup, language, ...}], total_items}`), each paged with
  `count` (at most 1000) and `offset` until `total_items`.
- A refusal is a problem document, `{type, title, status, detail, instance}` (a wrong key: 401
  "API Key Invalid" / "Your API key may be invalid, or you've attempted to access the wrong
  datacenter."); the pull fails with "Mailchimp: <title>: <detail>".

Mapping (as the audience export's reader, `formats_mailchimp`, where the two meet):
- `subscribed` -> subscribed, a confirmed member of the audience's list; `unsubscribed` ->
  unsubscribed, suppressed "unsubscribed"; `cleaned` -> bounced, suppressed "bounced";
  `archived` -> archived (no longer in the audience: no membership).
- `pending` (signed up, double opt-in never confirmed) and `transactional` (never subscribed to
  marketing) are skipped, each with its reason. The CSV import skips unconfirmed rows the same
  way (`skipped_unconfirmed`), and an unconfirmed list membership would not keep them unmailed:
  on a paid plan a list's campaign reaches its unconfirmed members too (campaigns.audience).
- Each audience is a list named after it (a second audience of the same name gets its id
  after the name, with a warning). FNAME / LNAME are the names; every other merge field is a
  custom field keyed by its tag lowercased (`COMPANY` -> `company`), labelled with its name.
  Types come from Mailchimp's: `number` -> number and `date` -> date when every value is one
  (dates written `MM/DD/YYYY` / `DD/MM/YYYY` after the field's date_format are stored
  `YYYY-MM-DD`), anything else text. A `birthday` is text: it has no year (`03/15`), which
  Mailroom's date type needs. An address is one text, its non-empty parts joined with ", ".
- Tags are tags; consent is `timestamp_opt` / `ip_opt` (the opt-in, or its confirmation), else
  `timestamp_signup` / `ip_signup`; `language` is reduced to its ISO 639-1 code.
- An address in several audiences is one contact, merged as the file reader merges repeated
  rows (the strongest status and suppression win, tags and memberships are the union), except
  that archived in one audience does not undo subscribed in another.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from mailroom.core import urlguard
from mailroom.core.languages import reduce_language
from mailroom.custom_fields.values import REGISTRY_KEY, infer_type, parse_number
from mailroom.platform_imports.formats import (
    BAD_KEY,
    BAD_TIMES,
    MAX_EXPORT_ROWS,
    MERGED,
    NO_EMAIL,
    json_scalar,
    merge,
    parse_time,
)
from mailroom.platform_imports.pull_http import (
    Answer,
    HttpClient,
    PullFailed,
    PullRefused,
    check_base,
    shorten,
)
from mailroom.platform_imports.records import FieldSpec, PlatformContact, PlatformExport

Progress = Callable[[int, int], None]

DEFAULT_API = "https://{dc}.api.mailchimp.com/3.0"
PAGE = 1000  # Mailchimp's largest `count`
NO_KEY = "api.key is required"
NO_DATA_CENTRE = "api.key must end with its data centre, like -us21"
_DATA_CENTRE = re.compile(r"^[a-z]+[0-9]+$")
# Left out of member pages: links and statistics are most of a member's bytes.
MEMBER_EXCLUDES = "_links,members._links,members.stats,members.location,members.last_note"

STATES: dict[str, tuple[str, str | None]] = {
    "subscribed": ("subscribed", None),
    "unsubscribed": ("unsubscribed", "unsubscribed"),
    "cleaned": ("bounced", "bounced"),
    "archived": ("archived", None),
}
SKIPPED = {
    "pending": "pending in Mailchimp: the double opt-in was never confirmed",
    "transactional": "transactional in Mailchimp: never subscribed to marketing email",
}
UNKNOWN_STATUS = 'unknown Mailchimp status "{status}"'
NAME_TAGS = {"FNAME": "first", "LNAME": "last"}
DATE_TYPES = frozenset({"date"})
NUMBER_TYPES = frozenset({"number"})
ADDRESS_PARTS = ("addr1", "addr2", "city", "state", "zip", "country")

TOO_MANY = "Mailchimp: {count:,} members is more than one import takes ({limit:,})"
NOT_FOUND = "Mailchimp: no audience with the id {list_id} ({reason})"
ODD_ANSWER = "Mailchimp: an unexpected answer from {path}"
SAME_NAME = 'Two Mailchimp audiences are named "{name}": the second is imported as "{renamed}"'
NOT_TYPED = 'Mailchimp {kind} field "{label}" holds values that are not {what}: imported as text'
OVERRULED = (
    "{count} address(es) subscribed in one audience but unsubscribed or cleaned in another: "
    "imported unsubscribed or bounced, and suppressed"
)
ODD_VALUE = 'Mailchimp field "{label}" holds a list: not imported'

_YMD = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_SLASHED = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$")


def mailchimp_base_url(key: str, setting: str | None) -> str:
    """The API's base URL: the setting (MAILROOM_MAILCHIMP_API_URL) when set, else the key's
    data centre's (`abc-us21` -> `https://us21.api.mailchimp.com/3.0`). The key must carry its
    data centre either way (PullRefused, 400, otherwise)."""
    data_centre = _data_centre(key)
    if setting and setting.strip():
        return setting.strip().rstrip("/")
    return DEFAULT_API.format(dc=data_centre)


def _data_centre(key: str) -> str:
    if not isinstance(key, str) or not key.strip():
        raise PullRefused(NO_KEY)
    secret, dash, data_centre = key.strip().rpartition("-")
    data_centre = data_centre.lower()
    if not dash or not secret or not _DATA_CENTRE.match(data_centre):
        raise PullRefused(NO_DATA_CENTRE)
    return data_centre


async def pull_mailchimp(
    key: str,
    list_id: str | None,
    *,
    base_url: str | None,
    allowed: list[urlguard.Network],
    progress: Progress | None = None,
) -> PlatformExport:
    """Every member of the audience `list_id` (all audiences when None) as a PlatformExport.

    `base_url`: the MAILROOM_MAILCHIMP_API_URL setting, None to derive the host from the key.
    `allowed`: networks exempt from the URL guard (the webhook allow-list setting).
    `progress(done, total)`: called after each page of members (total: the members known so
    far, from each audience's count until its first page says exactly).

    Raises PullRefused (400) for a key without its data centre, PullFailed for everything
    else: the guard refusing the API's address, Mailchimp's refusals in its own words, the
    transport's failures.
    """
    base = mailchimp_base_url(key, base_url)
    try:
        await check_base(base, allowed)
    except urlguard.UnsafeUrl as exc:
        if base_url and base_url.strip():
            raise PullFailed(f"MAILROOM_MAILCHIMP_API_URL is not allowed: {exc}") from None
        raise PullFailed(f"Mailchimp: {exc}") from None
    async with HttpClient("Mailchimp", allowed, ("mailroom", key.strip())) as http:
        api = _Api(http, base)
        if list_id:
            audiences = [await api.audience(list_id)]
        else:
            audiences = await api.audiences()
        pull = _Pull(audiences, progress)
        for audience in audiences:
            await pull.audience(api, audience)
        return pull.result()


# --- the API ----------------------------------------------------------------------------


@dataclass
class Audience:
    id: str
    name: str  # the list name it becomes (made unique among the pulled audiences)
    estimate: int  # members by the audience's statistics, until total_items says exactly


class _Api:
    def __init__(self, http: HttpClient, base: str) -> None:
        self.http = http
        self.base = base

    async def get(self, path: str, params: list[tuple[str, str]]) -> dict[str, Any]:
        answer = await self.http.get(self.base + path, params)
        if not 200 <= answer.status < 300:
            raise PullFailed(reason(answer))
        if not isinstance(answer.data, dict):
            raise PullFailed(ODD_ANSWER.format(path=path.split("?")[0]))
        return answer.data

    async def pages(
        self, path: str, key: str, params: list[tuple[str, str]] | None = None
    ) -> AsyncIterator[tuple[list[dict[str, Any]], int]]:
        offset = 0
        while True:
            data = await self.get(
                path, [("count", str(PAGE)), ("offset", str(offset)), *(params or [])]
            )
            items, total = data.get(key), data.get("total_items")
            if not isinstance(items, list) or not isinstance(total, int):
                raise PullFailed(ODD_ANSWER.format(path=path))
            yield [item for item in items if isinstance(item, dict)], total
            offset += len(items)
            if not items or offset >= total:
                return

    async def audience(self, list_id: str) -> Audience:
        path = f"/lists/{_segment(list_id)}"
        answer = await self.http.get(self.base + path, [("exclude_fields", "_links")])
        if answer.status == 404:
            raise PullFailed(NOT_FOUND.format(list_id=list_id, reason=_problem(answer)))
        if not 200 <= answer.status < 300:
            raise PullFailed(reason(answer))
        if not isinstance(answer.data, dict) or not isinstance(answer.data.get("id"), str):
            raise PullFailed(ODD_ANSWER.format(path=path))
        return _audience(answer.data)

    async def audiences(self) -> list[Audience]:
        found: list[Audience] = []
        async for items, _ in self.pages(
            "/lists", "lists", [("exclude_fields", "_links,lists._links")]
        ):
            found += [_audience(item) for item in items if isinstance(item.get("id"), str)]
        return found


def _segment(value: str) -> str:
    """A path segment: an audience id is letters and digits; anything else is escaped."""
    return re.sub(r"[^A-Za-z0-9_-]", lambda m: f"%{ord(m.group()):02X}", value.strip())


def _audience(item: dict[str, Any]) -> Audience:
    stats = _object(item.get("stats"))
    counts = [stats.get(k) for k in ("member_count", "unsubscribe_count", "cleaned_count")]
    name = item.get("name")
    return Audience(
        id=item["id"],
        name=name.strip() if isinstance(name, str) and name.strip() else item["id"],
        estimate=sum(c for c in counts if isinstance(c, int) and c > 0),
    )


def _problem(answer: Answer) -> str:
    data = answer.data
    if isinstance(data, dict):
        title, detail = data.get("title"), data.get("detail")
        parts = [str(p).strip() for p in (title, detail) if isinstance(p, str) and p.strip()]
        if parts:
            return shorten(": ".join(parts))
    return f"HTTP {answer.status}"


def reason(answer: Answer) -> str:
    """Mailchimp's refusal in its own words: "Mailchimp: <title>: <detail>"."""
    return f"Mailchimp: {_problem(answer)}"


# --- reading members --------------------------------------------------------------------


@dataclass
class _Field:
    key: str
    label: str
    kinds: set[str] = field(default_factory=set)  # Mailchimp types seen for this key
    values: list[str] = field(default_factory=list)


@dataclass
class _MergeField:
    tag: str
    name: str
    type: str
    date_format: str
    key: str | None  # None: the names (FNAME / LNAME), or a key that cannot be registered


class _Pull:
    def __init__(self, audiences: list[Audience], progress: Progress | None) -> None:
        self.progress = progress
        self.warnings: dict[str, None] = {}
        self.totals = {a.id: a.estimate for a in audiences}
        self.done = 0
        self.contacts: dict[str, PlatformContact] = {}
        self.skipped: list[dict[str, Any]] = []
        self.fields: dict[str, _Field] = {}
        self.merged = 0
        self.overruled: set[str] = set()
        self.bad_times = 0
        self.bad_example = ""
        seen: set[str] = set()
        for audience in audiences:  # one list per audience, by a name no other one has
            if audience.name.casefold() in seen:
                renamed = f"{audience.name} ({audience.id})"
                self.warn(SAME_NAME.format(name=audience.name, renamed=renamed))
                audience.name = renamed
            seen.add(audience.name.casefold())
        self.lists = [a.name for a in audiences]
        self.report()

    def warn(self, message: str) -> None:
        self.warnings.setdefault(message, None)

    def report(self) -> None:
        if self.progress is not None:
            self.progress(self.done, max(sum(self.totals.values()), self.done))

    async def audience(self, api: _Api, audience: Audience) -> None:
        path = f"/lists/{_segment(audience.id)}"
        merge_fields: dict[str, _MergeField] = {}
        async for items, _ in api.pages(
            f"{path}/merge-fields", "merge_fields", [("exclude_fields", "_links")]
        ):
            for item in items:
                found = self.merge_field(item)
                if found is not None:
                    merge_fields[found.tag] = found
        row = 0
        first = True
        async for members, total in api.pages(
            f"{path}/members", "members", [("exclude_fields", MEMBER_EXCLUDES)]
        ):
            if first:
                first = False
                self.totals[audience.id] = total
                if sum(self.totals.values()) > MAX_EXPORT_ROWS:
                    raise PullFailed(
                        TOO_MANY.format(count=sum(self.totals.values()), limit=MAX_EXPORT_ROWS)
                    )
            for member in members:
                row += 1
                self.member(member, row, audience, merge_fields)
            self.done += len(members)
            self.report()
            if self.done > MAX_EXPORT_ROWS:  # a total_items that keeps growing
                raise PullFailed(TOO_MANY.format(count=self.done, limit=MAX_EXPORT_ROWS))

    def merge_field(self, item: dict[str, Any]) -> _MergeField | None:
        tag, name, kind = item.get("tag"), item.get("name"), item.get("type")
        if not isinstance(tag, str) or not tag.strip():
            return None
        tag = tag.strip()
        label = name.strip() if isinstance(name, str) and name.strip() else tag
        options = _object(item.get("options"))
        date_format = options.get("date_format")
        merge_field = _MergeField(
            tag=tag,
            name=label,
            type=kind if isinstance(kind, str) else "text",
            date_format=date_format if isinstance(date_format, str) else "",
            key=None,
        )
        if tag.upper() not in NAME_TAGS:
            merge_field.key = self.declare(tag, label, merge_field.type)
        return merge_field

    def declare(self, tag: str, label: str, kind: str) -> str | None:
        key = tag.lower()[:64]
        if not REGISTRY_KEY.match(key):
            self.warn(BAD_KEY.format(label=label, key=key))
            return None
        known = self.fields.get(key)
        if known is None:
            known = self.fields[key] = _Field(key, label[:80])
        known.kinds.add(kind)
        return key

    def member(
        self,
        member: dict[str, Any],
        row: int,
        audience: Audience,
        merge_fields: dict[str, _MergeField],
    ) -> None:
        source = f"audience {audience.name}"
        email = member.get("email_address")
        email = email.strip() if isinstance(email, str) else ""
        if not email:
            self.skipped.append({"row": row, "source": source, "reason": NO_EMAIL})
            return
        status = member.get("status")
        status = status.strip().lower() if isinstance(status, str) else ""
        if status not in STATES:
            why = SKIPPED.get(status) or UNKNOWN_STATUS.format(status=status)
            self.skipped.append({"row": row, "source": source, "email": email, "reason": why})
            return
        state, suppress = STATES[status]
        names: dict[str, str | None] = {"first": None, "last": None}
        fields: dict[str, str] = {}
        values = member.get("merge_fields")
        for tag, value in (values if isinstance(values, dict) else {}).items():
            if not isinstance(tag, str):
                continue
            spec = merge_fields.get(tag)
            if spec is None:  # a tag the merge-fields listing did not name
                spec = _MergeField(tag, tag, "text", "", None)
                if tag.upper() not in NAME_TAGS:
                    spec.key = self.declare(tag, tag, "text")
                merge_fields[tag] = spec
            raw = self.value(spec, value)
            if raw is None:
                continue
            if tag.upper() in NAME_TAGS:
                names[NAME_TAGS[tag.upper()]] = raw
            elif spec.key is not None:
                fields[spec.key] = raw
                self.fields[spec.key].values.append(raw)
        self.add(
            PlatformContact(
                row=row,
                source=source,
                email=email,
                first_name=names["first"],
                last_name=names["last"],
                status=state,
                suppress=suppress,
                fields=fields,
                tags=_tags(member.get("tags")),
                lists=[(audience.name, "confirmed")] if state == "subscribed" else [],
                consent_at=self.time(member, ("timestamp_opt", "timestamp_signup"), row, source),
                consent_ip=_first_text(member, ("ip_opt", "ip_signup")),
                language=reduce_language(_text(member.get("language")) or ""),
            )
        )

    def value(self, spec: _MergeField, value: Any) -> str | None:
        """A merge field's value as the text a contact keeps, None when empty."""
        if value is None or (isinstance(value, dict | list) and not value):
            return None
        if isinstance(value, dict):  # an address
            parts = [_text(value.get(part)) for part in ADDRESS_PARTS]
            return ", ".join(p for p in parts if p) or None
        if isinstance(value, list):
            self.warn(ODD_VALUE.format(label=spec.name))
            return None
        raw = json_scalar(value).strip()
        if not raw:
            return None
        if spec.type in DATE_TYPES:
            return _iso_date(raw, spec.date_format)
        return raw

    def time(
        self, member: dict[str, Any], names: tuple[str, ...], row: int, source: str
    ) -> datetime | None:
        for name in names:
            raw = _text(member.get(name))
            if not raw:
                continue
            try:
                return parse_time(raw)
            except ValueError:
                self.bad_times += 1
                if not self.bad_example:
                    self.bad_example = f"{source} member {row}, {name} {raw!r}"
        return None

    def add(self, contact: PlatformContact) -> None:
        key = contact.email.lower()
        earlier = self.contacts.get(key)
        if earlier is None:
            self.contacts[key] = contact
            return
        self.merged += 1
        combined = merge(earlier, contact)
        statuses = {earlier.status, contact.status}
        if statuses == {"subscribed", "archived"}:
            combined.status = "subscribed"  # archived here is no opt-out there
        elif "subscribed" in statuses and combined.suppress is not None:
            self.overruled.add(key)
        self.contacts[key] = combined

    def specs(self) -> list[FieldSpec]:
        specs: list[FieldSpec] = []
        for known in self.fields.values():
            if not known.values:
                continue
            specs.append(FieldSpec(known.key, known.label, self.type_of(known)))
        return specs

    def type_of(self, known: _Field) -> str:
        if len(known.kinds) != 1:
            return "text"
        (kind,) = known.kinds
        if kind in NUMBER_TYPES:
            numbers = [parse_number(v) for v in known.values]
            if all(n is not None for n in numbers) and infer_type(numbers) == "number":
                return "number"
            self.warn(NOT_TYPED.format(kind="number", label=known.label, what="numbers"))
        elif kind in DATE_TYPES:
            if infer_type(known.values) == "date":
                return "date"
            self.warn(NOT_TYPED.format(kind="date", label=known.label, what="dates"))
        return "text"

    def result(self) -> PlatformExport:
        fields = self.specs()
        warnings = list(self.warnings)
        if self.merged:
            warnings.append(MERGED.format(count=self.merged))
        if self.overruled:
            warnings.append(OVERRULED.format(count=len(self.overruled)))
        if self.bad_times:
            warnings.append(BAD_TIMES.format(count=self.bad_times, example=self.bad_example))
        return PlatformExport(
            platform="mailchimp",
            contacts=list(self.contacts.values()),
            fields=fields,
            lists=self.lists,
            skipped=self.skipped,
            warnings=warnings,
        )


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return json_scalar(value)
    return None


def _first_text(member: dict[str, Any], names: tuple[str, ...]) -> str | None:
    return next((t for t in (_text(member.get(n)) for n in names) if t), None)


def _tags(raw: Any) -> list[str]:
    names: list[str] = []
    seen: set[str] = set()
    for tag in raw if isinstance(raw, list) else []:
        name = _text(tag.get("name")) if isinstance(tag, dict) else _text(tag)
        if name and name.casefold() not in seen:
            seen.add(name.casefold())
            names.append(name)
    return names


def _iso_date(raw: str, date_format: str) -> str:
    """`YYYY-MM-DD` for a date written as the field's format says (`MM/DD/YYYY` unless the
    format starts with DD); anything else as it is (the field then stays text)."""
    if _YMD.match(raw):
        return raw
    match = _SLASHED.match(raw)
    if match is None:
        return raw
    first, second, year = (int(g) for g in match.groups())
    day_first = date_format.strip().upper().startswith("DD")
    day, month = (first, second) if day_first else (second, first)
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return raw
