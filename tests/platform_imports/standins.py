"""Local stand-ins for the APIs the platform imports pull from: Mailchimp's Marketing API v3 and
listmonk's API, each an aiohttp server on 127.0.0.1 (a random port) that pages, authenticates
and refuses as the real one does, and records every request.

Shapes (see the docstrings of `pull_mailchimp` and `pull_listmonk` for the sources):

- Mailchimp, under `/3.0`: `GET /lists`, `/lists/{id}`, `/lists/{id}/merge-fields`,
  `/lists/{id}/members`, paged by `count` (default 10, at most 1000) and `offset` (default 0)
  with `total_items`; `exclude_fields` honoured (`_links`, `members.stats`, ...). HTTP Basic,
  any user name, the key as the password; a missing or wrong key is 401 with Mailchimp's
  problem document (`application/problem+json`: type, title, status, detail, instance), an
  unknown audience 404 the same way.
- listmonk, under `/api`: `GET /lists` and `GET /subscribers`, paged by `page` (from 1) and
  `per_page` (default 20, `all` for everything; no upper bound for API users) with
  `{data: {results, total, per_page, page}}`; subscribers by id, `order` asc or desc (desc by
  default); `list_id` repeated filters through the memberships as listmonk's SQL does, so a
  subscriber on two of the lists comes twice and `total` counts both. HTTP Basic
  `username:token`; a wrong pair is 403 `{"message": "invalid API credentials"}`.

`queue` holds answers (status, headers, body) given before the normal ones, one per request:
for transient failures and redirects.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

PROBLEM_TYPE = "https://mailchimp.com/developer/marketing/docs/errors/"
KEY_INVALID = (
    "API Key Invalid",
    "Your API key may be invalid, or you've attempted to access the wrong datacenter.",
)
KEY_MISSING = ("API Key Missing", "Your request did not include an API key.")
NOT_FOUND = ("Resource Not Found", "The requested resource could not be found.")


@dataclass
class Seen:
    path: str
    query: list[tuple[str, str]]
    auth: tuple[str, str] | None  # the Basic pair sent, if any

    def param(self, name: str) -> str | None:
        return next((v for k, v in self.query if k == name), None)

    def params(self, name: str) -> list[str]:
        return [v for k, v in self.query if k == name]


def _basic(request: web.Request) -> tuple[str, str] | None:
    header = request.headers.get("Authorization", "")
    if not header.startswith("Basic "):
        return None
    try:
        user, _, password = base64.b64decode(header[6:]).decode().partition(":")
    except ValueError:
        return None
    return user, password


class _Server:
    queue: list[tuple[int, dict[str, str], bytes]]
    requests: list[Seen]

    def __init__(self) -> None:
        self.queue = []
        self.requests = []
        self.runner: web.AppRunner | None = None
        self.port = 0

    def routes(self, app: web.Application) -> None:
        raise NotImplementedError

    @web.middleware
    async def record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests.append(Seen(request.path, list(request.query.items()), _basic(request)))
        if self.queue:
            status, headers, body = self.queue.pop(0)
            return web.Response(status=status, headers=headers, body=body)
        return await handler(request)

    def paths(self) -> list[str]:
        return [seen.path for seen in self.requests]

    async def __aenter__(self) -> Any:
        app = web.Application(middlewares=[self.record])
        self.routes(app)
        self.runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = self.runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


def _json(data: Any, status: int = 200, content_type: str = "application/json") -> web.Response:
    return web.Response(
        status=status, body=json.dumps(data).encode(), headers={"Content-Type": content_type}
    )


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


# --- Mailchimp ----------------------------------------------------------------------------


@dataclass
class Audience:
    id: str
    name: str
    merge_fields: list[dict[str, Any]]  # as GET /lists/{id}/merge-fields lists them
    members: list[dict[str, Any]] = field(default_factory=list)  # as GET .../members does

    def summary(self, base: str) -> dict[str, Any]:
        count = {s: sum(1 for m in self.members if m["status"] == s) for s in _STATUSES}
        return {
            "id": self.id,
            "web_id": int(hashlib.md5(self.id.encode()).hexdigest()[:6], 16),
            "name": self.name,
            "contact": {"company": "Example Shop", "address1": "1 Main St", "city": "Leeds"},
            "permission_reminder": "You signed up on our website.",
            "use_archive_bar": True,
            "campaign_defaults": {"from_name": "Shop", "from_email": "news@shop.example"},
            "date_created": "2019-03-01T09:00:00+00:00",
            "list_rating": 3,
            "email_type_option": False,
            "double_optin": True,
            "stats": {
                "member_count": count["subscribed"],
                "unsubscribe_count": count["unsubscribed"],
                "cleaned_count": count["cleaned"],
                "member_count_since_send": 0,
                "campaign_count": 12,
                "merge_field_count": len(self.merge_fields),
                "avg_sub_rate": 0,
                "open_rate": 41.2,
            },
            "_links": [{"rel": "self", "href": f"{base}/lists/{self.id}", "method": "GET"}],
        }


_STATUSES = ("subscribed", "unsubscribed", "cleaned", "pending", "transactional", "archived")


def merge_field(merge_id: int, tag: str, name: str, kind: str, **options: Any) -> dict[str, Any]:
    """A merge field as Mailchimp lists it."""
    return {
        "merge_id": merge_id,
        "tag": tag,
        "name": name,
        "type": kind,
        "required": False,
        "default_value": "",
        "public": True,
        "display_order": merge_id + 1,
        "options": options,
        "help_text": "",
        "list_id": "",
        "_links": [{"rel": "self", "href": f"/merge-fields/{merge_id}", "method": "GET"}],
    }


def member(
    list_id: str,
    email: str,
    status: str,
    merge_fields: dict[str, Any],
    *,
    tags: list[str] | tuple[str, ...] = (),
    ip_signup: str = "",
    timestamp_signup: str = "",
    ip_opt: str = "",
    timestamp_opt: str = "",
    language: str = "",
) -> dict[str, Any]:
    """A member as GET /lists/{id}/members answers it (every field the API writes)."""
    digest = hashlib.md5(email.lower().encode()).hexdigest()
    return {
        "id": digest,
        "email_address": email,
        "unique_email_id": digest[:10],
        "contact_id": digest[10:26],
        "full_name": " ".join(
            str(merge_fields.get(t) or "") for t in ("FNAME", "LNAME") if merge_fields.get(t)
        ),
        "web_id": int(digest[:7], 16),
        "email_type": "html",
        "status": status,
        "consents_to_one_to_one_messaging": True,
        "merge_fields": merge_fields,
        "interests": {"9143cf3bd1": False},
        "stats": {"avg_open_rate": 0.5, "avg_click_rate": 0.1},
        "ip_signup": ip_signup,
        "timestamp_signup": timestamp_signup,
        "ip_opt": ip_opt,
        "timestamp_opt": timestamp_opt,
        "member_rating": 2,
        "last_changed": "2024-06-01T12:00:00+00:00",
        "language": language,
        "vip": False,
        "email_client": "",
        "location": {"latitude": 0, "longitude": 0, "gmtoff": 0, "dstoff": 0},
        "source": "Hosted Signup Form",
        "tags_count": len(tags),
        "tags": [{"id": 1000 + sum(map(ord, t)), "name": t} for t in tags],
        "list_id": list_id,
        "_links": [
            {"rel": "self", "href": f"/lists/{list_id}/members/{digest}", "method": "GET"},
            {"rel": "parent", "href": f"/lists/{list_id}/members", "method": "GET"},
        ],
    }


def _exclude(data: dict[str, Any], excludes: str | None, collection: str) -> dict[str, Any]:
    if not excludes:
        return data
    names = [n.strip() for n in excludes.split(",") if n.strip()]
    top = {n for n in names if "." not in n}
    inner = {n.split(".", 1)[1] for n in names if n.startswith(f"{collection}.")}
    out = {k: v for k, v in data.items() if k not in top}
    if collection in out and inner:
        out[collection] = [
            {k: v for k, v in item.items() if k not in inner} for item in out[collection]
        ]
    return out


class MailchimpStandIn(_Server):
    """`async with MailchimpStandIn(key, audiences) as api:`; `api.base_url` is the
    MAILROOM_MAILCHIMP_API_URL for it."""

    def __init__(self, key: str, audiences: list[Audience]) -> None:
        super().__init__()
        self.key = key
        self.audiences = {a.id: a for a in audiences}

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/3.0"

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/3.0/lists", self.lists)
        app.router.add_get("/3.0/lists/{list_id}", self.one_list)
        app.router.add_get("/3.0/lists/{list_id}/merge-fields", self.merge_fields)
        app.router.add_get("/3.0/lists/{list_id}/members", self.members)

    def problem(self, status: int, title: str, detail: str) -> web.Response:
        body = {
            "type": PROBLEM_TYPE,
            "title": title,
            "status": status,
            "detail": detail,
            "instance": str(uuid.uuid4()),
        }
        return _json(body, status, "application/problem+json; charset=utf-8")

    def refused(self, request: web.Request) -> web.Response | None:
        pair = _basic(request)
        if pair is None:
            return self.problem(401, *KEY_MISSING)
        if pair[1] != self.key:
            return self.problem(401, *KEY_INVALID)
        return None

    def page(
        self, request: web.Request, items: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], int]:
        count = min(max(_int(request.query.get("count"), 10), 1), 1000)
        offset = max(_int(request.query.get("offset"), 0), 0)
        return items[offset : offset + count], len(items)

    def audience(self, request: web.Request) -> Audience | web.Response:
        found = self.audiences.get(request.match_info["list_id"])
        return found if found is not None else self.problem(404, *NOT_FOUND)

    async def lists(self, request: web.Request) -> web.Response:
        if (refusal := self.refused(request)) is not None:
            return refusal
        summaries = [a.summary(self.base_url) for a in self.audiences.values()]
        items, total = self.page(request, summaries)
        data = {
            "lists": items,
            "total_items": total,
            "constraints": {"may_create": True, "max_instances": 5, "current_total_instances": 2},
            "_links": [{"rel": "self", "href": "/lists", "method": "GET"}],
        }
        return _json(_exclude(data, request.query.get("exclude_fields"), "lists"))

    async def one_list(self, request: web.Request) -> web.Response:
        if (refusal := self.refused(request)) is not None:
            return refusal
        found = self.audience(request)
        if isinstance(found, web.Response):
            return found
        data = found.summary(self.base_url)
        return _json(_exclude(data, request.query.get("exclude_fields"), ""))

    async def merge_fields(self, request: web.Request) -> web.Response:
        if (refusal := self.refused(request)) is not None:
            return refusal
        found = self.audience(request)
        if isinstance(found, web.Response):
            return found
        fields = [{**f, "list_id": found.id} for f in found.merge_fields]
        items, total = self.page(request, fields)
        data = {"merge_fields": items, "list_id": found.id, "total_items": total, "_links": []}
        return _json(_exclude(data, request.query.get("exclude_fields"), "merge_fields"))

    async def members(self, request: web.Request) -> web.Response:
        if (refusal := self.refused(request)) is not None:
            return refusal
        found = self.audience(request)
        if isinstance(found, web.Response):
            return found
        items, total = self.page(request, found.members)
        data = {"members": items, "list_id": found.id, "total_items": total, "_links": []}
        return _json(_exclude(data, request.query.get("exclude_fields"), "members"))


# --- listmonk -----------------------------------------------------------------------------


def listmonk_list(list_id: int, name: str, optin: str = "single") -> dict[str, Any]:
    """A list as GET /api/lists answers it."""
    return {
        "id": list_id,
        "created_at": "2023-01-10T09:00:00.123456Z",
        "updated_at": "2023-01-10T09:00:00.123456Z",
        "uuid": str(uuid.UUID(int=list_id)),
        "name": name,
        "type": "public",
        "optin": optin,
        "status": "active",
        "tags": [],
        "description": "",
        "subscriber_count": 0,
        "subscriber_statuses": {},
    }


@dataclass
class Subscriber:
    id: int
    email: str
    name: str
    status: str  # enabled | disabled | blocklisted
    attribs: dict[str, Any]
    # list id -> (subscription_status, subscription_meta)
    subscriptions: dict[int, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    created_at: str = "2023-02-01T10:00:00.5+01:00"


class ListmonkStandIn(_Server):
    """`async with ListmonkStandIn(username, token, lists, subscribers) as api:`; `api.url` is
    the address to give as api.url."""

    def __init__(
        self,
        username: str,
        token: str,
        lists: list[dict[str, Any]],
        subscribers: list[Subscriber],
    ) -> None:
        super().__init__()
        self.username = username
        self.token = token
        self.lists = lists
        self.subscribers = sorted(subscribers, key=lambda s: s.id)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/api/lists", self.get_lists)
        app.router.add_get("/api/subscribers", self.get_subscribers)

    def refused(self, request: web.Request) -> web.Response | None:
        if "Authorization" not in request.headers:
            return _json({"message": "invalid session"}, 403)
        if _basic(request) != (self.username, self.token):
            return _json({"message": "invalid API credentials"}, 403)
        return None

    def page(self, request: web.Request, rows: list[Any]) -> tuple[list[Any], dict[str, int]]:
        raw = request.query.get("per_page")
        page = max(_int(request.query.get("page"), 1), 1)
        if raw == "all":
            return rows, {"total": len(rows), "per_page": 0, "page": 1}
        per_page = _int(raw, 20)
        if per_page < 1:
            per_page = 20
        offset = (page - 1) * per_page
        return rows[offset : offset + per_page], {
            "total": len(rows),
            "per_page": per_page,
            "page": page,
        }

    async def get_lists(self, request: web.Request) -> web.Response:
        if (refusal := self.refused(request)) is not None:
            return refusal
        results, meta = self.page(request, self.lists)
        return _json({"data": {"results": results, "query": "", **meta}})

    async def get_subscribers(self, request: web.Request) -> web.Response:
        if (refusal := self.refused(request)) is not None:
            return refusal
        list_ids = {_int(v, 0) for v in request.query.getall("list_id", [])}
        wanted = request.query.get("subscription_status", "")
        ordered = self.subscribers
        if request.query.get("order", "").lower() != "asc":  # listmonk's default: id desc
            ordered = list(reversed(ordered))
        rows: list[Subscriber] = []
        for subscriber in ordered:
            if not list_ids:
                rows.append(subscriber)
                continue
            # One row per matching membership: listmonk's LEFT JOIN on subscriber_lists.
            for list_id, (state, _) in subscriber.subscriptions.items():
                if list_id in list_ids and (not wanted or state == wanted):
                    rows.append(subscriber)
        results, meta = self.page(request, rows)
        data = {"results": [self.render(s) for s in results], "query": "", "search": "", **meta}
        return _json({"data": data})

    def render(self, subscriber: Subscriber) -> dict[str, Any]:
        by_id = {item["id"]: item for item in self.lists}
        lists = []
        for list_id, (state, meta) in subscriber.subscriptions.items():
            details = {k: v for k, v in by_id[list_id].items() if not k.startswith("subscriber_")}
            lists.append(
                {
                    "subscription_status": state,
                    "subscription_created_at": "2023-02-01T10:00:00.5+01:00",
                    "subscription_updated_at": "2023-02-03T18:30:00.25+01:00",
                    "subscription_meta": meta,
                    **details,
                }
            )
        return {
            "id": subscriber.id,
            "created_at": subscriber.created_at,
            "updated_at": "2024-01-01T00:00:00Z",
            "uuid": str(uuid.UUID(int=10**6 + subscriber.id)),
            "email": subscriber.email,
            "name": subscriber.name,
            "attribs": subscriber.attribs,
            "status": subscriber.status,
            "lists": lists,
        }


# --- scenarios (shared by the pull tests and the import job's tests) ----------------------

MAILCHIMP_KEY = "8f14e45fceea167a5a36dedd4bea2543-us21"
NEWSLETTER = "a1b2c3d4e5"  # 2,500 members: three pages of 1,000
CUSTOMERS = "f6g7h8i9j0"  # 40 members, four of them also in the newsletter
FIRST = ("Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken")
LAST = ("Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson")
# The newsletter's member i has the status NEWSLETTER_STATUS.get(i % 50, "subscribed").
NEWSLETTER_STATUS = {
    1: "unsubscribed",
    2: "cleaned",
    3: "pending",
    4: "transactional",
    5: "archived",
}
ADDRESS = {
    "addr1": "1 Main St",
    "addr2": "",
    "city": "Springfield",
    "state": "IL",
    "zip": "62701",
    "country": "US",
}


def reader(i: int) -> str:
    return f"reader{i:04d}@inbox.mailroom.dev"


def client(j: int) -> str:
    return f"client{j:02d}@shop-clients.net"


def newsletter_member(i: int) -> dict[str, Any]:
    opted = i % 2 == 0
    language = {3: "fr", 4: "pt_BR"}.get(i % 10, "en")
    return member(
        NEWSLETTER,
        reader(i),
        NEWSLETTER_STATUS.get(i % 50, "subscribed"),
        {
            "FNAME": FIRST[i % 8],
            "LNAME": LAST[i % 8],
            "ADDRESS": dict(ADDRESS) if i % 10 == 0 else "",
            "PHONE": f"+44 20 7946 {i:04d}" if i % 2 == 0 else "",
            "BIRTHDAY": "03/15" if i % 4 == 0 else "",
            "COMPANY": "Acme Ltd" if i % 3 == 0 else "",
            "SCORE": i % 7 if i % 5 == 0 else "",
            "JOINED": f"2023-04-{i % 28 + 1:02d}" if i % 6 == 0 else "",
            "WEBSITE": f"https://acme.example/~{i}" if i % 9 == 0 else "",
            "PLAN": ("Gold" if i % 2 else "Silver") if i % 11 == 0 else "",
            "SIZE": "M" if i % 13 == 0 else "",
            "AVATAR": f"https://cdn.example/a/{i}.png" if i % 17 == 0 else "",
            "POSTCODE": "02134" if i % 19 == 0 else "",
        },
        tags=[t for t, on in (("Customer", i % 3 == 0), ("VIP", i % 4 == 0)) if on],
        ip_signup="198.51.100.7",
        timestamp_signup="2021-01-02T03:04:05+00:00",
        ip_opt="203.0.113.9" if opted else "",
        timestamp_opt="2021-01-03T08:00:00+00:00" if opted else "",
        language=language,
    )


def customers_members() -> list[dict[str, Any]]:
    def one(email: str, status: str, first: str, **merge: Any) -> dict[str, Any]:
        fields = {"FNAME": first, "LNAME": "Client", "COMPANY": "", "RENEWAL": "", "NOTES": ""}
        return member(
            CUSTOMERS,
            email,
            status,
            {**fields, **merge},
            ip_signup="192.0.2.44",
            timestamp_signup="2022-07-08T09:10:11+00:00",
        )

    members = [
        one(reader(5), "subscribed", "Barbara"),  # archived in the newsletter
        one(reader(7), "unsubscribed", "Ken"),  # subscribed in the newsletter
        one(reader(8), "archived", "Ada"),  # subscribed in the newsletter
        {**one(reader(9), "subscribed", "Grace"), "tags": [{"id": 7, "name": "Wholesale"}]},
    ]
    for j in range(36):
        status = {34: "cleaned", 35: "pending"}.get(j, "subscribed")
        members.append(
            one(
                client(j),
                status,
                FIRST[j % 8],
                COMPANY="Globex" if j % 2 else "",
                RENEWAL=f"12/{j % 28 + 1:02d}/2024" if j % 3 == 0 else "",
                NOTES="prefers post" if j == 0 else "",
            )
        )
    return members


def mailchimp_audiences() -> list[Audience]:
    newsletter = Audience(
        NEWSLETTER,
        "Newsletter",
        [
            merge_field(1, "FNAME", "First Name", "text", size=25),
            merge_field(2, "LNAME", "Last Name", "text", size=25),
            merge_field(3, "ADDRESS", "Address", "address", default_country=164),
            merge_field(4, "PHONE", "Phone Number", "phone", phone_format="International"),
            merge_field(5, "BIRTHDAY", "Birthday", "birthday", date_format="MM/DD"),
            merge_field(6, "COMPANY", "Company", "text", size=25),
            merge_field(7, "SCORE", "Score", "number"),
            merge_field(8, "JOINED", "Joined", "date", date_format="DD/MM/YYYY"),
            merge_field(9, "WEBSITE", "Website", "url"),
            merge_field(10, "PLAN", "Plan", "dropdown", choices=["Gold", "Silver"]),
            merge_field(11, "SIZE", "Shirt size", "radio", choices=["S", "M", "L"]),
            merge_field(12, "AVATAR", "Avatar", "imageurl"),
            merge_field(13, "POSTCODE", "Post code", "zip"),
            merge_field(14, "UNUSED", "Never filled", "text"),
        ],
        [newsletter_member(i) for i in range(2500)],
    )
    customers = Audience(
        CUSTOMERS,
        "Customers",
        [
            merge_field(1, "FNAME", "First Name", "text"),
            merge_field(2, "LNAME", "Last Name", "text"),
            merge_field(3, "COMPANY", "Organisation", "text"),
            merge_field(4, "RENEWAL", "Renewal date", "date", date_format="MM/DD/YYYY"),
            merge_field(5, "NOTES", "Notes", "text"),
        ],
        customers_members(),
    )
    return [newsletter, customers]


LISTMONK_USER = "importer"
LISTMONK_TOKEN = "Zm9vYmFyYmF6cXV4"
# 1 double opt-in, 2 and 3 single opt-in, 4 named as 1 is (ignoring case).
LISTMONK_LISTS = (
    (1, "Newsletter", "double"),
    (2, "Product updates", "single"),
    (3, "Beta testers", "single"),
    (4, "newsletter", "single"),
)
NAMES = ("Ada Lovelace", "Ada King Lovelace", "Cher", "  Grace   Hopper ", "")


def subscriber(i: int) -> Subscriber:
    """Subscriber i of 1..1200: every 40th (from 1) blocklisted, every 40th (from 2) disabled.
    List 1: i % 3 == 0 confirmed (opt-in IP recorded), i % 3 == 1 unconfirmed. List 2:
    i % 5 == 0 unsubscribed, else even i unconfirmed. List 3: i % 10 == 0 confirmed. Blocklisted
    subscribers' subscriptions are all unsubscribed, as listmonk makes them."""
    status = {1: "blocklisted", 2: "disabled"}.get(i % 40, "enabled")
    subscriptions: dict[int, tuple[str, dict[str, Any]]] = {}
    if i % 3 == 0:
        subscriptions[1] = ("confirmed", {"optin_ip": f"203.0.113.{i % 250}"})
    elif i % 3 == 1:
        subscriptions[1] = ("unconfirmed", {})
    if i % 5 == 0:
        subscriptions[2] = ("unsubscribed", {})
    elif i % 2 == 0:
        subscriptions[2] = ("unconfirmed", {})
    if i % 10 == 0:
        subscriptions[3] = ("confirmed", {})
    if i == 77:
        subscriptions[4] = ("confirmed", {})
    if status == "blocklisted":
        subscriptions = {k: ("unsubscribed", meta) for k, (_, meta) in subscriptions.items()}
    attribs: dict[str, Any] = {"city": "Bengaluru" if i % 2 else "Leeds", "projects": i % 9}
    if i % 4 == 0:
        attribs["good"] = i % 8 == 0
    if i % 6 == 0:
        attribs["since"] = f"2021-03-{i % 28 + 1:02d}"
    if i % 7 == 0:
        attribs["zip"] = "02134"
    if i % 50 == 0:
        attribs["prefs"] = {"digest": True}
        attribs["bad key"] = "x"
        attribs["none"] = None
    return Subscriber(
        id=i,
        email=f"sub{i:04d}@lists.mailroom.dev",
        name=NAMES[i % 5],
        status=status,
        attribs=attribs,
        subscriptions=subscriptions,
    )


def listmonk_install() -> tuple[list[dict[str, Any]], list[Subscriber]]:
    lists = [listmonk_list(i, name, optin) for i, name, optin in LISTMONK_LISTS]
    return lists, [subscriber(i) for i in range(1, 1201)]
