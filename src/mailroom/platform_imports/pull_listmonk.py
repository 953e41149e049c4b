"""Pulling a listmonk installation's subscribers through its API into a `PlatformExport`.

The API, from listmonk's documentation and code (github.com/knadh/listmonk:
docs/docs/content/apis/subscribers.md and lists.md, cmd/subscribers.go `QuerySubscribers`,
queries/subscribers.sql `query-subscribers`, internal/auth/auth.go, knadh/paginator):

- An API user authenticates with HTTP Basic `username:token`; wrong credentials are 403
  `{"message": "invalid API credentials"}` (every refusal is `{"message": ...}`).
- `GET /api/lists?page=N&per_page=M` and `GET /api/subscribers?page=N&per_page=M` answer
  `{data: {results: [...], total, per_page, page}}`; `per_page` has no upper bound for API
  users (`all` is allowed), pages count from 1, a page past the end is empty. Subscribers are
  `{id, uuid, email, name, attribs, status: enabled|disabled|blocklisted, lists: [{id, name,
  optin, subscription_status: unconfirmed|confirmed|unsubscribed, subscription_created_at,
  subscription_updated_at, subscription_meta: {optin_ip?}}], created_at}`. `order=asc` sorts
  by id, so subscribers added during the pull land after the pages already read.
- `list_id` (repeated) keeps the subscribers of those lists. listmonk joins the memberships to
  filter, so a subscriber on two of the lists comes twice (and `total` counts both): repeated
  ids are read once.

Mapping (as the subscribers export's reader, `formats_listmonk`, where the two meet):
- `enabled` -> subscribed; `blocklisted` -> unsubscribed, suppressed "unsubscribed";
  `disabled` -> archived; another status: the subscriber is skipped with the reason.
- A subscription `confirmed` -> a confirmed membership, `unconfirmed` -> an unconfirmed one,
  `unsubscribed` -> none. With `list_ids`, only those lists' subscribers are pulled and only
  their memberships of those lists are kept; the lists are exactly those (an id listmonk does not
  show this API user fails the pull). Without, every list listmonk shows becomes a list. A
  subscriber whose every subscription is unsubscribed stays subscribed, on no list (a warning
  counts them).
- `name` splits at its first space into first and last name. Each attribute becomes a field
  keyed by its key as is (a key that is not letters, digits and _ is left out with a warning),
  its type inferred from the JSON values (numbers, booleans, `YYYY-MM-DD` strings), objects and
  lists left out with a warning, null no value.
- Consent: the opt-in IP listmonk records on confirming a double opt-in (`optin_ip`) with that
  subscription's last change as its time; otherwise the subscriber's creation time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any

from mailroom.core import urlguard
from mailroom.platform_imports.formats import (
    BAD_TIMES,
    MAX_EXPORT_ROWS,
    NO_EMAIL,
    Collector,
    parse_time,
    split_name,
)
from mailroom.platform_imports.formats_listmonk import STATES, UNKNOWN_STATUS, attribute_fields
from mailroom.platform_imports.pull_http import (
    Answer,
    HttpClient,
    PullFailed,
    PullRefused,
    check_base,
    shorten,
)
from mailroom.platform_imports.records import PlatformContact, PlatformExport

Progress = Callable[[int, int], None]

PAGE = 1000
SOURCE = "subscribers"
MEMBERSHIPS = {"confirmed": "confirmed", "unconfirmed": "unconfirmed"}

NOT_ALLOWED = "api.url is not allowed: {reason}"
NO_URL = "api.url is required"
ODD_ANSWER = "listmonk: an unexpected answer from {path} (is api.url listmonk's address?)"
UNKNOWN_LISTS = "listmonk: no list with the id {ids} (or this API user may not read it)"
TOO_MANY = "listmonk: {count:,} subscribers is more than one import takes ({limit:,})"
SAME_NAME = 'Two listmonk lists are named "{name}": list {id} is imported as "{renamed}"'
LEFT_EVERY_LIST = (
    "{count} enabled subscriber(s) had unsubscribed from every list they were on: imported "
    "subscribed, on no list"
)


def listmonk_base_url(url: str) -> str:
    """listmonk's address as given, without a trailing `/` or `/api` (PullRefused when empty)."""
    if not isinstance(url, str) or not url.strip():
        raise PullRefused(NO_URL)
    base = url.strip().rstrip("/")
    if base.lower().endswith("/api"):
        base = base[:-4]
    return base


async def check_listmonk_url(url: str, allowed: list[urlguard.Network]) -> str:
    """The base URL to pull from; PullRefused (400) `api.url is not allowed: <reason>` when the
    URL guard refuses it. Cheap (no request), so the API can call it before starting a job."""
    base = listmonk_base_url(url)
    try:
        await check_base(base, allowed)
    except urlguard.UnsafeUrl as exc:
        raise PullRefused(NOT_ALLOWED.format(reason=exc)) from None
    return base


async def pull_listmonk(
    url: str,
    username: str,
    token: str,
    list_ids: list[int] | None,
    *,
    allowed: list[urlguard.Network],
    progress: Progress | None = None,
) -> PlatformExport:
    """Every subscriber (of the lists `list_ids`, all when None or empty) as a PlatformExport.

    `allowed`: networks exempt from the URL guard (the webhook allow-list setting).
    `progress(done, total)`: called after each page (total as listmonk counts it).

    Raises PullRefused (400) when the guard refuses `url`, PullFailed for everything else:
    listmonk's refusals in its own words ("listmonk: invalid API credentials"), unknown list ids,
    the transport's failures.
    """
    base = await check_listmonk_url(url, allowed)
    chosen = list(dict.fromkeys(list_ids or []))
    async with HttpClient("listmonk", allowed, (username or "", token or "")) as http:
        api = _Api(http, base)
        names, renamed = await api.lists()
        if chosen:
            unknown = [str(i) for i in chosen if i not in names]
            if unknown:
                raise PullFailed(UNKNOWN_LISTS.format(ids=", ".join(unknown)))
            names = {i: names[i] for i in chosen}
        pull = _Pull(names, set(chosen), progress)
        for list_id, warning in renamed.items():
            if list_id in names:
                pull.out.warn(warning)
        params = [("order", "asc"), *(("list_id", str(i)) for i in chosen)]
        async for subscribers, total in api.pages("/api/subscribers", params):
            pull.page(subscribers, total)
        return pull.result()


class _Api:
    def __init__(self, http: HttpClient, base: str) -> None:
        self.http = http
        self.base = base

    async def pages(
        self, path: str, params: list[tuple[str, str]]
    ) -> AsyncIterator[tuple[list[dict[str, Any]], int]]:
        page, seen = 1, 0
        while True:
            answer = await self.http.get(
                self.base + path, [("page", str(page)), ("per_page", str(PAGE)), *params]
            )
            if not 200 <= answer.status < 300:
                raise PullFailed(reason(answer))
            results, total = _page(answer, path)
            yield results, total
            seen += len(results)
            if not results or seen >= total:
                return
            page += 1

    async def lists(self) -> tuple[dict[int, str], dict[int, str]]:
        """Every list this API user sees, id -> a name no other list has (in listmonk's order),
        and the warnings for the lists renamed so, by id."""
        names: dict[int, str] = {}
        renamed: dict[int, str] = {}
        taken: set[str] = set()
        async for results, _ in self.pages("/api/lists", []):
            for item in results:
                list_id, name = item.get("id"), item.get("name")
                if not isinstance(list_id, int) or isinstance(list_id, bool):
                    continue
                name = name.strip() if isinstance(name, str) and name.strip() else ""
                name = name or f"listmonk list {list_id}"
                if list_id in names:
                    continue
                if name.casefold() in taken:
                    unique = f"{name} ({list_id})"
                    renamed[list_id] = SAME_NAME.format(name=name, id=list_id, renamed=unique)
                    name = unique
                taken.add(name.casefold())
                names[list_id] = name
        return names, renamed


def _page(answer: Answer, path: str) -> tuple[list[dict[str, Any]], int]:
    data = answer.data.get("data") if isinstance(answer.data, dict) else None
    if isinstance(data, list):  # `minimal` lists with none to show answer `{"data": []}`
        return [d for d in data if isinstance(d, dict)], len(data)
    if not isinstance(data, dict):
        raise PullFailed(ODD_ANSWER.format(path=path))
    results, total = data.get("results"), data.get("total")
    if results is None:
        results = []
    if not isinstance(results, list) or not isinstance(total, int):
        raise PullFailed(ODD_ANSWER.format(path=path))
    return [r for r in results if isinstance(r, dict)], total


def reason(answer: Answer) -> str:
    """listmonk's refusal in its own words: "listmonk: <message>"."""
    data = answer.data
    if isinstance(data, dict) and isinstance(data.get("message"), str) and data["message"].strip():
        return f"listmonk: {shorten(data['message'])}"
    return f"listmonk: HTTP {answer.status}"


class _Pull:
    def __init__(self, names: dict[int, str], chosen: set[int], progress: Progress | None) -> None:
        self.names = names
        self.chosen = chosen
        self.progress = progress
        self.out = Collector("listmonk")
        for name in names.values():
            self.out.see_list(name)
        self.ids: set[int] = set()
        self.done = 0
        self.row = 0
        self.left_every_list = 0
        self.bad_times = 0
        self.bad_example = ""

    def page(self, subscribers: list[dict[str, Any]], total: int) -> None:
        if total > MAX_EXPORT_ROWS:
            raise PullFailed(TOO_MANY.format(count=total, limit=MAX_EXPORT_ROWS))
        for subscriber in subscribers:
            key = subscriber.get("id")
            if isinstance(key, int):
                if key in self.ids:  # the list filter's join repeats a subscriber
                    continue
                self.ids.add(key)
            self.row += 1
            if self.row > MAX_EXPORT_ROWS:
                raise PullFailed(TOO_MANY.format(count=self.row, limit=MAX_EXPORT_ROWS))
            self.subscriber(subscriber)
        self.done += len(subscribers)
        if self.progress is not None:
            self.progress(self.done, max(total, self.done))

    def subscriber(self, subscriber: dict[str, Any]) -> None:
        out, row = self.out, self.row
        email = _text(subscriber.get("email")) or ""
        if not email:
            out.skipped.append({"row": row, "source": SOURCE, "reason": NO_EMAIL})
            return
        status = (_text(subscriber.get("status")) or "").lower()
        state = STATES.get(status) if status else None
        if state is None:
            why = UNKNOWN_STATUS.format(status=status)
            out.skipped.append({"row": row, "source": SOURCE, "email": email, "reason": why})
            return
        lists, consent_at, consent_ip = self.memberships(subscriber, row)
        if consent_at is None:
            consent_at = self.time(subscriber.get("created_at"), row, "created_at")
        first, last = split_name(_text(subscriber.get("name")) or "")
        out.add(
            PlatformContact(
                row=row,
                source=SOURCE,
                email=email,
                first_name=first,
                last_name=last,
                status=state[0],
                suppress=state[1],
                fields=self.fields(subscriber.get("attribs")),
                tags=[],
                lists=lists,
                consent_at=consent_at,
                consent_ip=consent_ip,
            )
        )

    def memberships(
        self, subscriber: dict[str, Any], row: int
    ) -> tuple[list[tuple[str, str]], datetime | None, str | None]:
        lists: list[tuple[str, str]] = []
        consent_at: datetime | None = None
        consent_ip: str | None = None
        entries = subscriber.get("lists")
        left = 0
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue
            list_id = entry.get("id")
            if self.chosen and list_id not in self.chosen:
                continue
            state = MEMBERSHIPS.get(_text(entry.get("subscription_status")) or "")
            if state is None:
                left += 1
                continue
            name = self.names.get(list_id) if isinstance(list_id, int) else None
            name = name or _text(entry.get("name"))
            if name is None:
                continue
            self.out.see_list(name)
            lists.append((name, state))
            meta = entry.get("subscription_meta")
            ip = _text(meta.get("optin_ip")) if isinstance(meta, dict) else None
            if state == "confirmed" and ip and consent_ip is None:
                consent_ip = ip
                consent_at = self.time(
                    entry.get("subscription_updated_at") or entry.get("subscription_created_at"),
                    row,
                    "subscription_updated_at",
                )
        status = _text(subscriber.get("status"))
        if left and not lists and status == "enabled":
            self.left_every_list += 1
        return lists, consent_at, consent_ip

    def fields(self, attribs: Any) -> dict[str, str]:
        return attribute_fields(self.out, attribs if isinstance(attribs, dict) else {})

    def time(self, value: Any, row: int, name: str) -> datetime | None:
        raw = _text(value)
        if not raw:
            return None
        try:
            return parse_time(raw)
        except ValueError:
            self.bad_times += 1
            if not self.bad_example:
                self.bad_example = f"{SOURCE} row {row}, {name} {raw!r}"
            return None

    def result(self) -> PlatformExport:
        export = self.out.result()
        if self.left_every_list:
            export.warnings.append(LEFT_EVERY_LIST.format(count=self.left_every_list))
        if self.bad_times:
            export.warnings.append(BAD_TIMES.format(count=self.bad_times, example=self.bad_example))
        return export


def _text(value: Any) -> str | None:
    return (value.strip() or None) if isinstance(value, str) else None
